"""Misses: every (query, relevant page) outside a run's top k, and why.

Usage::

    misses = find_misses(run, queryset, k=10)   # run from run_strategy (it keeps its index)
    misses.groupby("cause").size()

Causes, checked in this order:

- ``not-indexed``: the page has no current chunk in the index (never indexed,
  or edited since: stale chunks are dropped by the pipeline);
- ``no-query-term``: the run did not rank the page and none of the query's analyzed
  terms occurs in its indexed text (``detail`` lists the absent terms, stopwords left out);
  a dense or hybrid run needs no shared term, so its unranked pages are ``outside-pool``;
- ``outside-pool``: the page's best chunk ranks below ``bm25_top`` in the full
  BM25 ranking (``bm25_rank``), so no reranker could have seen it;
- ``demoted-by-rerank``: it was in the BM25 order's deduped top k of the same
  pool, and the reranker pushed it out;
- ``below-cutoff``: ranked below k (``rank`` is its page rank), by any first stage.

A ranked page is explained by its rank before its words: a hybrid run can rank a page
that shares no term with the query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import Query, QuerySet
    from vaulteval.workbench.runs import Run
    from vaulteval.workbench.workspace import StrategyEnv

CAUSES = ("not-indexed", "no-query-term", "outside-pool", "demoted-by-rerank", "below-cutoff")
MISS_COLUMNS = ["run", "query_id", "doc_id", "grade", "cause", "rank", "bm25_rank", "detail"]


class NoIndexForMisses(UsageError):
    """Miss causes need the index the run was made with; use a run from run_strategy/evaluate."""


def find_misses(run: "Run", queryset: "QuerySet", k: int = 10) -> "pd.DataFrame":
    """One row per relevant page (grade > 0) not in the run's top k, with its cause."""
    import pandas as pd

    if run.env is None:
        raise NoIndexForMisses(f"run {run.name} has no index attached; recompute it with evaluate() or run_strategy()")
    env = run.env
    pages = _page_docs(env)
    rankings = run.rankings()
    pools = run.pool_pages()
    bm25_order = run.bm25_rankings() or {}
    reranked = run.reranked_queries
    bm25_top = run.strategy.bm25_top if run.strategy is not None else 20
    semantic = run.strategy is not None and run.strategy.first.semantic
    rows = []
    for q in queryset.positive:
        ranking = rankings.get(q.query_id, [])
        top = set(ranking[:k])
        missed = [(d, g) for d, g in q.relevant.items() if g > 0 and d not in top]
        if not missed:
            continue
        ctx = _QueryContext(env, q)
        for doc_id, grade in missed:
            rank = ranking.index(doc_id) + 1 if doc_id in ranking else None
            pool = pools.get(q.query_id, [])
            if rank is None and doc_id in pool:
                rank = pool.index(doc_id) + 1
            cause, bm25_rank, detail = _cause(ctx, pages.get(doc_id, []), doc_id, rank, k, bm25_top,
                                              q.query_id in reranked, bm25_order.get(q.query_id, []), semantic)
            rows.append((run.name, q.query_id, doc_id, grade, cause, rank, bm25_rank, detail))
    df = pd.DataFrame(rows, columns=MISS_COLUMNS)
    return df.astype({"rank": "Int64", "bm25_rank": "Int64"})


