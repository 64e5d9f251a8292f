"""The chunk store on tldr: disk use, full and incremental provision, for one or more checkouts side by side.

Usage::

    python benchmarks/store.py                                   # this checkout
    python benchmarks/store.py --checkout /work/main --checkout . # before / after, same machine, same run
    python benchmarks/store.py --pages 5000                      # a smaller slice of tldr

Each checkout provisions its own copy of the tldr pages (``wiki/`` of a vault in a
temporary folder, without LLM prefixes), then 10 pages are edited and it
provisions again, then once more with nothing changed. Printed per checkout:
allocated (``du -s``) and apparent size of ``.vault-meta/vaulteval``, its file
count, and the three wall times with each process's CPU time (user + system) in
brackets. Load on the machine moves the times (CPU time much less than wall time);
compare checkouts within one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

DATA = Path("/work/shared/data/tldr-pages.tar.gz")


def _unpack(archive: Path, dest: Path, limit: int | None) -> int:
    wiki = dest / "wiki"
    wiki.mkdir(parents=True)
    n = 0
    with tarfile.open(archive) as tar:
        for member in tar:
            if not (member.isfile() and member.name.endswith(".md")) or "/pages" not in "/" + member.name:
                continue
            if limit is not None and n >= limit:
                break
            target = wiki / member.name.lstrip("./")
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            n += 1
    return n


def _provision(checkout: Path, vault: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one provision in a fresh process."""
    import resource

    env = dict(os.environ, PYTHONPATH=str(checkout))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # cwd: ``python -m`` puts the working folder before PYTHONPATH, so it must be the checkout measured.
    proc = subprocess.run([sys.executable, "-m", "vaulteval", "provision", "--vault", str(vault), "--no-embed"],
                          env=env, capture_output=True, text=True, cwd=checkout)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"provision failed in {checkout}: {proc.stderr.strip()[-400:]}")
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _sizes(folder: Path) -> tuple[int, int, int]:
    """(allocated bytes, apparent bytes, files) of a folder, as du -s and du -s --apparent-size count them."""
    allocated = apparent = files = 0
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            st = os.lstat(os.path.join(dirpath, name))
            allocated += st.st_blocks * 512
            apparent += st.st_size
            files += 1
    return allocated, apparent, files


def _edit(vault: Path, n: int) -> None:
    pages = sorted((vault / "wiki").rglob("*.md"))
    step = max(len(pages) // n, 1)
    for page in pages[::step][:n]:
        with open(page, "a", encoding="utf-8") as fh:
            fh.write("\n- Edited for the store benchmark: `quokkaberry --now`\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", action="append", type=Path, help="a checkout to measure (repeatable)")
    ap.add_argument("--pages", type=int, default=None, help="only the first N pages of tldr")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    checkouts = [c.resolve() for c in (args.checkout or [Path(__file__).resolve().parents[1]])]
    with tempfile.TemporaryDirectory(prefix="vaulteval-store-") as tmp:
        base = Path(tmp) / "pages"
        n = _unpack(args.data, base, args.pages)
        print(f"tldr: {n} pages; python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
        print(f"{'checkout':<28} {'allocated':>10} {'apparent':>10} {'files':>7} {'full s (CPU)':>16} "
              f"{'10 edits s (CPU)':>16} {'no-op s (CPU)':>16}")
        for checkout in checkouts:
            vault = Path(tmp) / f"v-{checkouts.index(checkout)}"
            shutil.copytree(base, vault)
            full = _provision(checkout, vault)
            allocated, apparent, files = _sizes(vault / ".vault-meta" / "vaulteval")
            _edit(vault, 10)
            incremental = _provision(checkout, vault)
            noop = _provision(checkout, vault)
            times = "".join(f" {f'{wall:.2f} ({cpu:.2f})':>16}" for wall, cpu in (full, incremental, noop))
            print(f"{str(checkout)[-28:]:<28} {allocated / 2**20:>8.1f}MB {apparent / 2**20:>8.1f}MB {files:>7}{times}")
            shutil.rmtree(vault)


if __name__ == "__main__":
    main()
