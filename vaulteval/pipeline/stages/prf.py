"""Pseudo-relevance feedback (RM3-style): expand the query with weighted terms of its top BM25 documents.

Usage: ``bm25:prf=10`` (``Prf(prf=10, prf_terms=10, prf_weight=0.5)``).

1. BM25 ranks the chunks for the query; the top ``prf`` current chunks are the feedback set.
2. Each feedback chunk ``d`` weighs in by its share of the feedback set's BM25 score, and gives
   each of its terms ``w`` the probability ``tf(w, d) / |d|`` (the chunk's text, analyzed as the
   index was). Their weighted sum is the relevance model; its ``prf_terms`` heaviest terms are
   kept and normalised to sum 1.
3. The new query is ``(1 - prf_weight)`` times the original (each term by its share of the query)
   plus ``prf_weight`` times the relevance model, scaled by the query's length so that
   ``prf_weight=0`` gives BM25's own scores; each document scores the weighted sum of its BM25
   term scores.

Only chunks whose page is unchanged since indexing feed back (a stale chunk's text is never read).

Each candidate's components: ``prf`` (its score for the expanded query, what it is ranked by) and
``bm25`` (its plain BM25 score for the query as written, when BM25 matched it).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.pipeline.stages.bm25 import matched, ranked_bm25
from vaulteval.pipeline.stages.params import Param
from vaulteval.pipeline.stages.base import FirstStage, Ranking, ms_since, register


@register
class Prf(FirstStage):
    name = "prf"
    refines = "bm25"
    needs = frozenset({"bm25"})
    ranked_by = "prf"
    summary = "BM25 with the query expanded by terms of its top BM25 chunks (RM3-style feedback)"
    params = (
        Param("prf", int, 10, "feedback chunks: the top K of the first BM25 ranking", low=1, high=100),
        Param("prf_terms", int, 10, "expansion terms taken from the feedback chunks", low=1, high=100),
        Param("prf_weight", float, 0.5, "weight of the expansion terms against the original query "
              "(0 = plain BM25)", low=0.0, high=1.0),
    )

    @property
    def label(self) -> str:
        return "bm25+prf"

    def run(self, retriever: Any, query: str, depth: int, cache_path: Any) -> Ranking:
        started = time.perf_counter()
        index = retriever.index()
        tokens = index.analyze(query)
        plain = index.score_tokens(tokens)
        first = ranked_bm25(plain, self["prf"] if self["prf_weight"] else depth)
        if not first or not self["prf_weight"]:
            ranked = [(d, {"bm25": v, "prf": v}) for d, v in first[:depth]]
        else:
            weights = expanded_query(index, tokens, self.relevance_model(retriever, first), self["prf_weight"])
            postings = [(*index.postings(tid), w) for tid, w in weights.items()]
            from vaulteval.index import bm25  # numpy: only when the stage runs

            scores = bm25.score_terms(index.n_docs, index.norm(), postings, index.k1)
            ranked = [(d, matched(plain[d], prf=v)) for d, v in ranked_bm25(scores, depth)]
        return Ranking(ranked, "prf", timings_ms={"bm25": ms_since(started)})

    def relevance_model(self, retriever: Any, feedback: list[tuple[int, float]]) -> dict[int, float]:
        """{term id: weight} of the ``prf_terms`` heaviest feedback terms, summing to 1."""
        index, checker = retriever.index(), retriever.integrity()
        docs = []
        for doc, score in feedback:
            rec = checker.current_record(index.doc(doc))
            if rec is not None:
                docs.append((score, index.analyze(rec.get("contextualized_text") or rec["raw_text"])))
        total = sum(score for score, terms in docs if terms)
        model: dict[str, float] = {}
        for score, terms in docs:
            if not terms:
                continue
            share = score / total / len(terms)
            for term in terms:
                model[term] = model.get(term, 0.0) + share
        top = sorted(model.items(), key=lambda kv: (-kv[1], kv[0]))
        kept = [(tid, w) for tid, w in ((index.term_id(t), w) for t, w in top) if tid >= 0][: self["prf_terms"]]
        mass = sum(w for _, w in kept)
        return {tid: w / mass for tid, w in kept} if mass > 0 else {}


def expanded_query(index: Any, tokens: list[str], model: dict[int, float], weight: float) -> dict[int, float]:
    """{term id: weight}: ``(1 - weight)`` x the query's own term shares + ``weight`` x ``model``, x its length."""
    original = index.query_terms(tokens)
    length = sum(qtf for _, qtf in original)
    out = {tid: (1.0 - weight) * qtf for tid, qtf in original}
    for tid, w in model.items():
        out[tid] = out.get(tid, 0.0) + weight * w * length
    return out
