"""What the retrieval pipeline hands back: candidates with their scores, and a label saying how they were ranked.

Usage::

    result = retrieve(vault, "descale the espresso machine", top=5)
    best = result.candidates[0]
    best.score, best.scores          # 12.3, {"bm25": 12.3}   (or {"bm25":..., "dense":..., "fused":...})
    result.label.reranked            # False
    result.label.to_dict()           # {"first_stage": "bm25", "reranker": None, "fallbacks": []}
    Ranking(docs, "bm25")            # what a first stage returns: [(doc, {component: value})], best first
    str(result.label)                # "bm25-only": the text form, for people (never parsed)

Plain slotted classes: the retrieve path does not import dataclasses.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

SCHEMA = "vaulteval.retrieve.v2"
# A rerank was asked for but no current candidate was left: nothing failed, nothing was reordered.
NO_CANDIDATES = "no-candidates"


class Ranking:
    """One ranking, as first stages return it and the pipeline's verify and rerank steps take it.

    ``docs`` is ``[(doc, {component: value})]`` best first, holding the
    components that exist (``bm25``, ``dense``, ``fused``, ``prf``, or a new
    stage's own); ``ranked_by`` is the component of its order. What happened on
    the way: ``first_stage`` (the stage that ran, as labels name it; set by
    ``vaulteval.pipeline.firststage``), ``fallbacks`` (``(stage, reason)``: why
    a stage kept BM25 order, then ranked by ``bm25``), ``embedding_model`` and
    ``timings_ms`` (per stage: ``bm25``, ``dense``, ``fusion``).
    """

    __slots__ = ("docs", "ranked_by", "first_stage", "fallbacks", "embedding_model", "timings_ms")

    def __init__(self, docs: list, ranked_by: str, *, first_stage: str = "", fallbacks: tuple = (),
                 embedding_model: Any = None, timings_ms: dict[str, float] | None = None):
        self.docs, self.ranked_by, self.first_stage = docs, ranked_by, first_stage
        self.fallbacks, self.embedding_model, self.timings_ms = tuple(fallbacks), embedding_model, timings_ms

    def __repr__(self) -> str:
        return f"Ranking({len(self.docs)} docs by {self.ranked_by!r}, fallbacks={list(self.fallbacks)!r})"


class Label:
    """How a result was ranked: the first stage that ran, the reranker that reordered it, and what fell back.

    ``fallbacks`` holds ``(stage, reason)`` pairs in the order they happened:
    ``("fields", "no-field-index")``, ``("dense" or "hybrid", reason)`` (the
    first stage then ran as BM25), ``("rerank", reason)`` (the first-stage
    order was kept).
    """

    __slots__ = ("first_stage", "reranker", "fallbacks")

    def __init__(self, first_stage: str = "bm25", reranker: str | None = None,
                 fallbacks: "tuple[tuple[str, str], ...] | list[tuple[str, str]]" = ()):
        self.first_stage = first_stage  # a stage label: bm25, bm25+fields, bm25+prf, dense, hybrid:rrf, hybrid:cc
        self.reranker = reranker  # the backend whose cosines ordered the result, or None
        self.fallbacks = tuple((str(stage), str(reason)) for stage, reason in fallbacks)

    @property
    def reranked(self) -> bool:
        return self.reranker is not None

    @property
    def failures(self) -> list[str]:
        """Reasons of the stages that were asked for and could not run (an empty rerank pool is no failure)."""
        return [reason for stage, reason in self.fallbacks if not (stage == "rerank" and reason == NO_CANDIDATES)]

    def to_dict(self) -> dict[str, Any]:
        return {"first_stage": self.first_stage, "reranker": self.reranker,
                "fallbacks": [{"stage": stage, "reason": reason} for stage, reason in self.fallbacks]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Label":
        return cls(data["first_stage"], data.get("reranker"),
                   [(f["stage"], f["reason"]) for f in data.get("fallbacks", ())])

    def text(self) -> str:
        """The form people read (the JSON ``strategy``), e.g. ``bm25+noop-dense:model-language+rerank:ollama``."""
        parts = [self.first_stage]
        parts += [f"noop-{stage}:{reason}" for stage, reason in self.fallbacks if stage != "rerank"]
        if self.reranker is not None:
            parts.append(f"rerank:{self.reranker}")
        parts += [f"noop-rerank:{reason}" for stage, reason in self.fallbacks if stage == "rerank"]
        return "bm25-only" if parts == ["bm25"] else "+".join(parts)

    __str__ = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Label) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.first_stage, self.reranker, self.fallbacks))

    def __repr__(self) -> str:
        return f"Label({self.text()!r})"


class Candidate:
    """One served chunk, with ``score`` (what it was ranked by) and ``scores`` (every component it has).

    ``bm25_score`` (0.0 for a chunk BM25 did not match), ``rerank_score`` and ``dense_score`` (None when
    absent) are the pool table's columns (docs/run-manifest.md); the JSON carries ``scores`` only.

    ``text`` is the chunk's raw text. With ``passages`` (the query's
    ``vaulteval.pipeline.passages.Passages``) the snippet, the matched terms and
    the chunk's place in its note are worked out when first read, so
    evaluation, which reads none of them, pays nothing.
    """

    __slots__ = ("chunk_id", "page_address", "page_path", "absolute_path", "chunk_index", "score", "scores",
                 "rerank_source", "text", "context", "doc", "_passages", "_explained")

    def __init__(self, chunk_id: str, page_address: str, page_path: str, absolute_path: str, chunk_index: int,
                 scores: dict[str, float], ranked_by: str, text: str, rerank_source: str = "skipped",
                 context: str | None = None, passages: Any = None, doc: int | None = None):
        self.chunk_id, self.page_address, self.page_path = chunk_id, page_address, page_path
        self.absolute_path, self.chunk_index, self.text = absolute_path, chunk_index, text
        self.context = text if context is None else context  # what was indexed: prefix and text
        self.scores = {name: round(float(value), 6) for name, value in scores.items()}
        self.score = self.scores[ranked_by]  # the first stage's ranking component: bm25, dense, fused, prf...
        self.rerank_source = rerank_source
        self._passages = passages
        self.doc = doc  # the chunk's number in the index it was found in (its recorded language explains it)
        self._explained: dict[str, Any] = {}

    def _explain(self, key: str, make):
        if key not in self._explained:
            self._explained[key] = make()
        return self._explained[key]

    @property
    def snippet(self) -> str:
        """The passage around the chunk's best-matching sentence (at most 200 characters, cut at whitespace);
        the chunk's first 200 characters when there is no query to match."""
        if self._passages is None:
            return self.text[:200]
        return self._explain("snippet", lambda: self._passages.snippet(self.text, self.doc))

    @property
    def matched_terms(self) -> list[str]:
        """The query's words the indexed text (prefix included) holds."""
        if self._passages is None:
            return []
        return self._explain("matched", lambda: self._passages.matched_terms(self.context, self.doc, self.text))

    @property
    def location(self) -> dict[str, Any]:
        """``heading_path``, ``first_line``, ``last_line`` of the chunk in its note, ``snippet_line`` and
        ``snippet_heading_path`` of its snippet, and the note's ``modified`` time, read from the note when first
        asked for (None each when it cannot be read; empty without a query)."""
        if self._passages is None:
            return {}
        return self._explain("location", lambda: self._passages.location(self.page_path, self.text, self.snippet))

    def set_score(self, component: str, value: float) -> None:
        """Record a later stage's component (``rerank``); it becomes ``score``."""
        self.scores[component] = round(float(value), 6)
        self.score = self.scores[component]

    @property
    def bm25_score(self) -> float:
        return self.scores.get("bm25", 0.0)

    @property
    def rerank_score(self) -> float | None:
        return self.scores.get("rerank")

    @property
    def dense_score(self) -> float | None:
        return self.scores.get("dense")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chunk_id": self.chunk_id, "page_address": self.page_address, "page_path": self.page_path,
            "absolute_path": self.absolute_path, "chunk_index": self.chunk_index,
            "score": self.score, "scores": dict(self.scores), "rerank_source": self.rerank_source,
            "snippet": self.snippet, "matched_terms": self.matched_terms, **self.location,
        }
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Candidate) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Candidate({self.chunk_id!r}, score={self.score!r}, scores={self.scores!r})"


