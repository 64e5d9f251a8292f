"""Rerank impact on SciFact through both embedding paths (issue 3 measurement).

Usage (from the repo root, with the venv):

    .venv/bin/python benchmarks/rerank_scifact.py --scifact "$SCIFACT" --vault /tmp/scifact-vault --out /tmp/rerank-scifact

``--scifact`` is a BEIR SciFact folder (docs/benchmarks.md says where to get it).

It imports SciFact into the vault folder if it is empty, provisions it, starts the
Ollama-compatible loopback test server (real MiniLM embeddings, tests/ollama_server.py),
then evaluates BM25 alone and BM25 + MiniLM rerank through the Ollama client and through
the sentence-transformers backend, at bm25_top 20 and 100, and times the added rerank
latency for 20 candidates with a cold and a warm embedding cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scifact", type=Path, required=True, help="a BEIR SciFact folder (see docs/benchmarks.md)")
    ap.add_argument("--vault", default="/tmp/scifact-vault")
    ap.add_argument("--out", default="/tmp/rerank-scifact")
    ap.add_argument("--cache", default=None, help="VAULTEVAL_CACHE for this run (default: a new temp dir)")
    args = ap.parse_args()

    from ollama_server import FakeOllama, load_minilm, normalized_embed_fn

    from vaulteval.querysets.beir import import_beir
    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.pipeline.provision import provision
    from vaulteval.pipeline.retrieve import Retriever
    from vaulteval.vault.vault import Vault

    vault_dir = Path(args.vault)
    if not (vault_dir / "wiki").is_dir():
        import_beir(args.scifact, vault_dir, split="test")
    vault = Vault(vault_dir)
    provision(vault, analyzer="english")
    retriever = Retriever(vault)
    qs = load_queryset(vault_dir / "querysets" / "scifact-test.yaml", vault=vault)
    cache = Path(args.cache or tempfile.mkdtemp(prefix="vaulteval-rerank-cache-"))

    model = load_minilm()
    server = FakeOllama(normalized_embed_fn(model), models=("all-minilm:latest",))
    server.start()
    os.environ["OLLAMA_HOST"] = server.url
    try:
        strategies = []
        for top in (20, 100):
            strategies += [
                f"bm25:analyzer=english,bm25_top={top},top={top},name=bm25-top{top}",
                f"rerank:ollama,model=all-minilm,analyzer=english,bm25_top={top},top={top},timeout=120,name=ollama-minilm-top{top}",
                f"rerank:st,analyzer=english,bm25_top={top},top={top},name=st-minilm-top{top}",
            ]
        t0 = time.perf_counter()
        result = evaluate(vault, qs, strategies, measures=["nDCG@10", "Success@10", "R@100", "RR"],
                          cache_dir=cache)
        elapsed = time.perf_counter() - t0
        out = Path(args.out)
        result.save(out)
        metrics = result.metrics if hasattr(result, "metrics") else None
        print(metrics.to_string() if metrics is not None else "")
        print(f"evaluation took {elapsed:.1f} s; run directory {out}")
        latency = _latency(retriever, qs, server)
        print(json.dumps(latency, indent=2))
        (out / "rerank-latency.json").write_text(json.dumps(latency, indent=2))
    finally:
        server.stop()
    return 0


def _latency(retriever, qs, server) -> dict:
    """Added latency of reranking 20 candidates: cold cache (fresh file) vs warm (same queries again)."""
    from vaulteval.pipeline.stages.embedder import EmbedderSettings
    from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank

    queries = [q.text for q in qs.queries[:20]]
    out = {}
    for backend, reranker in (("ollama", EmbeddingRerank.of(EmbedderSettings("ollama", "all-minilm", timeout=120))),
                            ("sentence-transformers", EmbeddingRerank.of(EmbedderSettings("sentence-transformers")))):
        cache_file = Path(tempfile.mkdtemp(prefix="vaulteval-lat-")) / "embeddings.sqlite"
        runs = {}
        for label in ("cold", "warm"):
            added = []
            for q in queries:
                base = retriever.retrieve(q, top=20, bm25_top=20, explain=True)
                rr = retriever.retrieve(q, top=20, bm25_top=20, rerank=reranker, explain=True, embed_cache=cache_file)
                assert rr.label.reranked, rr.strategy
                added.append(rr.explain["timings_ms"]["rerank"])
                del base
            runs[label] = {"median_ms": round(statistics.median(added), 1),
                           "p95_ms": round(sorted(added)[int(0.95 * (len(added) - 1))], 1)}
        out[backend] = runs
    return out


if __name__ == "__main__":
    raise SystemExit(main())
