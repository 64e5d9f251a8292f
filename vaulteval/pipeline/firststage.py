"""First stage: run a strategy's first stage (``vaulteval.pipeline.stages``) with the fallbacks all stages share.

Usage::

    stage = parse_first_stage("hybrid:rrf,k=60,w_dense=0.5")
    ranking = first_stage(retriever, "query", stage, depth=100, cache_path=None)
    # ranking.docs: [(doc id, {"bm25": ..., "dense": ..., "fused": ...})], best first (components that exist)
    # ranking.ranked_by, .first_stage, .fallbacks, .embedding_model, .timings_ms: how it was ranked

The stages themselves (bm25, dense, hybrid:rrf|cc, bm25:prf=K, ...) are classes
in ``vaulteval.pipeline.stages``, registered by name. Here:

- field weights without a field index are dropped, never pretended: the
  ranking's ``fallbacks`` get ``("fields", "no-field-index")``;
- a stage that could not embed the query (backend down, model changed, a
  script the model does not read) has returned BM25 order with
  ``("dense" or "hybrid", reason)`` in its ``fallbacks``: ``first_stage`` is
  then ``bm25``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vaulteval.pipeline.stages.registry import FirstStage, Ranking, parse_first_stage  # noqa: F401  (the stage API)

if TYPE_CHECKING:
    from pathlib import Path

NO_FIELD_INDEX = "no-field-index"


def first_stage(retriever: Any, query: str, stage: FirstStage, depth: int, cache_path: Path | None) -> Ranking:
    """The stage's ``Ranking`` (at most ``depth`` documents), with the stage that ran, every fallback and the
    timings filled in."""
    fallbacks: list[tuple[str, str]] = []
    if stage.fields and retriever.fields() is None:
        # Never pretend: weights without a field index would silently be plain BM25.
        stage = stage.without_fields()
        fallbacks.append(("fields", NO_FIELD_INDEX))
    ranking = stage.run(retriever, query, depth, cache_path)
    ran = ("bm25+fields" if stage.fields else "bm25") if ranking.fallbacks else stage.label
    return Ranking(ranking.docs[:depth], ranking.ranked_by, first_stage=ran,
                   fallbacks=(*fallbacks, *ranking.fallbacks), embedding_model=ranking.embedding_model,
                   timings_ms=ranking.timings_ms or {})
