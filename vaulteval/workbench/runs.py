"""Runs: the page rankings a strategy returned for every query, with its pool and timings.

Usage::

    run = run_strategy(vault, queryset, Strategy.parse("bm25:analyzer=english"))
    run.df              # query_id, doc_id, score, rank   (doc_id = page path)
    run.to_trec("runs/x/bm25-english.trec");  Run.from_trec("runs/x/bm25-english.trec")

``score`` is the candidate's ``score``: what the pipeline ranked it by (the
rerank cosine, the fused score, the dense cosine or BM25). Metrics follow
``rank`` (the pipeline's order), so ties in score never reorder a run; TREC
files keep the real score and the rank column. ``pool`` holds the chunk
candidates in final order (``pool_rank``) with their BM25 order
(``bm25_rank``); ``queries`` holds per query the label's text (for people),
whether it was ``reranked``, the ``fallback`` reason when a stage fell back,
and latencies.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import Query, QuerySet
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.workspace import StrategyEnv, Workspace

RUN_COLUMNS = ["query_id", "doc_id", "score", "rank"]
POOL_COLUMNS = ["query_id", "pool_rank", "bm25_rank", "chunk_id", "doc_id", "bm25_score", "rerank_score", "score",
                "dense_score", "fused_score"]
QUERY_COLUMNS = ["query_id", "label", "latency_ms", "rerank_ms", "pool_chunks", "stale", "reranked", "fallback"]


@dataclass(eq=False)
class Run:
    """One strategy's results; ``name`` labels it in every table."""

    name: str
    df: "pd.DataFrame"
    strategy: "Strategy | None" = None
    pool: "pd.DataFrame | None" = None
    queries: "pd.DataFrame | None" = None
    env: "StrategyEnv | None" = field(default=None, repr=False, compare=False)

    # -- views ----------------------------------------------------------------
    def ranking(self, query_id: str) -> list[str]:
        """Usage: ``run.ranking("q01")`` -> page paths in rank order."""
        rows = self.df[self.df.query_id == query_id].sort_values("rank")
        return rows.doc_id.tolist()

    def rankings(self) -> dict[str, list[str]]:
        ordered = self.df.sort_values(["query_id", "rank"])
        return {qid: grp.doc_id.tolist() for qid, grp in ordered.groupby("query_id", sort=False)}

    def bm25_rankings(self) -> dict[str, list[str]] | None:
        """Page rankings in BM25 order over the same pool (the baseline of a reranked run), or None."""
        if self.pool is None:
            return None
        out: dict[str, list[str]] = {}
        for qid, grp in self.pool.sort_values(["query_id", "bm25_rank"]).groupby("query_id", sort=False):
            out[qid] = list(dict.fromkeys(grp.doc_id.tolist()))
        return out

    def pool_pages(self) -> dict[str, list[str]]:
        """Deduped pages of each query's candidate pool, in final order."""
        if self.pool is None:
            return {}
        ordered = self.pool.sort_values(["query_id", "pool_rank"])
        return {qid: list(dict.fromkeys(grp.doc_id.tolist())) for qid, grp in ordered.groupby("query_id", sort=False)}

    @property
    def labels(self) -> Counter:
        return Counter() if self.queries is None else Counter(self.queries.label.tolist())

    @property
    def reranked_queries(self) -> set[str]:
        """Ids of the queries whose candidates a reranker reordered."""
        if self.queries is None:
            return set()
        return set(self.queries.query_id[self.queries.reranked.astype(bool)])

    @property
    def reranked(self) -> bool:
        return self.strategy is not None and self.strategy.reranker is not None

    @property
    def uses_model(self) -> bool:
        """True when an embedding model takes part: a rerank, dense or hybrid."""
        return self.strategy is not None and self.strategy.semantic

    @property
    def fallback(self) -> str | None:
        """``"fallback: ollama-unreachable (74/74 queries)"`` when any query's model stage fell back, else None.

        The reasons are the queries' ``fallback`` column (a rerank, dense or
        hybrid stage that could not run, e.g. model-language).
        """
        if not self.uses_model or self.queries is None:
            return None
        reasons = Counter(r for r in self.queries.fallback if isinstance(r, str) and r)
        if not reasons:
            return None
        total = int((self.queries.pool_chunks > 0).sum())  # an empty pool has nothing to rerank
        text = ", ".join(f"{r} ({n}/{total} queries)" for r, n in reasons.most_common())
        return f"{'fallback' if sum(reasons.values()) == total else 'partial fallback'}: {text}"

    @property
    def fully_fell_back(self) -> bool:
        return bool(self.fallback) and self.fallback.startswith("fallback:")

    def scored_docs(self) -> list:
        """ir_measures ScoredDocs whose scores follow ``rank`` (ties in the real score cannot reorder)."""
        from ir_measures import ScoredDoc

        return [ScoredDoc(q, d, float(-r)) for q, d, r in zip(self.df.query_id, self.df.doc_id, self.df["rank"])]

    # -- TREC -----------------------------------------------------------------
    def to_trec(self, path: str | os.PathLike[str]) -> Path:
        """Write ``qid Q0 doc rank score name``; spaces (and %) in doc ids are percent-encoded."""
        target = Path(path)
        lines = [f"{q} Q0 {encode_doc_id(d)} {int(r)} {float(s)!r} {self.name}\n"
                 for q, d, s, r in self.df.sort_values(["query_id", "rank"])[RUN_COLUMNS].itertuples(index=False)]
        target.write_text("".join(lines), encoding="utf-8")
        return target

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Usage: ``run.save("runs/bm25.trec")``: the TREC file ``from_trec`` reads back."""
        return self.to_trec(path)

    @classmethod
    def from_trec(cls, path: str | os.PathLike[str], name: str | None = None) -> "Run":
        """Usage: ``Run.from_trec("bm25.trec")``; the rank column is kept, doc ids are decoded.

        A file that is not a TREC run raises one UsageError naming the file, the line and the fix.
        """
        import pandas as pd

        from vaulteval.workbench.trec import read_trec

        rows, found = read_trec(Path(path))
        return cls(name or found or Path(path).stem, pd.DataFrame(rows, columns=RUN_COLUMNS))


_ENCODE = re.compile(r"[%\s\x00-\x1f\x7f]")


def encode_doc_id(doc_id: str) -> str:
    """Usage: ``encode_doc_id("wiki/a b.md")`` -> ``"wiki/a%20b.md"`` (only %, whitespace, controls)."""
    return _ENCODE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8")), doc_id)


@dataclass
class RunRows:
    """The raw rows of a run (or of one shard of its queries), as plain tuples that pickle cheaply.

    Shards of one strategy are concatenated in query-set order and turned into
    a Run once, so a run made of shards is built exactly like a serial one.
    """

    ranked: list[tuple] = field(default_factory=list)
    pool: list[tuple] = field(default_factory=list)
    trace: list[tuple] = field(default_factory=list)

    @classmethod
    def concat(cls, parts: "list[RunRows]") -> "RunRows":
        out = cls()
        for part in parts:
            out.ranked += part.ranked
            out.pool += part.pool
            out.trace += part.trace
        return out

    def to_run(self, strategy: "Strategy", env: "StrategyEnv | None") -> Run:
        import pandas as pd

        return Run(name=strategy.name, df=pd.DataFrame(self.ranked, columns=RUN_COLUMNS), strategy=strategy,
                   pool=pd.DataFrame(self.pool, columns=POOL_COLUMNS),
                   queries=pd.DataFrame(self.trace, columns=QUERY_COLUMNS), env=env)


def run_strategy(vault: "Vault", queryset: "QuerySet", strategy: "Strategy", *,
                 workspace: "Workspace | None" = None, progress: bool = False) -> Run:
    """Retrieve every query with the strategy; the index is opened once (built in the cache if needed)."""
    from vaulteval.workbench.workspace import Workspace

    ws = workspace or Workspace(vault)
    env = ws.env(strategy)
    rows = retrieve_rows(env, queryset.queries, strategy, ws.cache_dir / "embeddings.sqlite", progress=progress)
    return rows.to_run(strategy, env)


def retrieve_rows(env: "StrategyEnv", queries: "list[Query]", strategy: "Strategy", embed_cache: Path, *,
                  progress: bool = False) -> RunRows:
    """Usage: ``retrieve_rows(ws.env(s), qs.queries[:10], s, cache)``: the rows of those queries, in order."""
    from vaulteval.workbench.batch import batch_search

    # Plain BM25 for every query in one vectorised pass; the pipeline then checks, reranks and dedupes each.
    plain = strategy.first_stage().plain
    hits = batch_search(env.index, [q.text for q in queries], k=strategy.bm25_top) if plain else [None] * len(queries)
    rows = RunRows()
    for q, q_hits in zip(_progress(queries, progress, strategy.name), hits):
        started = time.perf_counter()
        res = run_query(env, q, strategy, embed_cache, bm25_hits=q_hits)
        latency = (time.perf_counter() - started) * 1000.0
        label = res.label
        for rank, cand in enumerate(res.candidates, 1):
            rows.ranked.append((q.query_id, cand.page_path, cand.score, rank))
        bm25_pos = _bm25_positions(env, q.text, strategy.bm25_top, res.pool, q_hits) if label.reranked else None
        for pos, cand in enumerate(res.pool, 1):
            bm25_rank = bm25_pos[cand.chunk_id] if bm25_pos is not None else pos
            rows.pool.append((q.query_id, pos, bm25_rank, cand.chunk_id, cand.page_path, cand.bm25_score,
                              cand.scores.get("rerank"), cand.score, cand.scores.get("dense"),
                              cand.scores.get("fused")))
        timings = (res.explain or {}).get("timings_ms", {})
        failures = label.failures
        rows.trace.append((q.query_id, label.text(), round(latency, 3), timings.get("rerank"), len(res.pool),
                           (res.explain or {}).get("stale_candidates_skipped", 0), label.reranked,
                           failures[-1] if failures else None))
    return rows


def run_query(env: "StrategyEnv", query: "Query", strategy: "Strategy", embed_cache: Path, *,
              bm25_hits: list[Any] | None = None) -> Any:
    """One query run exactly as ``eval run`` runs it: the strategy's first stage, reranker and depths.

    Usage: ``run_query(ws.env(s), q, s, ws.cache_dir / "embeddings.sqlite").candidates``; pooling uses it too,
    so a pooled page is one the strategy's evaluated run ranks."""
    try:
        return env.retriever.retrieve(query.text, top=strategy.top, pipeline=strategy.pipeline, explain=True,
                                      embed_cache=embed_cache, bm25_hits=bm25_hits)
    except UsageError as exc:
        raise UsageError(f"query {query.query_id}: {exc}") from None


def _bm25_positions(env: "StrategyEnv", text: str, bm25_top: int, pool: list[Any],
                    hits: list[Any] | None = None) -> dict[str, int]:
    """Each pool chunk's position in BM25 order (stale hits skipped, as the pipeline skips them).

    A reranked dense or hybrid pool holds chunks BM25 did not rank in its top: they follow, in pool order."""
    in_pool = {c.chunk_id for c in pool}
    if hits is None:
        hits = env.index.search(text, k=bm25_top)
    order = [env.index.doc(h.doc).chunk_id for h in hits]
    ranks = list(dict.fromkeys([*(cid for cid in order if cid in in_pool), *(c.chunk_id for c in pool)]))
    return {cid: i for i, cid in enumerate(ranks, 1)}


def _progress(items: list, enabled: bool, desc: str):
    if not enabled:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="query", delay=2.0, leave=False)
