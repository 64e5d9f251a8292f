"""The retrieval pipeline: BM25 -> drop stale -> optional rerank -> dedupe by page -> top.

Usage::

    retriever = Retriever(vault)               # opens the index once, on first use
    result = retriever.retrieve("descale the espresso machine", top=5, bm25_top=20, rerank=None)
    print(result.to_json())

``retrieve(vault, query, ...)`` is the one-shot form.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from vaulteval.errors import NotProvisioned, UsageError
from vaulteval.chunks.integrity import IntegrityChecker
from vaulteval.index.reader import BM25Index, Hit, open_index
from vaulteval.vault.paths import cached_lexical_path
from vaulteval.index.tokenize import check_length

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
if TYPE_CHECKING:
    from typing import Any

    from vaulteval.pipeline.firststage import FirstStage
    from vaulteval.rerank.stage import RerankConfig
    from vaulteval.rerank.store import EmbeddingStore
    from vaulteval.vault.vault import Vault

SNIPPET_CHARS = 200
MAX_TOP = 1000


class Candidate:
    """One served chunk. A plain slotted class: the retrieve path does not import dataclasses."""

    __slots__ = ("chunk_id", "page_address", "page_path", "absolute_path", "chunk_index", "bm25_score",
                 "rerank_score", "rerank_source", "snippet", "dense_score")

    def __init__(self, chunk_id: str, page_address: str, page_path: str, absolute_path: str, chunk_index: int,
                 bm25_score: float, rerank_score: float | None, rerank_source: str, snippet: str,
                 dense_score: float | None = None):
        self.chunk_id, self.page_address, self.page_path = chunk_id, page_address, page_path
        self.absolute_path, self.chunk_index, self.bm25_score = absolute_path, chunk_index, bm25_score
        self.rerank_score, self.rerank_source, self.snippet = rerank_score, rerank_source, snippet
        self.dense_score = dense_score  # cosine from the stored embeddings (dense and hybrid only)

    def to_dict(self) -> dict[str, Any]:
        """Every field; ``dense_score`` only when there is one (BM25-only results keep claude-obsidian's fields)."""
        out = {name: getattr(self, name) for name in self.__slots__}
        if out["dense_score"] is None:
            del out["dense_score"]
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Candidate) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return f"Candidate({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items())})"


class RetrievalResult:
    """The pipeline's answer; ``pool`` (not serialised) is what evaluation needs to explain misses."""

    def __init__(self, query: str, strategy: str, top_k: int, candidates: list[Candidate],
                 explain: dict[str, Any] | None = None, pool: list[Candidate] | None = None,
                 min_score: float | None = None, dropped_below_min_score: int = 0):
        self.query, self.strategy, self.top_k, self.candidates = query, strategy, top_k, candidates
        self.explain = explain
        self.pool = [] if pool is None else pool
        self.min_score, self.dropped_below_min_score = min_score, dropped_below_min_score

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "query": self.query,
            "strategy": self.strategy,
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
        """Drop candidates scoring below ``min_score`` (the rerank cosine if reranked, else BM25); count them."""
        if min_score is None:
            return self
        kept = [c for c in self.candidates if _score(c) >= min_score]
        self.dropped_below_min_score = len(self.candidates) - len(kept)
        self.candidates, self.min_score = kept, float(min_score)
        return self

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def __repr__(self) -> str:
        return f"RetrievalResult(query={self.query!r}, strategy={self.strategy!r}, candidates={len(self.candidates)})"


def _score(c: Candidate) -> float:
    return c.rerank_score if c.rerank_score is not None else c.bm25_score


