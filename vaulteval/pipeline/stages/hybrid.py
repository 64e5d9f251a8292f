"""The hybrid first stage: the BM25 and the dense top ``depth`` fused into one list.

Usage: ``Hybrid(fusion="cc", alpha=0.3)``; written ``hybrid:rrf,k=60`` or ``hybrid:cc,alpha=0.3``.

- ``rrf``: reciprocal rank fusion, ``sum(w / (k + rank))`` over the two lists;
- ``cc``: convex combination ``alpha * dense + (1 - alpha) * bm25`` of min-max
  normalised scores over each list (absent from a list counts 0).

Ties keep BM25 order, then dense order. A query that cannot be embedded gets
the BM25 list alone (the caller labels the fallback).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.pipeline.stages.bm25 import FIELD_PARAMS, bm25_scores, field_weights, matched, ranked_bm25
from vaulteval.pipeline.stages.dense import dense_top, kept_bm25
from vaulteval.pipeline.stages.params import Param
from vaulteval.pipeline.stages.base import FirstStage, Ranking, ms_since, register


@register
class Hybrid(FirstStage):
    name = "hybrid"
    summary = "the BM25 and dense lists fused by reciprocal rank (rrf) or a convex combination (cc)"
    needs = frozenset({"bm25", "dense"})
    semantic = embeds_query = True
    ranked_by = "fused"
    tune_grid = ("rrf", "rrf,w_dense=0.5", "cc,alpha=0.3", "cc,alpha=0.5", "cc,alpha=0.7")
    option = Param("fusion", str, "rrf", "how the two lists are fused", choices=("rrf", "cc"))
    params = (
        Param("k", float, 60.0, "`rrf`: the rank constant, score = Σ w / (k + rank)", low=0.0, low_open=True),
        Param("w_bm25", float, 1.0, "`rrf`: weight of the BM25 list", low=0.0),
        Param("w_dense", float, 1.0, "`rrf`: weight of the dense list", low=0.0),
        Param("alpha", float, 0.5, "`cc`: score = alpha · dense + (1 − alpha) · BM25, each min-max normalised",
              low=0.0, high=1.0),
    ) + FIELD_PARAMS

    @property
    def fields(self) -> tuple[tuple[str, float], ...]:
        return field_weights(self.values)

    @property
    def label(self) -> str:
        return f"hybrid:{self['fusion']}" + ("+fields" if self.fields else "")

    def without_fields(self) -> "Hybrid":
        return self.replace(**{p.name: p.default for p in FIELD_PARAMS})

    def run(self, retriever: Any, query: str, depth: int, cache_path: Any) -> Ranking:
        started = time.perf_counter()
        scores = bm25_scores(retriever, retriever.index().analyze(query), self.fields)
        bm25_list = ranked_bm25(scores, depth)
        bm25_ms = ms_since(started)
        dense_list, info = dense_top(retriever, query, self.embed, depth, cache_path)
        info["timings_ms"]["bm25"] = bm25_ms
        if dense_list is None:
            return kept_bm25(self.name, bm25_list, info)
        started = time.perf_counter()
        fused = rrf(bm25_list, dense_list, self) if self["fusion"] == "rrf" else cc(bm25_list, dense_list, self)
        dense_of = dict(dense_list)
        out = [(d, matched(scores[d], dense=dense_of.get(d), fused=s)) for d, s in fused]
        info["timings_ms"]["fusion"] = ms_since(started)
        return Ranking(out, "fused", embedding_model=info["embedding_model"], timings_ms=info["timings_ms"])


def rrf(bm25_list: list, dense_list: list, stage: Hybrid) -> list[tuple[int, float]]:
    fused: dict[int, float] = {}
    for weight, ranked in ((stage["w_bm25"], bm25_list), (stage["w_dense"], dense_list)):
        for rank, (doc, _) in enumerate(ranked, 1):
            fused[doc] = fused.get(doc, 0.0) + weight / (stage["k"] + rank)
    return _ordered(fused, bm25_list, dense_list)


def cc(bm25_list: list, dense_list: list, stage: Hybrid) -> list[tuple[int, float]]:
    import numpy as np

    fused: dict[int, float] = {}
    for weight, ranked in ((1.0 - stage["alpha"], bm25_list), (stage["alpha"], dense_list)):
        if not ranked:
            continue
        vals = np.array([v for _, v in ranked], dtype=np.float64)
        lo, span = float(vals.min()), float(vals.max() - vals.min())
        for (doc, _), v in zip(ranked, vals.tolist()):
            norm = (v - lo) / span if span > 0 else 1.0
            fused[doc] = fused.get(doc, 0.0) + weight * norm
    return _ordered(fused, bm25_list, dense_list)


def _ordered(fused: dict[int, float], bm25_list: list, dense_list: list) -> list[tuple[int, float]]:
    """Fused score descending; ties in BM25 order, then dense order (deterministic)."""
    first_seen: dict[int, int] = {}
    for doc, _ in [*bm25_list, *dense_list]:
        first_seen.setdefault(doc, len(first_seen))
    return sorted(((d, round(s, 9)) for d, s in fused.items()), key=lambda item: (-item[1], first_seen[item[0]]))
