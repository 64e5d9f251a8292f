"""``vaulteval bench``: time provisioning and retrieval on a throwaway copy of a vault.

Usage: ``report = run_bench(Vault("tldr-vault"), queries=20, edits=10)``; ``print(report["table"])``

The vault itself is never touched: its notes are copied to a work folder, which
is provisioned, edited and queried there.
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import Retriever

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

SEED = 20261130

# The steps of ``vaulteval.cli.run`` (the console script's entry: the collector off for start-up, the
# process ended once a retrieve's output is flushed), with the process's own peak RSS (VmHWM) read just
# before the exit. A parent's rusage would count the memory of the forked benchmark process as well.
CLI_PROBE = (
    "import gc\n"
    "gc.disable()\n"
    "import sys\n"
    "from vaulteval.cli.main import finish, main\n"
    "rc = main(process=True)\n"
    "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
    "sys.stderr.write(f'vmhwm_kb={hwm[0]}\\n')\n"
    "finish(rc)\n"
)


def probe_peak_rss_kb(stderr: str) -> int:
    """The peak RSS a ``CLI_PROBE`` process wrote on its stderr."""
    return int(stderr.rsplit("vmhwm_kb=", 1)[1].split()[0])


def pick_queries(vault: "Vault", n: int) -> list[str]:
    """Queries made from random pages' titles and first words, so they have answers."""
    from vaulteval.chunks.chunking import decode_page, parse_page
    from vaulteval.vault.notefiles import read_note_file

    pages = list(vault.iter_pages())
    rng = random.Random(SEED)
    rng.shuffle(pages)
    out: list[str] = []
    for page in pages:
        try:
            raw = read_note_file(page.path)
        except OSError:  # a FIFO or unreadable note: provision skips it too
            continue
        parsed = parse_page(raw, page.rel)
        words = [w for w in decode_page(raw).split() if w.isalpha()][:6]
        text = " ".join([parsed.title, *words[2:5]]).strip()
        if text:
            out.append(text[:200])
        if len(out) == n:
            break
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


def cli_latency(root: Path, queries: list[str]) -> dict[str, Any]:
    """Usage: ``cli_latency(vault_root, ["query", ...])``: each query in a fresh ``vaulteval retrieve`` process."""
    latencies, peaks = [], []
    for q in queries:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CLI_PROBE, "retrieve", "--vault", str(root), q,
                               "--no-rerank"], capture_output=True)
        latencies.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise RuntimeError(f"retrieve failed during bench: {proc.stderr.decode(errors='replace').strip()}")
        peaks.append(probe_peak_rss_kb(proc.stderr.decode()))
    return {"cli_queries": len(queries), "cli_p50_s": round(statistics.median(latencies), 4),
            "cli_p95_s": round(_percentile(latencies, 0.95), 4), "cli_peak_rss_mb": round(max(peaks) / 1024, 1)}


def in_process(root: Path, queries: list[str], notes_dir: str | None = None) -> dict[str, Any]:
    """Usage: ``in_process(vault_root, queries)``: one Retriever, every query, integrity checks included."""
    from vaulteval.vault.vault import Vault

    fresh = Retriever(Vault(root, notes_dir=notes_dir))
    fresh.retrieve(queries[0], top=5)  # opens the index once
    t0 = time.perf_counter()
    for q in queries:
        fresh.retrieve(q, top=5)
    total = time.perf_counter() - t0
    return {"in_process_queries": len(queries), "in_process_total_s": round(total, 3),
            "in_process_mean_ms": round(1000 * total / max(1, len(queries)), 3)}


def run_bench(vault: "Vault", *, queries: int = 20, edits: int = 10, work_dir: str | None = None,
              in_process_queries: int = 1000) -> dict[str, Any]:
    from vaulteval.vault.vault import Vault

    tmp = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="vaulteval-bench-"))
    copy = tmp / "vault"
    if copy.exists():
        shutil.rmtree(copy)
    if vault.notes_rel:
        copy.mkdir(parents=True)
        shutil.copytree(vault.notes_dir, copy / vault.notes_rel, symlinks=True)
    else:  # notes at the root: everything but derived state and version control (keeps .obsidian/ settings)
        shutil.copytree(vault.root, copy, symlinks=True, ignore=shutil.ignore_patterns(".vault-meta", ".git"))
    bench_vault = Vault(copy, notes_dir=vault.notes_rel)
    pages = list(bench_vault.iter_pages())
    result: dict[str, Any] = {"vault": str(vault.root), "pages": len(pages), "work_dir": str(copy)}

    t0 = time.perf_counter()
    report = provision(bench_vault)
    result["provision_s"] = round(time.perf_counter() - t0, 3)
    result["prefix_s"] = report["seconds"]["prefix"]
    result["index_build_s"] = report["seconds"]["index"]
    result["chunks"] = report["index"]["docs"]
    result["index_bytes"] = report["index"]["size_bytes"]

    # Full index rebuild alone, from an empty index folder (chunks already there).
    from vaulteval.index.reader import index_path

    index_path(bench_vault.meta_dir).unlink()
    t0 = time.perf_counter()
    from vaulteval.pipeline.provision import build

    build(bench_vault)
    result["index_full_rebuild_s"] = round(time.perf_counter() - t0, 3)

    rng = random.Random(SEED)
    for page in rng.sample(pages, min(edits, len(pages))):
        with open(page.abspath, "ab") as fh:
            fh.write(b"\n\nEdited by vaulteval bench.\n")
    t0 = time.perf_counter()
    provision(bench_vault)
    result["edited_pages"] = min(edits, len(pages))
    result["incremental_provision_s"] = round(time.perf_counter() - t0, 3)

    qs = pick_queries(bench_vault, queries)
    result.update(cli_latency(copy, qs))

    result.update(in_process(copy, pick_queries(bench_vault, in_process_queries) or qs, notes_dir=vault.notes_rel))
    result["table"] = _table(result)
    if not work_dir:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def _table(r: dict[str, Any]) -> str:
    rows = [
        ("pages / chunks", f"{r['pages']} / {r['chunks']}"),
        ("full provision (prefix + index)", f"{r['provision_s']:.2f} s ({r['prefix_s']:.2f} + {r['index_build_s']:.2f})"),
        ("index build alone (all chunks; the field index keeps its rows)", f"{r['index_full_rebuild_s']:.2f} s"),
        (f"incremental provision, {r['edited_pages']} pages edited", f"{r['incremental_provision_s']:.2f} s"),
        (f"CLI retrieve --no-rerank, cold process, p50 / p95 ({r['cli_queries']} queries)",
         f"{r['cli_p50_s']:.3f} s / {r['cli_p95_s']:.3f} s"),
        ("CLI retrieve peak RSS", f"{r['cli_peak_rss_mb']:.0f} MB"),
        (f"in-process retrieve x{r['in_process_queries']} (integrity checks included)",
         f"{r['in_process_total_s']:.2f} s ({r['in_process_mean_ms']:.2f} ms/query)"),
        ("index size", f"{r['index_bytes'] / 1e6:.1f} MB"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"| {k.ljust(width)} | {v} |" for k, v in rows)
