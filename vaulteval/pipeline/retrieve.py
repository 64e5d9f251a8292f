"""The retrieval pipeline: first stage -> verify (drop stale) -> optional rerank -> dedupe by page -> top.

Usage::

    retriever = Retriever(vault)               # opens the index once, on first use
    result = retriever.retrieve("descale the espresso machine", top=5, pipeline=Pipeline.parse("hybrid:cc"))

``retrieve(vault, query, ...)`` is the one-shot form; the result types are in ``vaulteval.pipeline.results``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.errors import NotProvisioned, UsageError
from vaulteval.chunks.integrity import IntegrityChecker
from vaulteval.index.reader import BM25Index, Hit, open_index
from vaulteval.pipeline.loadonce import Loads
from vaulteval.pipeline.passages import Passages, TextMemo
from vaulteval.pipeline.results import NO_CANDIDATES, Candidate, Label, Ranking, RetrievalResult, Stopwatch
from vaulteval.pipeline.spec import DEFAULT_DEPTH
from vaulteval.vault.paths import cached_lexical_path
from vaulteval.index.tokenize import check_length

if TYPE_CHECKING:
    from typing import Any

    from vaulteval.chunks.location import NoteLayouts
    from vaulteval.pipeline.firststage import FirstStage
    from vaulteval.pipeline.spec import Pipeline
    from vaulteval.pipeline.stages.base import Reranker
    from vaulteval.embeddings.store import EmbeddingStore
    from vaulteval.vault.vault import Vault

__all__ = ["Candidate", "Label", "RetrievalResult", "Retriever", "retrieve", "check_limit", "check_query"]

MAX_TOP = 1000
SHALLOW_PAGES = 4  # hits ranked per wanted page before the full depth (a page has a few chunks)


def check_limit(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP:
        raise UsageError(f"{name} must be a whole number from 1 to {MAX_TOP}, got {value!r}")
    return value


def check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise UsageError("the query is empty; pass the text to search for")
    check_length(query, "the query")
    return query


class Retriever:
    """A vault opened for queries: its verified index and integrity checker, each opened once.

    Usage: ``Retriever(vault).retrieve("query", top=5)``. Evaluation shares one index and checker across views
    of the same meta dir through ``index=`` and ``integrity=``. Threads may share one: each part (index, fields,
    store) is loaded by the first caller while the others wait for it (``vaulteval.pipeline.loadonce``).

    ``warm`` (the default) is for a Retriever kept open for many queries: numpy is loaded once, before the first
    query is scored, and the integrity checker remembers each verified file by its stat signature.
    ``retrieve(vault, ...)``, the one-shot form a CLI call uses, opens a cold one: plain-Python scoring and no
    numpy import for an ordinary query.
    """

    def __init__(self, vault: "Vault", *, index: BM25Index | None = None,
                 integrity: IntegrityChecker | None = None, store_meta: Path | None = None, warm: bool = True):
        self.vault = vault
        self.warm = warm
        self._index = index
        self._integrity = integrity
        self._store_meta = store_meta  # where the stored embeddings are (default: the vault view's meta dir)
        self._store = None
        self._store_docs: list[int] | None = None
        self._fields: Any = False
        self._layouts: "NoteLayouts | None" = None
        self._embed_cache: Path | None | bool = False  # query_embed_cache(vault), worked out once
        self.text_memo = TextMemo()  # chunk sentences and terms for snippets and matched terms, across queries
        self._loads = Loads()

    def store(self) -> "EmbeddingStore":
        """The verified embedding store (exit 10 naming ``provision --embed`` when missing or corrupt)."""
        if self._store is None:
            from vaulteval.pipeline.embed import open_vault_store

            self._loads.fill(self, "_store", lambda: open_vault_store(self.vault, self._store_meta))
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
            from vaulteval.pipeline.embed import stored_docs

            self._loads.fill(self, "_store_docs", lambda: stored_docs(self.index(), self.store()))
        return self._store_docs

    def onnx_dir(self) -> Path:
        """Where provisioning put the ONNX export of the stored embeddings' model (queries embed without torch)."""
        return (self._store_meta or self.vault.meta_dir) / "onnx"

    def fields(self) -> Any:
        """The field index (title, aliases, headings, code) when provisioned and current, else None."""
        if self._fields is False:
            from vaulteval.index.fields import open_fields

            self._loads.fill(self, "_fields", lambda: open_fields(self.vault.meta_dir, self.index()), unset=False)
        return self._fields

    def index(self) -> BM25Index:
        """The verified BM25 index (exit 10 with the rebuild command when it is missing or corrupt)."""
        if self._index is None:
            self._loads.fill(self, "_index", self._pinned_index)
        return self._index

    def _pinned_index(self) -> BM25Index:
        for _ in range(3):
            index = open_index(self.vault)
            try:
                # Hold the generation: its segments stay readable even when a writer removes them later.
                self.integrity().store().pin(index.header.get("store") or [])
            except FileNotFoundError:
                continue  # a newer generation was published and this one removed meanwhile: open that one
            except OSError:
                pass  # a segment that is not one: its records are refused when served
            break
        return index

    def open(self, *, analyzers: bool = True) -> BM25Index:
        """The index with its scorer chosen: a warm Retriever loads numpy and preloads every posting's weight now,
        not in its first query (exit 10 as ``index()``, and for an index without chunks). With ``analyzers`` it
        also loads the query analyzers of the index's languages (a segmenter's dictionary takes a second or more),
        which a query otherwise loads when it first holds text of that script."""
        index = _open_index(self)
        if analyzers and self.warm:
            from vaulteval.index.analysis import lookup

            self._loads.run("analyzers", lambda: lookup(index.analyzer_name).warm(index.header))
        if self.warm:
            import gc

            gc.collect()  # what opening left for the collector, collected now rather than in the first queries
        return index

    def note_layouts(self) -> "NoteLayouts":
        """Where served chunks sit in their notes, remembered across queries (keyed by each note's bytes)."""
        if self._layouts is None:
            from vaulteval.chunks.location import NoteLayouts

            self._layouts = NoteLayouts()
        return self._layouts

    def integrity(self) -> IntegrityChecker:
        """The checker that verifies candidates against chunk files and pages (remembers verdicts)."""
        if self._integrity is None:
            self._loads.fill(self, "_integrity", lambda: IntegrityChecker(self.vault, many_queries=self.warm))
        return self._integrity

    def retrieve(self, query: str, **options: Any) -> "RetrievalResult":
        """Usage: ``retriever.retrieve("query", top=5, rerank=None)`` -> RetrievalResult."""
        return _run(self, query, **options)

    def __repr__(self) -> str:
        return f"Retriever({self.vault!r})"