class RetrievalResult:
    """The pipeline's answer; ``pool`` (not serialised) is what evaluation needs to explain misses."""

    def __init__(self, query: str, label: Label, top_k: int, candidates: list[Candidate],
                 explain: dict[str, Any] | None = None, pool: list[Candidate] | None = None,
                 min_score: float | None = None, dropped_below_min_score: int = 0):
        self.query, self.label, self.top_k, self.candidates = query, label, top_k, candidates
        self.explain = explain
        self.pool = [] if pool is None else pool
        self.min_score, self.dropped_below_min_score = min_score, dropped_below_min_score

    @property
    def strategy(self) -> str:
        """The label's text form (the JSON ``strategy``): for people; read ``label`` in code."""
        return self.label.text()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "query": self.query,
            "strategy": self.label.text(),
            "label": self.label.to_dict(),
            "top_k": self.top_k,
            "candidates": [c.to_dict() for c in self.candidates],
        }
        if self.min_score is not None:
            out["min_score"] = self.min_score
            out["dropped_below_min_score"] = self.dropped_below_min_score
        if self.explain is not None:
            out["explain"] = self.explain
        return out

    def with_min_score(self, min_score: float | None) -> "RetrievalResult":
        """Drop candidates whose ``score`` (what they were ranked by) is below ``min_score``; count them."""
        if min_score is None:
            return self
        kept = [c for c in self.candidates if c.score >= min_score]
        self.dropped_below_min_score = len(self.candidates) - len(kept)
        self.candidates, self.min_score = kept, float(min_score)
        return self

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def __repr__(self) -> str:
        return f"RetrievalResult(query={self.query!r}, strategy={self.strategy!r}, candidates={len(self.candidates)})"


class Stopwatch:
    """Milliseconds per stage of one retrieve; every stage has a line (0.0 when it did not run)."""

    STAGES = ("index_open", "bm25", "dense", "fusion", "integrity", "rerank", "dedupe")

    def __init__(self) -> None:
        self.started = self.last = time.perf_counter()
        self.ms = dict.fromkeys(self.STAGES, 0.0)
        self._seconds: dict[str, float] = {}  # rounded to milliseconds only when asked for (``done``)

    def lap(self, stage: str, parts: "dict[str, float] | None" = None, ran: bool = True) -> None:
        """Time since the last lap goes to ``stage``, or to the sub-stages ``parts`` timed themselves."""
        now = time.perf_counter()
        if parts:
            self.ms.update(parts)
        elif ran:
            self._seconds[stage] = now - self.last
        self.last = now

    def done(self) -> "dict[str, float]":
        laps = {stage: round(seconds * 1000.0, 3) for stage, seconds in self._seconds.items()}
        return {**self.ms, **laps, "total": round((self.last - self.started) * 1000.0, 3)}
