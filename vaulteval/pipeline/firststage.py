"""First stage: run a strategy's first stage (``vaulteval.pipeline.stages``) with the fallbacks all stages share.

Usage::

    stage = parse_first_stage("hybrid:rrf,k=60,w_dense=0.5")
    ranked, info = first_stage(retriever, "query", stage, depth=100, cache_path=None)
    # ranked: [(doc id, bm25 score or None, dense cosine or None, score)], best first

The stages themselves (bm25, dense, hybrid:rrf|cc, ...) are classes in
``vaulteval.pipeline.stages``, registered by name. Here:

- field weights without a field index are dropped, never pretended, and the
  label says so: ``bm25+noop-fields:no-field-index``;
- a stage that could not embed the query (backend down, model changed, a
  script the model does not read) has returned BM25 order, labelled
  ``bm25+noop-dense:<reason>`` or ``bm25+noop-hybrid:<reason>``.
"""

from __future__ import annotations

from vaulteval.pipeline.stages.registry import FirstStage, parse_first_stage  # noqa: F401  (the stage API)

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

NO_FIELD_INDEX = "no-field-index"


def first_stage(retriever: Any, query: str, stage: FirstStage, depth: int,
                cache_path: Path | None) -> tuple[list[tuple[int, float | None, float | None, float]], dict[str, Any]]:
    """Candidate documents best first, and what happened (``label``, ``fallback``, ``dense_ms``...)."""
    info: dict[str, Any] = {"label": stage.label, "fallback": None, "dense_ms": 0.0}
    fields_missing = bool(stage.fields) and retriever.fields() is None
    if fields_missing:
        stage = stage.without_fields()
    ranked, extra = stage.run(retriever, query, depth, cache_path)
    reason = extra.pop("fallback", None)
    info.update(extra)
    if reason is not None:
        info.update(label=f"bm25+noop-{stage.name}:{reason}", fallback=reason)
    elif fields_missing:
        info.update(label=f"{stage.label}+noop-fields:{NO_FIELD_INDEX}", fallback=NO_FIELD_INDEX)
    return ranked, info
