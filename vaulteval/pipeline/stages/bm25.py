"""The BM25 first stage: the index's BM25 order, optionally adding field scores (title, aliases, ...).

Usage: ``Bm25()``, ``Bm25(w_title=2.0)``; ``bm25_scores(retriever, tokens, stage.fields)`` is the
score array other BM25-based stages start from too. Field scores come from the field index
``bm25/fields.vti`` (``vaulteval.index.fields``); without it the weights fall back to body-only BM25.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.pipeline.stages.params import Param
from vaulteval.pipeline.stages.base import FirstStage, Ranking, ms_since, register

FIELD_PARAMS = tuple(
    Param(f"w_{name}", float, 0.0, f"weight of the BM25 score of the note's {what}, added to the chunk's", low=0.0)
    for name, what in (("title", "title"), ("aliases", "aliases"), ("headings", "headings"), ("code", "code blocks"))
) + (Param("w_body", float, 1.0, "weight of the chunk's own BM25 score", low=0.0),)


def field_weights(values: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    """Normal form of the ``w_*`` values: () when they give body-only BM25 (weight 1, the rest 0)."""
    full = {p.name[2:]: float(values.get(p.name, p.default)) for p in FIELD_PARAMS}
    if full["body"] == 1.0 and all(w == 0 for name, w in full.items() if name != "body"):
        return ()
    return tuple(sorted(full.items()))


def bm25_scores(retriever: Any, tokens: list[str], fields: tuple[tuple[str, float], ...]) -> Any:
    """Every document's BM25 score for analyzed query tokens, plus weighted field scores."""
    index = retriever.index()
    scores = index.score_tokens(tokens)
    weighted = [(name, w) for name, w in fields if name != "body" and w]
    if not fields:
        return scores
    total = scores * dict(fields).get("body", 1.0)
    field_index = retriever.fields()
    if field_index is not None:
        for name, weight in weighted:
            total = total + weight * field_index.score_tokens(name, tokens)
    return total


def ranked_bm25(scores: Any, depth: int) -> list[tuple[int, float]]:
    """The ``depth`` best positive scores as [(doc, score)], ties by lower doc id."""
    from vaulteval.index import bm25  # numpy: only when a stage runs, not when a strategy is read

    docs, vals = bm25.top_k(scores, depth)
    return [(int(d), float(v)) for d, v in zip(docs, vals)]


def matched(bm25_score: float, **others: float | None) -> dict[str, float]:
    """A hit's components: ``bm25`` only when BM25 matched the chunk (a dense-only hit has none, not 0.0)."""
    out = {"bm25": float(bm25_score)} if bm25_score > 0 else {}
    out.update((name, value) for name, value in others.items() if value is not None)
    return out


@register
class Bm25(FirstStage):
    name = "bm25"
    summary = "the index's BM25 order; with w_* weights, plus the BM25 scores of the note's fields"
    needs = frozenset({"bm25"})
    params = FIELD_PARAMS
    tune_grid = ("", "w_title=1,w_aliases=1", "w_title=2,w_aliases=2,w_headings=1")

    @property
    def fields(self) -> tuple[tuple[str, float], ...]:
        return field_weights(self.values)

    @property
    def plain(self) -> bool:
        return not self.fields

    @property
    def label(self) -> str:
        return "bm25+fields" if self.fields else "bm25"

    def without_fields(self) -> "Bm25":
        return Bm25()

    def run(self, retriever: Any, query: str, depth: int, cache_path: Any) -> Ranking:
        started = time.perf_counter()
        tokens = retriever.index().analyze(query)
        ranked = ranked_bm25(bm25_scores(retriever, tokens, self.fields), depth)
        return Ranking([(d, {"bm25": v}) for d, v in ranked], "bm25", timings_ms={"bm25": ms_since(started)})
