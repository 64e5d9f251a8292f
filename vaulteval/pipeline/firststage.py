"""First stage: which chunks become candidates, by BM25, by dense cosine, or by fusing both.

Usage::

    stage = FirstStage.parse("hybrid:rrf,k=60,w_dense=0.5")
    ranked, info = first_stage(retriever, "query", stage, depth=100, cache_path=None)
    # ranked: [(doc id, {"bm25": ..., "dense": ..., "fused": ...})], best first (components that exist)

Kinds:

- ``bm25``: the index's BM25 order (optionally with field weights, see
  ``vaulteval.index.fields``);
- ``dense``: exact cosine over the stored embeddings (``provision --embed``);
- ``hybrid:rrf``: reciprocal rank fusion of the BM25 and dense top ``depth``,
  ``sum(w / (k + rank))`` with k = 60;
- ``hybrid:cc``: convex combination ``alpha * dense + (1 - alpha) * bm25`` of
  min-max normalised scores over each list (absent from a list counts 0).

The query is embedded with the store's backend and model. When it cannot be
(backend down, model changed, or a query in a script the model does not
cover), dense falls back to BM25 order and hybrid to BM25 alone, and the info's
``fallbacks`` say why: ``("dense", reason)``, ``("hybrid", reason)``.
Nothing here imports pandas or scipy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vaulteval.errors import UsageError
from vaulteval.index import bm25

if TYPE_CHECKING:
    from vaulteval.rerank.config import RerankConfig

KINDS = ("bm25", "dense", "hybrid")
FUSIONS = ("rrf", "cc")
RRF_K = 60.0
FIELD_KEYS = ("w_title", "w_aliases", "w_headings", "w_code", "w_body")
_FLOAT_KEYS = {"k": "rrf_k", "w_bm25": "w_bm25", "w_dense": "w_dense", "alpha": "alpha",
               **{key: key for key in FIELD_KEYS}}
MODEL_CHANGED = "model-changed"
NO_FIELD_INDEX = "no-field-index"


@dataclass(frozen=True)
class FirstStage:
    """A first-stage recipe; ``label`` names it in the JSON ``strategy`` field."""

    kind: str = "bm25"
    fusion: str = "rrf"
    rrf_k: float = RRF_K
    w_bm25: float = 1.0
    w_dense: float = 1.0
    alpha: float = 0.5
    fields: tuple[tuple[str, float], ...] = ()  # field weights, e.g. (("title", 2.0),); empty = body only
    embed: "RerankConfig | None" = field(default=None, compare=False)  # host/timeout for the query embedder

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"first stage must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.fusion not in FUSIONS:
            raise UsageError(f"hybrid fusion must be rrf or cc, got {self.fusion!r}")
        if not (self.rrf_k > 0 and self.w_bm25 >= 0 and self.w_dense >= 0 and 0 <= self.alpha <= 1):
            raise UsageError(f"need k > 0, weights >= 0 and 0 <= alpha <= 1, got k={self.rrf_k}, "
                             f"w_bm25={self.w_bm25}, w_dense={self.w_dense}, alpha={self.alpha}")
        if any(w < 0 for _, w in self.fields):
            raise UsageError("field weights must be >= 0")

    @property
    def uses_dense(self) -> bool:
        return self.kind != "bm25"

    @property
    def label(self) -> str:
        """Usage: ``stage.label`` -> ``"hybrid:rrf"``, ``"dense"`` or ``"bm25"`` (+ ``:fields`` when weighted)."""
        base = f"hybrid:{self.fusion}" if self.kind == "hybrid" else self.kind
        return base + ("+fields" if self.fields else "")

    @classmethod
    def parse(cls, text: str) -> "FirstStage":
        """Usage: ``FirstStage.parse("hybrid:cc,alpha=0.3")``; ``bm25:w_title=3`` weights fields."""
        text = text.strip()
        if not text.lower().startswith("hybrid:"):
            text = text.replace(":", ",", 1)  # bm25:KEY=V and dense:KEY=V, as in the workbench grammar
        head, _, rest = text.partition(",")
        kind, _, fusion = head.strip().partition(":")
        values: dict[str, Any] = {"kind": kind.strip().lower()}
        if fusion:
            if values["kind"] != "hybrid":
                raise UsageError(f"strategy {text!r}: only hybrid takes a fusion (hybrid:rrf or hybrid:cc)")
            values["fusion"] = fusion.strip().lower()
        weights = {}
        for item in (p.strip() for p in rest.split(",") if p.strip()):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or key not in _FLOAT_KEYS:
                raise UsageError(f"strategy {text!r}: unknown item {item!r} (keys: {', '.join(_FLOAT_KEYS)})")
            try:
                number = float(value)
            except ValueError:
                raise UsageError(f"strategy {text!r}: {key}={value.strip()!r} is not a number") from None
            if key in FIELD_KEYS:
                weights[key[2:]] = number
            else:
                values[_FLOAT_KEYS[key]] = number
        return cls(**values, fields=field_weights(weights))

    def with_embed(self, config: "RerankConfig | None") -> "FirstStage":
        return replace(self, embed=config)


def field_weights(weights: dict[str, float]) -> tuple[tuple[str, float], ...]:
    """Normal form of field weights: () when they equal plain body-only BM25 (claude-obsidian's ranking)."""
    full = {"body": 1.0, **weights}
    if all(w == 0 for name, w in full.items() if name != "body") and full["body"] == 1.0:
        return ()
    return tuple(sorted(full.items()))


def first_stage(retriever: Any, query: str, stage: FirstStage, depth: int,
                cache_path: Path | None) -> tuple[list[tuple[int, dict[str, float]]], dict[str, Any]]:
    """Candidate documents best first as ``(doc, scores)``, and what happened.

    ``scores`` holds the components that exist: ``bm25`` (absent when BM25 did
    not match the chunk), ``dense``, ``fused``. The info holds ``first_stage``
    (the stage that ran), ``ranked_by`` (the component of its order),
    ``fallbacks`` (``(stage, reason)``), ``embedding_model`` and ``timings_ms``
    per stage.
    """
    info: dict[str, Any] = {"first_stage": stage.label, "ranked_by": "bm25", "fallbacks": [],
                            "embedding_model": None, "timings_ms": {}}
    if stage.fields and retriever.fields() is None:
        # Never pretend: weights without a field index would silently be plain BM25.
        stage = replace(stage, fields=())
        info["first_stage"] = stage.label
        info["fallbacks"].append(("fields", NO_FIELD_INDEX))
    started = time.perf_counter()
    bm25_scores = _bm25_scores(retriever, query, stage)
    bm25_docs, bm25_vals = bm25.top_k(bm25_scores, depth)
    bm25_list = [(int(d), float(v)) for d, v in zip(bm25_docs, bm25_vals)]
    info["timings_ms"]["bm25"] = _ms_since(started)
    if not stage.uses_dense:
        return [(d, {"bm25": v}) for d, v in bm25_list], info
    started = time.perf_counter()
    dense_list, reason, info["embedding_model"] = _dense(retriever, query, stage, depth, cache_path)
    info["timings_ms"]["dense"] = _ms_since(started)
    if dense_list is None:
        info["first_stage"] = "bm25" + ("+fields" if stage.fields else "")
        info["fallbacks"].append((stage.kind, reason))
        return [(d, {"bm25": v}) for d, v in bm25_list], info
    if stage.kind == "dense":
        info["ranked_by"] = "dense"
        return [(d, _matched(bm25_scores[d], dense=c)) for d, c in dense_list], info
    started = time.perf_counter()
    dense_of = dict(dense_list)
    fused = _rrf(bm25_list, dense_list, stage) if stage.fusion == "rrf" else _cc(bm25_list, dense_list, stage)
    out = [(d, _matched(bm25_scores[d], dense=dense_of.get(d), fused=s)) for d, s in fused]
    info.update(ranked_by="fused")
    info["timings_ms"]["fusion"] = _ms_since(started)
    return out, info


def _matched(bm25_score: float, **others: float | None) -> dict[str, float]:
    """The components a hit has: BM25 only when it matched the chunk (a dense-only hit has none, not 0.0)."""
    out = {"bm25": float(bm25_score)} if bm25_score > 0 else {}
    out.update((name, value) for name, value in others.items() if value is not None)
    return out


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


def _bm25_scores(retriever: Any, query: str, stage: FirstStage) -> np.ndarray:
    index = retriever.index()
    tokens = index.analyze(query)
    scores = index.score_tokens(tokens)
    weighted = [(name, w) for name, w in stage.fields if name != "body"]
    if not weighted:
        return scores
    body = dict(stage.fields).get("body", 1.0)
    total = scores * body
    fields = retriever.fields()
    if fields is not None:
        for name, weight in weighted:
            if weight:
                total = total + weight * fields.score_tokens(name, tokens)
    return total


def _dense(retriever: Any, query: str, stage: FirstStage, depth: int, cache_path: Path | None):
    """The dense top ``depth`` as [(doc, cosine)], or (None, reason) when the query could not be embedded."""
    from vaulteval.rerank.config import RerankConfig
    from vaulteval.rerank.stage import embed_query

    store = retriever.store()
    base = stage.embed or RerankConfig()
    config = replace(base, backend=store.backend, model=store.model)
    qv = embed_query(query, config, cache_path)
    if qv.vector is None:
        return None, qv.fallback_reason, qv.model
    if (qv.source, qv.model_key, qv.scheme) != (store.backend, store.model_key, store.scheme):
        return None, MODEL_CHANGED, qv.model
    rows, cos = store.top(qv.vector, depth)
    docs = retriever.store_docs()
    out = []
    for row, c in zip(rows.tolist(), cos.tolist()):
        doc = docs[row]
        if doc >= 0:
            out.append((doc, round(float(c), 6)))
    return out, None, qv.model


def _rrf(bm25_list, dense_list, stage: FirstStage) -> list[tuple[int, float]]:
    fused: dict[int, float] = {}
    for weight, ranked in ((stage.w_bm25, bm25_list), (stage.w_dense, dense_list)):
        for rank, (doc, _) in enumerate(ranked, 1):
            fused[doc] = fused.get(doc, 0.0) + weight / (stage.rrf_k + rank)
    return _ordered(fused, bm25_list, dense_list)


def _cc(bm25_list, dense_list, stage: FirstStage) -> list[tuple[int, float]]:
    fused: dict[int, float] = {}
    for weight, ranked in ((1.0 - stage.alpha, bm25_list), (stage.alpha, dense_list)):
        if not ranked:
            continue
        vals = np.array([v for _, v in ranked], dtype=np.float64)
        lo, span = float(vals.min()), float(vals.max() - vals.min())
        for (doc, _), v in zip(ranked, vals.tolist()):
            norm = (v - lo) / span if span > 0 else 1.0
            fused[doc] = fused.get(doc, 0.0) + weight * norm
    return _ordered(fused, bm25_list, dense_list)


def _ordered(fused: dict[int, float], bm25_list, dense_list) -> list[tuple[int, float]]:
    """Fused score descending; ties in BM25 order, then dense order (deterministic)."""
    first_seen: dict[int, int] = {}
    for doc, _ in [*bm25_list, *dense_list]:
        first_seen.setdefault(doc, len(first_seen))
    return sorted(((d, round(s, 9)) for d, s in fused.items()), key=lambda item: (-item[1], first_seen[item[0]]))