def _cause(ctx: "_QueryContext", docs: list[int], doc_id: str, rank: int | None, k: int, bm25_top: int,
           reranked: bool, bm25_pages: list[str], semantic: bool = False) -> tuple[str, int | None, str]:
    current = [d for d in docs if ctx.checker.current_record(ctx.index.doc(d)) is not None]
    if not current:
        why = "no chunk of this page is in the index" if not docs else \
            f"the page changed after indexing ({len(docs)} stale chunk(s)); re-provision the vault"
        return "not-indexed", None, why
    absent = ctx.absent_terms(current)
    shown = content_terms(absent, ctx.index)
    note = f"; absent from the note: {', '.join(shown)}" if shown else ""
    best = ctx.best_rank(current) if len(absent) < len(ctx.terms) else None
    # A page the run ranked at all (BM25, dense or hybrid) is explained by its rank, whatever its words.
    if rank is not None and reranked and doc_id in bm25_pages[:k]:
        return "demoted-by-rerank", best, f"BM25 page rank {bm25_pages.index(doc_id) + 1}, after rerank {rank}{note}"
    if rank is not None:
        return "below-cutoff", best, f"page rank {rank}, cutoff {k}{note}"
    if len(absent) == len(ctx.terms) and not semantic:
        return "no-query-term", None, "absent from the note: " + (", ".join(shown or absent) if absent
                                                                   else "(the query has no terms)")
    if semantic:
        return "outside-pool", best, f"not among the run's candidates (top {bm25_top} of its first stage){note}"
    return "outside-pool", best, f"best chunk at BM25 rank {best}, the pool is the top {bm25_top}{note}"


def stop_terms(index: Any, languages: tuple[str, ...] = ("en",)) -> frozenset[str]:
    """Stopwords (stopwords-iso's lists, plus the analyzers' own) as they are written and as ``index`` analyzes
    them: words a reader cannot act on. Kept on the index object, so it is computed once per index."""
    cached = getattr(index, "_vaulteval_stop_terms", None)
    if cached is not None:
        return cached
    from vaulteval.index.analyzers import LUCENE_STOPWORDS
    from vaulteval.index.tokenize import STOPWORDS

    words = set(STOPWORDS) | set(LUCENE_STOPWORDS)
    try:
        import stopwordsiso

        for lang in languages:
            words |= set(stopwordsiso.stopwords(lang))
    except ImportError:  # the notebook extra brings it; without it the analyzers' short lists still apply
        pass
    terms = frozenset(words | {t for w in words for t in index.analyze(w)})
    try:
        index._vaulteval_stop_terms = terms
    except AttributeError:  # an index with __slots__: recomputed next time
        pass
    return terms


def content_terms(terms: list[str], index: Any = None) -> list[str]:
    """``terms`` without stopwords (``stop_terms``): what a reader can act on."""
    from vaulteval.index.analyzers import LUCENE_STOPWORDS
    from vaulteval.index.tokenize import STOPWORDS

    stop = stop_terms(index) if index is not None else frozenset(STOPWORDS | LUCENE_STOPWORDS)
    return [t for t in terms if t not in stop]


class _QueryContext:
    """Per-query analysis, computed lazily: terms, full BM25 scores."""

    def __init__(self, env: "StrategyEnv", query: "Query"):
        self.index = env.index
        self.checker = env.retriever.integrity()  # shared with the retrieval that made the run
        self.tokens = self.index.analyze(query.text)
        self.terms = list(dict.fromkeys(self.tokens))
        self._scores: np.ndarray | None = None

    def absent_terms(self, docs: list[int]) -> list[str]:
        wanted = np.asarray(docs, dtype=np.int64)
        absent = []
        for term in self.terms:
            tid = self.index.term_id(term)
            if tid < 0 or not np.isin(self.index.postings(tid)[0], wanted).any():
                absent.append(term)
        return absent

    def best_rank(self, docs: list[int]) -> int:
        """1-based rank of the best of ``docs`` in the full BM25 chunk ranking (ties: lower doc id first)."""
        if self._scores is None:
            self._scores = self.index.score_tokens(self.tokens)
        scores = self._scores
        best = max(docs, key=lambda d: (scores[d], -d))
        s = scores[best]
        return int((scores > s).sum() + ((scores == s) & (np.arange(scores.size) < best)).sum() + 1)


def _page_docs(env: "StrategyEnv") -> dict[str, list[int]]:
    cached = getattr(env, "_page_docs", None)
    if cached is None:
        cached = {}
        for i in range(env.index.n_docs):
            cached.setdefault(env.index.doc(i).page_path, []).append(i)
        env._page_docs = cached  # type: ignore[attr-defined]
    return cached
