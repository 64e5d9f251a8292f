"""Strategies as vaulteval 0.1 stored them (format 1): one flat record of 23 fields in ``manifest.json``.

Usage: ``to_current(manifest["strategies"][0]["strategy"])`` -> a format-2 record, so ``eval verify``
reruns a run made before the stage registry. A field that the structured strategy has no place for
(``alpha`` set on a BM25 strategy, field weights on a dense one) is refused with one line naming
the format; such a run cannot be reproduced by this version.
"""

from __future__ import annotations

from typing import Any

from vaulteval.errors import UsageError
from vaulteval.pipeline.stages import registry

FIRST_STAGES = {"bm25": ("bm25", {}), "dense": ("dense", {}), "hybrid:rrf": ("hybrid", {"fusion": "rrf"}),
                "hybrid:cc": ("hybrid", {"fusion": "cc"})}
# Format-1 field -> (stage key, format-1 default): first-stage parameters sat beside the index settings.
STAGE_FIELDS = {"rrf_k": ("k", 60.0), "w_bm25": ("w_bm25", 1.0), "w_dense": ("w_dense", 1.0),
                "alpha": ("alpha", 0.5), "w_title": ("w_title", 0.0), "w_aliases": ("w_aliases", 0.0),
                "w_headings": ("w_headings", 0.0), "w_code": ("w_code", 0.0), "w_body": ("w_body", 1.0)}
INDEX_FIELDS = ("analyzer", "stemmer", "stopwords", "fold", "compounds", "k1", "b", "target", "overlap", "hard_max", "prefix")
OTHER_FIELDS = ("name", "bm25_top", "top", "rerank", "first")


def to_current(data: dict[str, Any]) -> dict[str, Any]:
    """The format-2 record (``Strategy.to_dict()``) of a format-1 one; UsageError when it has no equivalent."""
    unknown = sorted(set(data) - set(STAGE_FIELDS) - set(INDEX_FIELDS) - set(OTHER_FIELDS))
    if unknown:
        raise UsageError(f"unknown strategy field(s) {', '.join(unknown)}")
    first = data.get("first", "bm25")
    if not isinstance(first, str) or first not in FIRST_STAGES:
        raise UsageError(f"first stage must be one of {', '.join(FIRST_STAGES)}, got {first!r}")
    name, values = FIRST_STAGES[first][0], dict(FIRST_STAGES[first][1])
    schema = registry.stage(name).schema()
    for old, (key, default) in STAGE_FIELDS.items():
        if old not in data or data[old] == default:
            continue
        if key not in schema:
            raise UsageError(f"a format-1 strategy (vaulteval 0.1) sets {old}={data[old]!r} on {first}, which "
                             "this vaulteval (strategy format 2) has no place for; it cannot be rerun")
        values[key] = data[old]
    rerank = data.get("rerank")
    if isinstance(rerank, dict):
        rerank = {"stage": "rerank", **rerank}
    out = {"format": 2, "first": {"stage": name, **values}, "rerank": rerank,
           "index": {k: data[k] for k in INDEX_FIELDS if k in data}}
    out.update((k, data[k]) for k in ("name", "bm25_top", "top") if k in data)
    return out