def retrieve(source: "Vault | Retriever", query: str, **options: Any) -> RetrievalResult:
    """Usage: ``retrieve(vault, "query", top=5)``: one query; pass a Retriever to reuse its opened index."""
    retriever = source if isinstance(source, Retriever) else Retriever(source, warm=False)
    return retriever.retrieve(query, **options)


def _run(retriever: Retriever, query: str, *, top: int = 5, bm25_top: int = DEFAULT_DEPTH,
         rerank: "Reranker | None | bool" = None, explain: bool = False,
         embed_cache: Path | None | str = "default", first: "FirstStage | None" = None,
         bm25_hits: "list[Hit] | None" = None, pipeline: "Pipeline | None" = None) -> RetrievalResult:
    """Run the pipeline's steps; ``rerank=None`` (or ``False``) keeps the first-stage order.

    ``pipeline`` (``vaulteval.pipeline.spec``) gives the first stage, the reranker and the depth at once;
    else ``first`` picks the first stage (BM25 when None), ``bm25_top`` its depth and ``rerank`` the reranker.

    ``embed_cache``: ``"default"`` is this vault's query cache in the user's cache folder, never under the vault
    (``vaulteval.vault.usercache``); evaluation passes its own; ``None`` caches nothing. ``bm25_hits``: this
    query's BM25 hits when a batch scorer computed them. Without rerank and explain, ``pool`` ends at the hit that
    completed the ``top`` pages (the rest are neither read nor verified).
    """
    if pipeline is not None:
        first, rerank, bm25_top = pipeline._first, pipeline.reranker, pipeline.depth
    rerank = _validate(query, top, bm25_top, rerank)
    watch = Stopwatch()
    index = _open_index(retriever)
    watch.lap("index_open")
    cache = embed_cache
    if embed_cache == "default":
        embeds = rerank is not None or (first is not None and first.embeds_query)
        cache = _default_cache(retriever) if embeds else None  # a query that embeds nothing makes no folder
    # Without rerank or explain only the first `top` current pages are read and verified, so plain BM25 first
    # ranks a shallower list, a prefix of the full one (hits are in one total order); it goes the full depth
    # only when that prefix runs out before `top` pages are served.
    served_only = rerank is None and not explain
    plain = (first is None or first.plain) and bm25_hits is None
    shallow = min(bm25_top, SHALLOW_PAGES * top) if served_only and plain else bm25_top
    ranking = _first_stage(retriever, query, first, shallow, cache, bm25_hits)
    watch.lap("bm25", parts=ranking.timings_ms)
    passages = Passages(query, index, retriever.vault, retriever.note_layouts, retriever.text_memo)
    pool, texts, stale = _verify(retriever, ranking, top if served_only else None, passages,
                                 final=shallow == bm25_top or len(ranking.docs) < shallow)
    if shallow < bm25_top and len(pool) < top and len(ranking.docs) == shallow:
        ranking = _first_stage(retriever, query, first, bm25_top, cache, bm25_hits)
        pool, texts, stale = _verify(retriever, ranking, top, passages)
    watch.lap("integrity")
    label = Label(ranking.first_stage, None, ranking.fallbacks)
    ranked, rerank_model = _rerank(retriever, query, pool, texts, rerank, cache, label)
    watch.lap("rerank", ran=rerank is not None)
    deduped = _dedupe(ranked)
    watch.lap("dedupe")
    info = None
    if explain:
        info = _explain(index.analyzer_name, ranking, label, ranked, deduped, bm25_top, rerank_model, stale,
                        watch.done())
    return _assemble(query, label, top, ranked, deduped, info)


