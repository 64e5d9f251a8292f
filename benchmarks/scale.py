"""The tldr corpus as a vault at 1x and at Nx (the pages copied N times under distinct folders).

Usage::

    .venv/bin/python benchmarks/scale.py --tldr "$TLDR" --scale 10   # ~384k pages; prints a 1x / 10x table
    .venv/bin/python benchmarks/scale.py --tldr "$TLDR" --scale 10 --json   # the numbers as JSON

For each size: a fresh vault in a temporary folder (the copies are hard links
when the file system allows, else real copies; the notes are only read), a full
provision, the index size, ``vaulteval retrieve --no-rerank`` in a fresh
process for 20 queries (p50, p95, peak RSS) and 1,000 queries in one process.
Progress goes to stderr, one line per phase, with tqdm bars on a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vaulteval import Vault  # noqa: E402
from vaulteval.pipeline.bench import cli_latency, in_process, pick_queries  # noqa: E402
from vaulteval.pipeline.provision import provision  # noqa: E402

_T0 = time.perf_counter()


def say(message: str) -> None:
    sys.stderr.write(f"[{time.perf_counter() - _T0:7.1f} s] {message}\n")
    sys.stderr.flush()


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def make_vault(pages: Path, dest: Path, copies: int) -> Path:
    """``dest/wiki`` holds the tldr ``pages*`` folders once (copies=1) or under copy-00 ... copy-NN."""
    wiki = dest / "wiki"
    # As `cp -r`: a symlinked folder (pages.en -> pages) stays a symlink, which vaulteval does not follow.
    folders = sorted(p for p in pages.iterdir() if p.name.startswith("pages"))
    for k in range(copies):
        base = wiki if copies == 1 else wiki / f"copy-{k:02d}"
        for folder in folders:
            if folder.is_symlink():
                base.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(folder), base / folder.name)
            else:
                shutil.copytree(folder, base / folder.name, symlinks=True, copy_function=_link_or_copy)
    return dest


def measure(root: Path, label: str, n_cli: int, n_in_process: int) -> dict:
    vault = Vault(root)
    n_pages = sum(1 for _ in vault.iter_pages())
    say(f"{label}: provisioning {n_pages:,} pages")
    t0 = time.perf_counter()
    report = provision(vault)
    out = {"scale": label, "pages": n_pages, "chunks": report["index"]["docs"],
           "provision_s": round(time.perf_counter() - t0, 1), "prefix_s": report["seconds"]["prefix"],
           "index_build_s": report["seconds"]["index"], "index_bytes": report["index"]["size_bytes"]}
    say(f"{label}: provisioned in {out['provision_s']} s ({out['prefix_s']} prefix + {out['index_build_s']} index); "
        f"{n_cli} CLI queries")
    return measure_queries(root, label, n_cli, n_in_process, out)


def measure_queries(root: Path, label: str, n_cli: int, n_in_process: int, out: dict | None = None) -> dict:
    if out is None:  # --measure-only: the provision figures of the earlier run
        out = json.loads((root / "provision.json").read_text())
        out["index_bytes"] = (root / ".vault-meta" / "bm25" / "index.vti").stat().st_size
    queries = pick_queries(Vault(root), max(n_cli, n_in_process))
    say(f"{label}: {n_cli} CLI queries")
    out.update(cli_latency(root, queries[:n_cli]))
    say(f"{label}: CLI p50 {out['cli_p50_s']} s; {n_in_process} in-process queries")
    out.update(in_process(root, queries[:n_in_process]))
    return out


def table(rows: list[dict]) -> str:
    one, big = rows[0], rows[-1]
    lines = [f"| measure | {' | '.join(r['scale'] for r in rows)} |", "|---|" + "---|" * len(rows)]

    def row(name: str, fmt) -> None:
        lines.append(f"| {name} | {' | '.join(fmt(r) for r in rows)} |")

    row("pages / chunks", lambda r: f"{r['pages']:,} / {r['chunks']:,}")
    row("full provision (prefix + index)", lambda r: f"{r['provision_s']:.0f} s ({r['prefix_s']:.0f} + {r['index_build_s']:.0f})")
    row("index size", lambda r: f"{r['index_bytes'] / 1e6:.0f} MB")
    row("CLI `retrieve --no-rerank` p50 / p95", lambda r: f"{r['cli_p50_s']:.3f} s / {r['cli_p95_s']:.3f} s")
    row("CLI peak RSS", lambda r: f"{r['cli_peak_rss_mb']:.0f} MB")
    row(f"{one['in_process_queries']:,} in-process queries", lambda r: f"{r['in_process_total_s']:.2f} s")
    if len(rows) > 1:
        lines.append(f"\nCLI p50 at {big['scale']} / 1x: {big['cli_p50_s'] / one['cli_p50_s']:.2f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--queries", type=int, default=20, help="CLI queries per size")
    ap.add_argument("--in-process", type=int, default=1000)
    ap.add_argument("--work-dir", help="where the vaults go (default: a temporary folder, removed)")
    ap.add_argument("--tldr", required=True, help="an archive of the tldr pages*/ folders (see docs/benchmarks.md)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--measure-only", action="store_true",
                    help="reuse the provisioned vaults in --work-dir; only time the queries")
    args = ap.parse_args()
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="vaulteval-scale-"))
    try:
        src = work / "tldr"
        if not src.is_dir() and not args.measure_only:
            say(f"extracting {args.tldr}")
            src.mkdir(parents=True)
            with tarfile.open(args.tldr) as tar:
                tar.extractall(src, filter="data")
        rows = []
        for copies in sorted({1, args.scale}):
            root = work / f"x{copies}"
            if args.measure_only:
                rows.append(measure_queries(root, f"{copies}x", args.queries, args.in_process))
                continue
            if root.exists():
                shutil.rmtree(root)
            say(f"{copies}x: copying the pages")
            make_vault(src, root, copies)
            rows.append(measure(root, f"{copies}x", args.queries, args.in_process))
            (root / "provision.json").write_text(json.dumps(rows[-1]))
        print(json.dumps(rows, indent=2) if args.json else table(rows))
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
