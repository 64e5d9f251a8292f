"""First stage: run a strategy's first stage (``vaulteval.pipeline.stages``) with the fallbacks all stages share.

Usage::

    stage = parse_first_stage("hybrid:rrf,k=60,w_dense=0.5")
    ranked, info = first_stage(retriever, "query", stage, depth=100, cache_path=None)
    # ranked: [(doc id, {"bm25": ..., "dense": ..., "fused": ...})], best first (components that exist)

The stages themselves (bm25, dense, hybrid:rrf|cc, bm25:prf=K, ...) are classes
in ``vaulteval.pipeline.stages``, registered by name. Here:

- field weights without a field index are dropped, never pretended: the
  info's ``fallbacks`` get ``("fields", "no-field-index")``;
- a stage that could not embed the query (backend down, model changed, a
  script the model does not read) has returned BM25 order: ``first_stage``
  is then ``bm25`` and ``fallbacks`` get ``("dense" or "hybrid", reason)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vaulteval.pipeline.stages.registry import FirstStage, parse_first_stage  # noqa: F401  (the stage API)

if TYPE_CHECKING:
    from pathlib import Path

NO_FIELD_INDEX = "no-field-index"


def first_stage(retriever: Any, query: str, stage: FirstStage, depth: int,
                cache_path: Path | None) -> tuple[list[tuple[int, dict[str, float]]], dict[str, Any]]:
    """Candidate documents best first as ``(doc, scores)``, and what happened.

    ``scores`` holds the components that exist (``bm25``, ``dense``, ``fused``,
    ``prf``). The info holds ``first_stage`` (the stage that ran), ``ranked_by``
    (the component of its order), ``fallbacks`` (``(stage, reason)``),
    ``embedding_model`` and ``timings_ms`` per stage.
    """
    fallbacks: list[tuple[str, str]] = []
    if stage.fields and retriever.fields() is None:
        # Never pretend: weights without a field index would silently be plain BM25.
        stage = stage.without_fields()
        fallbacks.append(("fields", NO_FIELD_INDEX))
    ranked, extra = stage.run(retriever, query, depth, cache_path)
    ran = stage.label
    reason = extra.get("fallback")
    if reason is not None:
        ran = "bm25+fields" if stage.fields else "bm25"
        fallbacks.append((stage.name, reason))
    info = {"first_stage": ran, "ranked_by": extra["ranked_by"], "fallbacks": fallbacks,
            "embedding_model": extra.get("embedding_model"), "timings_ms": extra.get("timings_ms") or {}}
    return ranked, info