def check_limit(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP:
        raise UsageError(f"{name} must be a whole number from 1 to {MAX_TOP}, got {value!r}")
    return value


def check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise UsageError("the query is empty; pass the text to search for")
    check_length(query, "the query")
    return query


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


class Retriever:
    """A vault opened for queries: its verified index and integrity checker, each opened once.

    Usage: ``Retriever(vault).retrieve("query", top=5)``. Evaluation shares one
    index and checker across views of the same meta dir through ``index=`` and
    ``integrity=``.
    """

    def __init__(self, vault: "Vault", *, index: BM25Index | None = None,
                 integrity: IntegrityChecker | None = None, store_meta: Path | None = None):
        self.vault = vault
        self._index = index
        self._integrity = integrity
        self._store_meta = store_meta  # where the stored embeddings are (default: the vault view's meta dir)
        self._store = None
        self._store_docs: list[int] | None = None
        self._fields: Any = False

    def store(self) -> "EmbeddingStore":
        """The verified embedding store (exit 10 naming ``provision --embed`` when missing or corrupt)."""
        if self._store is None:
            from vaulteval.pipeline.embed import open_vault_store

            self._store = open_vault_store(self.vault, self._store_meta)
        return self._store

    def optional_store(self) -> "EmbeddingStore | None":
        """The store when it opens, else None (rerank then embeds candidates itself)."""
        try:
            return self.store()
        except NotProvisioned:
            return None

    def store_docs(self) -> list[int]:
        """Index document of each stored row; -1 when its chunk is gone or its text changed (never served)."""
        if self._store_docs is None:
            index, store = self.index(), self.store()
            by_chunk = {d.chunk_id: (i, d.context_hash) for i, d in enumerate(index.all_docs())}
            docs = []
            for row in store.rows:
                hit = by_chunk.get(row.chunk_id)
                docs.append(hit[0] if hit is not None and hit[1] == row.context_hash else -1)
            self._store_docs = docs
        return self._store_docs

    def fields(self) -> Any:
        """The field index (title, aliases, headings, code) when provisioned and current, else None."""
        if self._fields is False:
            from vaulteval.index.fields import open_fields

            self._fields = open_fields(self.vault.meta_dir, self.index())
        return self._fields

    def index(self) -> BM25Index:
        """The verified BM25 index (exit 10 with the rebuild command when it is missing or corrupt)."""
        if self._index is None:
            self._index = open_index(self.vault)
        return self._index

    def integrity(self) -> IntegrityChecker:
        """The checker that verifies candidates against chunk files and pages (remembers verdicts)."""
        if self._integrity is None:
            self._integrity = IntegrityChecker(self.vault)
        return self._integrity

    def retrieve(self, query: str, **options: Any) -> "RetrievalResult":
        """Usage: ``retriever.retrieve("query", top=5, rerank=None)`` -> RetrievalResult."""
        return _run(self, query, **options)

    def __repr__(self) -> str:
        return f"Retriever({self.vault!r})"


def retrieve(source: "Vault | Retriever", query: str, **options: Any) -> RetrievalResult:
    """Usage: ``retrieve(vault, "query", top=5)``: one query; pass a Retriever to reuse its opened index."""
    retriever = source if isinstance(source, Retriever) else Retriever(source)
    return retriever.retrieve(query, **options)


def _run(
    retriever: Retriever,
    query: str,
    *,
    top: int = 5,
    bm25_top: int = 20,
    rerank: "RerankConfig | None" = None,
    explain: bool = False,
    embed_cache: Path | None | str = "default",
    first: "FirstStage | None" = None,
    bm25_hits: "list[Hit] | None" = None,
) -> RetrievalResult:
    """Run the pipeline; ``rerank=None`` means BM25 order (``bm25-only``).

    ``first`` picks the first stage (``vaulteval.pipeline.firststage``): BM25
    (the default), dense, or a hybrid; ``bm25_top`` is its depth.

    ``embed_cache`` is where rerank embeddings are cached: ``"default"`` is the
    vault's ``.vault-meta/vaulteval/embeddings.sqlite``; evaluation passes its own cache
    file so it never writes the vault; ``None`` disables caching. ``bm25_hits``
    are this query's BM25 hits when a batch scorer already computed them.
    Without rerank and explain, ``pool`` ends at the hit that completed the
    ``top`` pages (the rest are neither read nor verified).
    """
    check_query(query)
    check_limit("--top", top)
    check_limit("--bm25-top", bm25_top)
    if rerank is not None:
        from vaulteval.rerank.stage import resolve

        rerank = resolve(rerank)  # settings errors surface before any work or connection
    vault = retriever.vault
    t0 = time.perf_counter()
    index = retriever.index()
    if index.n_docs == 0:
        raise NotProvisioned(f"the index has no chunks (no notes with text under {vault.notes_label}?)",
                             rebuild=vault.rebuild_command())
    t1 = time.perf_counter()
    cache = default_embed_cache(vault) if embed_cache == "default" else embed_cache
    stage_info: dict[str, Any] = {"label": "bm25", "fallback": None}
    if first is None or (first.kind == "bm25" and not first.fields):
        found = index.search(query, k=bm25_top) if bm25_hits is None else bm25_hits[:bm25_top]
        hits = [(h.doc, h.score, None) for h in found]
    else:
        from vaulteval.pipeline.firststage import first_stage

        ranked_docs, stage_info = first_stage(retriever, query, first, bm25_top, cache)
        hits = [(d, b, c) for d, b, c, _ in ranked_docs[:bm25_top]]
    t2 = time.perf_counter()
    checker = retriever.integrity()
    pool: list[Candidate] = []
    texts: list[str] = []
    stale = orphaned = 0
    # Without rerank or explain, the answer is the first `top` current pages in first-stage order: each
    # is verified before it is served, and hits past them (or of a page already served) are not read.
    served_only = rerank is None and not explain
    pages: set[str] = set()
    for hit_doc, hit_score, dense_score in hits:
        doc = index.doc(hit_doc)
        if served_only and doc.page_path in pages:
            continue
        rec = checker.current_record(doc)
        if rec is None:
            stale += 1
            if checker.record(doc) is None:
                orphaned += 1  # the chunk record itself is gone or rewritten, not just its page edited
            continue
        raw = rec["raw_text"]
        pool.append(Candidate(
            chunk_id=doc.chunk_id,
            page_address=doc.page_address,
            page_path=doc.page_path,
            absolute_path=cached_lexical_path(vault.notes_dir, doc.page_path, vault.notes_strip),
            chunk_index=doc.chunk_index,
            bm25_score=round(hit_score, 6),
            rerank_score=round(hit_score, 6),
            rerank_source="skipped",
            snippet=raw[:SNIPPET_CHARS],
            dense_score=dense_score,
        ))
        texts.append(rec.get("contextualized_text") or raw)
        if served_only:
            pages.add(doc.page_path)
            if len(pages) == top:
                break
    if orphaned and not pool:
        # An index whose chunk records are gone (deleted by another tool or by hand) must not look like
        # "no such notes": the answer would be an empty success for every query.
        raise NotProvisioned(f"the index names chunk records that are missing or were rewritten ({orphaned} of "
                             f"{len(hits)} candidates, under {vault.meta_dir / 'chunks'})",
                             rebuild=vault.rebuild_command())
    t3 = time.perf_counter()

    base = "bm25" if stage_info["label"] == "bm25" else stage_info["label"]
    strategy = "bm25-only" if base == "bm25" else base
    rerank_model = None
    ranked = pool
    if rerank is not None and pool:
        from vaulteval.rerank.stage import rerank as run_rerank

        # The vault's own cache is reached from the vault root without following a symlink.
        anchor = vault.root if embed_cache == "default" and not vault.meta_is_external else None
        outcome = run_rerank(query, texts, rerank, cache, cache_anchor=anchor, store=retriever.optional_store())
        rerank_model = outcome.model
        if outcome.scores is not None:
            strategy = f"{base}+rerank:{outcome.source}"
            for cand, score in zip(pool, outcome.scores):
                cand.rerank_score = round(float(score), 6)
                cand.rerank_source = outcome.source
            # Stable sort: equal cosines keep their BM25 order.
            ranked = sorted(pool, key=lambda c: -c.rerank_score)
        else:
            strategy = f"{base}+noop-rerank:{outcome.fallback_reason}"
            for cand in pool:
                cand.rerank_source = f"noop:{outcome.fallback_reason}"
    elif rerank is not None:
        strategy = f"{base}+noop-rerank:no-candidates"  # nothing to rerank; never counted as a rerank
        rerank_model = rerank.model
    t4 = time.perf_counter()

    seen: set[str] = set()
    deduped: list[Candidate] = []
    for cand in ranked:
        if cand.page_path not in seen:
            seen.add(cand.page_path)
            deduped.append(cand)
    t5 = time.perf_counter()

    info = None
    if explain:
        info = {
            "bm25_candidate_count": len(hits),
            "post_rerank_count": len(ranked),
            "deduped_count": len(deduped),
            "bm25_top_param": bm25_top,
            "rerank_model": rerank_model,
            "stale_candidates_skipped": stale,
            "analyzer": index.analyzer_name,
            "first_stage": stage_info["label"],
            "first_stage_fallback": stage_info["fallback"],
            "embedding_model": stage_info.get("embedding_model"),
            "timings_ms": {
                "dense": stage_info.get("dense_ms", 0.0),
                "index_open": _ms(t1 - t0),
                "bm25": _ms(t2 - t1),
                "integrity": _ms(t3 - t2),
                "rerank": _ms(t4 - t3),
                "dedupe": _ms(t5 - t4),
                "total": _ms(t5 - t0),
            },
        }
    return RetrievalResult(query=query, strategy=strategy, top_k=top, candidates=deduped[:top],
                           explain=info, pool=ranked)


def default_embed_cache(vault: "Vault") -> Path:
    """The embedding cache: the one thing retrieve may write, and only when reranking."""
    return vault.meta_dir / "embeddings.sqlite"
