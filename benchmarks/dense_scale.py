"""Dense first stage at vault scale: open the stored embeddings and take an exact cosine top-100 (issue 12).

Usage (from the repo root, with the venv):

    .venv/bin/python benchmarks/dense_scale.py [--rows 38365 383650] [--dim 384] [--queries 50]

For each row count, a store of random unit vectors is written in the real
format (``vaulteval.embeddings.store.write_store``, in a temporary vault), opened
the way ``retrieve --strategy dense`` opens it (size, header and checksum
verified, row keys parsed), and queried with ``EmbeddingStore.top``, in a
fresh child process. It prints the store size, the open time, the top-100
time (p50/p95) and the child's peak RSS. No model is involved: the query vectors are random too, so this is
the cost of the first stage itself, not of embedding the query. A benchmark,
not a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from vaulteval import Vault
    from vaulteval.embeddings.store import StoreRow, open_store, store_path, write_store
    from vaulteval.vault.metadir import MetaDir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[38_365, 383_650])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--measure", metavar="META_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(Path(args.measure), args.dim, args.queries)
    rng = np.random.default_rng(0)
    identity = {"backend": "sentence-transformers", "model": "bench", "model_key": "bench", "scheme": "plain"}
    print(f"| rows | dim | store MB | open ms | top-100 p50 / p95 ms | peak RSS MB |\n|---|---|---|---|---|---|")
    for n in args.rows:
        with tempfile.TemporaryDirectory(prefix="vaulteval-dense-") as tmp:
            (Path(tmp) / "wiki").mkdir()
            vault = Vault(tmp)
            rows = [StoreRow(f"syn-{i:012x}:0", f"{i:064x}", f"{i:064x}") for i in range(n)]
            with MetaDir.open(vault, create=True) as meta:
                write_store(meta, identity, rows, rng.standard_normal((n, args.dim), dtype=np.float32))
            del rows
            size = store_path(vault.meta_dir).stat().st_size
            # Three fresh processes, one open each (as a CLI retrieve opens it): median times, largest RSS.
            runs = [json.loads(subprocess.run([sys.executable, __file__, "--measure", str(vault.meta_dir), "--dim",
                                               str(args.dim), "--queries", str(args.queries)],
                                              capture_output=True, text=True, check=True).stdout) for _ in range(3)]
            m = {key: statistics.median(r[key] for r in runs) for key in ("open_ms", "top_p50_ms", "top_p95_ms")}
            m["rss_mb"] = max(r["rss_mb"] for r in runs)
            print(f"| {n:,} | {args.dim} | {size / 1e6:.1f} | {m['open_ms']:.0f} | "
                  f"{m['top_p50_ms']:.1f} / {m['top_p95_ms']:.1f} | {m['rss_mb']:.0f} |")
    return 0


def peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child
    started by this (large) benchmark process would report the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(meta_dir: Path, dim: int, n_queries: int) -> int:
    """In a fresh process: open the store once and time top-100 over random queries."""
    from vaulteval.embeddings.store import open_store

    t0 = time.perf_counter()
    store = open_store(meta_dir)
    opened = time.perf_counter() - t0
    queries = np.random.default_rng(1).standard_normal((n_queries, dim), dtype=np.float32)
    store.top(queries[0], 100)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        store.top(q, 100)
        times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"open_ms": opened * 1000, "top_p50_ms": statistics.median(times) * 1000,
                      "top_p95_ms": times[int(0.95 * (len(times) - 1))] * 1000,
                      "rss_mb": peak_rss_mb()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