def _default_cache(retriever: Retriever) -> Path | None:
    """The query path's embedding cache, outside the vault (``vault/usercache``); None caches nothing."""
    if retriever._embed_cache is False:
        from vaulteval.vault.usercache import query_embed_cache

        retriever._embed_cache = query_embed_cache(retriever.vault)
    return retriever._embed_cache


def _validate(query: str, top: int, bm25_top: int, rerank: "Reranker | None | bool"):
    """Check the request before any work: the query, the limits, and the reranker's settings (no connection yet)."""
    check_query(query)
    check_limit("--top", top)
    check_limit("--bm25-top", bm25_top)
    if rerank is None or rerank is False:  # False reads as "no rerank", like None
        return None
    if getattr(rerank, "role", None) != "rerank":
        raise UsageError(f"rerank must be a reranker of the stage registry (vaulteval.pipeline.stages), got {rerank!r}")
    return rerank.checked()


def _open_index(retriever: Retriever) -> BM25Index:
    index = retriever.index()
    retriever._loads.run("scorer", lambda: index.choose_scorer(warm=retriever.warm))  # once, before any scoring
    if retriever.warm:
        retriever.integrity().hold_store()  # once, with the index's segments pinned: records read from memory
    if index.n_docs == 0:
        raise NotProvisioned(f"the index has no chunks (no notes with text under {retriever.vault.notes_label}?)",
                             rebuild=retriever.vault.rebuild_command())
    return index


def _first_stage(retriever: Retriever, query: str, first: "FirstStage | None", depth: int, cache: Path | None,
                 bm25_hits: "list[Hit] | None") -> Ranking:
    """The first stage's ``Ranking``: documents best first as ``(doc, scores)``, and how they were ranked."""
    if first is None or first.plain:
        # Plain BM25 stays on the index's own search (plain Python, no numpy) and reuses batch hits.
        found = retriever.index().search(query, k=depth) if bm25_hits is None else bm25_hits[:depth]
        return Ranking([(h.doc, {"bm25": h.score}) for h in found], "bm25", first_stage="bm25")
    from vaulteval.pipeline.firststage import first_stage

    return first_stage(retriever, query, first, depth, cache)


