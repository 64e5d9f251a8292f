"""Added latency of a rerank over 20 candidates in a warm process, with stored embeddings (issue 12).

Usage (from the repo root, with the venv):

    .venv/bin/python benchmarks/rerank_latency.py [--vault V] [--queries 30]

Without ``--vault`` the bundled sample vault is copied to a temporary folder and
provisioned with ``--embed`` (MiniLM through sentence-transformers, offline).
The process is warmed with one reranked query; then each query is retrieved
without a rerank and with one (``--bm25-top 20``), every query text new to the
embedding cache so the query itself is embedded each time, and the difference
is the added latency. Target: p50 <= 30 ms. Prints a small table; it is a
benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ["espresso", "backup", "router", "sourdough", "kyoto", "tea", "server", "budget", "plants", "travel",
         "network", "descale", "restic", "ups", "coffee", "bread", "media", "cloud", "power", "garden"]


def main() -> int:
    from vaulteval import Vault
    from vaulteval.cli.sample import copy_sample
    from vaulteval.pipeline.provision import provision
    from vaulteval.pipeline.retrieve import Retriever
    from vaulteval.pipeline.stages.embedder import EmbedderSettings
    from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", help="a vault provisioned with --embed (default: a copy of the sample)")
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    settings = EmbedderSettings("sentence-transformers")
    reranker = EmbeddingRerank.of(settings)
    tmp = None
    if args.vault:
        vault = Vault(args.vault)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="vaulteval-bench-")
        vault = Vault(copy_sample(Path(tmp.name) / "vault"))
        provision(vault, embed=settings)
    retriever = Retriever(vault)
    retriever.retrieve("warm up the model", top=5, bm25_top=20, rerank=reranker, embed_cache=None)
    plain, reranked, embedded_docs = [], [], 0
    for i in range(args.queries):
        query = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]} note {i}"
        t0 = time.perf_counter()
        retriever.retrieve(query, top=5, bm25_top=20, rerank=None)
        t1 = time.perf_counter()
        res = retriever.retrieve(query, top=5, bm25_top=20, rerank=reranker, explain=True, embed_cache=None)
        t2 = time.perf_counter()
        assert res.label.reranked, res.strategy
        plain.append(t1 - t0)
        reranked.append(t2 - t1)
        embedded_docs += res.explain["post_rerank_count"]
    added = sorted((b - a) * 1000 for a, b in zip(plain, reranked))
    p95 = added[min(len(added) - 1, int(round(0.95 * (len(added) - 1))))]
    print(f"vault: {vault.root} ({retriever.index().n_docs} chunks, store rows: {len(retriever.store())})")
    print(f"{args.queries} queries, {embedded_docs / args.queries:.1f} candidates reranked per query, "
          "document vectors from the store, query embedded each time, no cache file")
    print("| measure | ms |\n|---|---|")
    print(f"| retrieve without rerank, p50 | {statistics.median(plain) * 1000:.1f} |")
    print(f"| retrieve with rerank, p50 | {statistics.median(reranked) * 1000:.1f} |")
    print(f"| added by the rerank, p50 / p95 | {statistics.median(added):.1f} / {p95:.1f} |")
    print(f"target p50 <= 30 ms: {'met' if statistics.median(added) <= 30 else 'NOT met'}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
