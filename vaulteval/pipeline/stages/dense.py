"""The dense first stage: exact cosine between the query and the vault's stored chunk vectors.

Usage: ``Dense().run(retriever, query, depth, cache_path)``. The query is embedded with the
store's backend and model (``provision --embed`` made the store); when it cannot be (backend
down, model changed, a script the model does not read), ``dense_top`` says why and the caller
falls back to BM25 order.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.pipeline.stages.bm25 import bm25_scores, matched, ranked_bm25
from vaulteval.pipeline.stages.base import FirstStage, Ranking, ms_since, register

MODEL_CHANGED = "model-changed"


def dense_top(retriever: Any, query: str, embed: Any, depth: int, cache_path: Any) -> tuple[list | None, dict]:
    """The dense top ``depth`` as [(doc, cosine)], or None with ``fallback`` (the reason) in the info.

    The info holds ``embedding_model`` and ``timings_ms["dense"]`` (query embedding and cosine search).
    """
    from vaulteval.embeddings.rerank import embed_query
    from vaulteval.pipeline.stages.embedder import EmbedderSettings

    started = time.perf_counter()
    store = retriever.store()
    config = (embed or EmbedderSettings()).for_store(store).config()
    # A Retriever kept for many queries keeps the cache file open too (no open, WAL rewrite and fsync per query).
    qv = embed_query(query, config, cache_path, onnx_dir=retriever.onnx_dir(), keep_cache=retriever.warm)
    info: dict[str, Any] = {"embedding_model": qv.model, "timings_ms": {}}
    if qv.vector is None:
        info["timings_ms"]["dense"] = ms_since(started)
        return None, {**info, "fallback": qv.fallback_reason}
    if (qv.source, qv.model_key, qv.scheme) != (store.backend, store.model_key, store.scheme):
        info["timings_ms"]["dense"] = ms_since(started)
        return None, {**info, "fallback": MODEL_CHANGED}
    rows, cos = store.top(qv.vector, depth)
    docs = retriever.store_docs()
    out = []
    for row, c in zip(rows.tolist(), cos.tolist()):
        doc = docs[row]
        if doc >= 0:
            out.append((doc, round(float(c), 6)))
    info["timings_ms"]["dense"] = ms_since(started)
    return out, info


def kept_bm25(stage: str, ranked: list, info: dict) -> Ranking:
    """BM25 order for a stage whose query could not be embedded (``info`` from ``dense_top`` says why)."""
    return Ranking([(d, {"bm25": v}) for d, v in ranked], "bm25", fallbacks=((stage, info["fallback"]),),
                   embedding_model=info["embedding_model"], timings_ms=info["timings_ms"])


def bm25_fallback(retriever: Any, query: str, fields: tuple, depth: int, info: dict, stage: str) -> Ranking:
    """``kept_bm25`` after scoring the query with BM25 (and ``fields``)."""
    started = time.perf_counter()
    ranked = ranked_bm25(bm25_scores(retriever, retriever.index().analyze(query), fields), depth)
    info["timings_ms"]["bm25"] = ms_since(started)
    return kept_bm25(stage, ranked, info)


@register
class Dense(FirstStage):
    name = "dense"
    summary = "exact cosine between the query and the stored chunk vectors (provision --embed)"
    needs = frozenset({"dense"})
    semantic = embeds_query = True
    ranked_by = "dense"
    tune_grid = ("",)

    def run(self, retriever: Any, query: str, depth: int, cache_path: Any) -> Ranking:
        dense, info = dense_top(retriever, query, self.embed, depth, cache_path)
        if dense is None:
            return bm25_fallback(retriever, query, (), depth, info, self.name)
        started = time.perf_counter()
        scores = bm25_scores(retriever, retriever.index().analyze(query), ())
        info["timings_ms"]["bm25"] = ms_since(started)
        return Ranking([(d, matched(scores[d], dense=c)) for d, c in dense], "dense",
                       embedding_model=info["embedding_model"], timings_ms=info["timings_ms"])