def _verify(retriever: Retriever, ranking: Ranking, pages_wanted: int | None,
            passages: Passages | None = None, final: bool = True) -> tuple[list[Candidate], list[str], int]:
    """Candidates whose chunk and note still match the index, in first-stage order; their texts; stale count.

    With ``pages_wanted`` only the first chunk of each page is read, and
    reading stops once that many pages are served. Not ``final``: a shallow list, which a deeper one may follow
    (its missing records are not yet an error).
    """
    index, vault = retriever.index(), retriever.vault
    checker = retriever.integrity().query()  # one stat per file for the whole query
    if passages is not None:
        passages.check = checker  # a served chunk's place in its note is looked up by the signature verified here
    pool: list[Candidate] = []
    texts: list[str] = []
    stale = orphaned = 0
    pages: set[str] = set()
    # Obsidian's exclusions as they are now: a note excluded after the build is never served.
    excluded = vault.ignore.excluded if vault.ignore else None
    for doc_number, scores in ranking.docs:
        doc = index.doc(doc_number)
        if pages_wanted is not None and doc.page_path in pages:
            continue
        if excluded is not None and excluded(doc.page_path):
            stale += 1
            continue
        rec = checker.current_record(doc)
        if rec is None:
            stale += 1
            if checker.record(doc) is None:
                orphaned += 1  # the chunk record itself is gone or rewritten, not just its page edited
            continue
        raw = rec["raw_text"]
        absolute = cached_lexical_path(vault.notes_dir, doc.page_path, vault.notes_strip)
        context = rec.get("contextualized_text") or raw
        pool.append(Candidate(doc.chunk_id, doc.page_address, doc.page_path, absolute, doc.chunk_index,
                              scores, ranking.ranked_by, raw, context=context, passages=passages, doc=doc_number))
        texts.append(context)
        if pages_wanted is not None:
            pages.add(doc.page_path)
            if len(pages) == pages_wanted:
                break
    if orphaned and not pool and final:
        # An index whose chunk records are gone (deleted by another tool or by hand) must not look like
        # "no such notes": the answer would be an empty success for every query.
        raise NotProvisioned(f"the index names chunk records that are missing or were rewritten ({orphaned} of "
                             f"{len(ranking.docs)} candidates, under {vault.meta_dir / 'store'})",
                             rebuild=vault.rebuild_command())
    return pool, texts, stale


def _rerank(retriever: Retriever, query: str, pool: list[Candidate], texts: list[str],
            reranker: "Reranker | None", cache: Path | None, label: Label) -> tuple[list[Candidate], str | None]:
    """The pool reordered by rerank cosine (stable: ties keep first-stage order), and the model.

    Records on ``label`` the backend that reranked, or why the first-stage
    order was kept.
    """
    if reranker is None:
        return pool, None
    if not pool:
        label.fallbacks += (("rerank", NO_CANDIDATES),)  # nothing to rerank; never counted as a rerank
        return pool, reranker.model_name
    # The step talks to the registry's Reranker protocol: another reranker is one class in pipeline/stages/.
    outcome = reranker.rerank(query, texts, cache, store=retriever.optional_store(),
                              onnx_dir=retriever.onnx_dir())
    if outcome.scores is None:
        label.fallbacks += (("rerank", outcome.fallback_reason),)
        for cand in pool:
            cand.rerank_source = f"noop:{outcome.fallback_reason}"
        return pool, outcome.model
    label.reranker = outcome.source
    for cand, score in zip(pool, outcome.scores):
        cand.set_score("rerank", score)
        cand.rerank_source = outcome.source
    return sorted(pool, key=lambda c: -c.score), outcome.model


def _dedupe(ranked: list[Candidate]) -> list[Candidate]:
    """The first (best) chunk of each page, in order."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for cand in ranked:
        if cand.page_path not in seen:
            seen.add(cand.page_path)
            out.append(cand)
    return out


def _assemble(query: str, label: Label, top: int, ranked: list[Candidate], deduped: list[Candidate],
              info: "dict[str, Any] | None") -> RetrievalResult:
    """The answer: the best ``top`` pages; the whole ranked pool stays attached for evaluation."""
    return RetrievalResult(query=query, label=label, top_k=top, candidates=deduped[:top], explain=info, pool=ranked)


def _explain(analyzer: str, ranking: Ranking, label: Label, ranked: list[Candidate],
             deduped: list[Candidate], bm25_top: int, rerank_model: str | None, stale: int,
             timings: "dict[str, float]") -> "dict[str, Any]":
    """The ``explain`` object: counts, settings and per-stage timings."""
    first_fallbacks = [reason for stage_name, reason in label.fallbacks if stage_name != "rerank"]
    return {
        "bm25_candidate_count": len(ranking.docs),
        "post_rerank_count": len(ranked),
        "deduped_count": len(deduped),
        "bm25_top_param": bm25_top,
        "rerank_model": rerank_model,
        "stale_candidates_skipped": stale,
        "analyzer": analyzer,
        "first_stage": label.first_stage,
        "first_stage_fallback": first_fallbacks[-1] if first_fallbacks else None,
        "embedding_model": ranking.embedding_model,
        "timings_ms": timings,
    }

