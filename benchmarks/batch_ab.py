"""Batch BM25 against one query at a time, and against another checkout's batch, in one process.

Usage::

    .venv/bin/vaulteval import beir "$SCIFACT" --out /tmp/scifact --split test
    .venv/bin/vaulteval provision --vault /tmp/scifact
    git archive <commit> | (mkdir -p /tmp/before && tar -x -C /tmp/before)          # optional
    .venv/bin/python benchmarks/batch_ab.py --vault /tmp/scifact \\
        --queryset /tmp/scifact/querysets/scifact-test.yaml --other /tmp/before --rounds 15

Every scorer ranks every query to depth ``--k``; the script fails (exit 1)
unless all return bit-identical lists, then prints the best round of
interleaved rounds as queries per second. ``--other`` runs that checkout's
``vaulteval/workbench/batch.py`` on this checkout's open index (the index
format must be the same).
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from vaulteval import Vault, load_queryset  # noqa: E402
from vaulteval.index import bm25  # noqa: E402
from vaulteval.pipeline.retrieve import Retriever  # noqa: E402
from vaulteval.workbench import batch  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vault", required=True, help="a provisioned vault")
    ap.add_argument("--queryset", required=True)
    ap.add_argument("--other", help="an exported older checkout whose batch scorer to compare")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--k", type=int, default=100)
    args = ap.parse_args()
    vault = Vault(args.vault)
    index = Retriever(vault).index()
    queries = [index.analyze(q.text) for q in load_queryset(args.queryset, vault).queries]
    norm = index.norm()
    scorers = {
        "batch (this checkout)": lambda: batch.batch_top_k(index, queries, args.k),
        "one query at a time (numpy)": lambda: [
            bm25.top_k(bm25.score_terms(index.n_docs, norm, index.posting_lists(q), index.k1), args.k)
            for q in queries],
    }
    if args.other:
        other = types.ModuleType("other_batch")
        exec((Path(args.other) / "vaulteval" / "workbench" / "batch.py").read_text(encoding="utf-8"), other.__dict__)
        scorers["batch (--other)"] = lambda: other.batch_top_k(index, queries, args.k)
    reference = scorers["batch (this checkout)"]()
    for name, run in scorers.items():
        if not all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(reference, run())):
            print(f"{name} ranks differently", file=sys.stderr)
            return 1
    best = dict.fromkeys(scorers, float("inf"))
    for _ in range(args.rounds):
        for name, run in scorers.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    print(f"{len(queries)} queries, top {args.k}, best of {args.rounds} interleaved rounds, all bit-identical")
    print("| scorer | queries/s |\n|---|---|")
    for name, seconds in best.items():
        print(f"| {name} | {len(queries) / seconds:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
