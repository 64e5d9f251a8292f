"""The pseudo-relevance-feedback first stage (``bm25:prf=K``) on the provisioned sample vault."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_fixtures import DESCALING_NOTE, append_text, retrieve_json
from vaulteval import Vault
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.pipeline.stages.prf import Prf, expanded_query
from vaulteval.pipeline.stages.registry import parse_first_stage

QUERY = "descale the espresso machine"


def test_the_grammar_selects_prf_under_bm25() -> None:
    stage = parse_first_stage("bm25:prf=5,prf_terms=8,prf_weight=0.25")
    assert isinstance(stage, Prf) and (stage["prf"], stage["prf_terms"], stage["prf_weight"]) == (5, 8, 0.25)
    assert stage.text() == "bm25:prf=5,prf_terms=8,prf_weight=0.25" and stage.needs == frozenset({"bm25"})
    assert parse_first_stage(stage.text()) == stage
    for bad in ("bm25:prf=0", "bm25:prf=3,prf_weight=1.5", "bm25:prf_terms=5", "bm25:prf=2,w_title=1"):
        with pytest.raises(Exception, match="prf|unknown key"):
            parse_first_stage(bad)


def test_weight_zero_is_plain_bm25(provisioned_sample: Path) -> None:
    retriever = Retriever(Vault(provisioned_sample))
    plain = retriever.index().search(QUERY, k=30)
    ranking = Prf(prf=5, prf_weight=0.0).run(retriever, QUERY, 30, None)
    ranked = ranking.docs
    assert ranking.ranked_by == "prf"
    assert [(d, c["prf"], c["bm25"]) for d, c in ranked] == [(h.doc, h.score, h.score) for h in plain]


def test_the_expanded_query_scores_the_weighted_sum_of_term_scores(provisioned_sample: Path) -> None:
    retriever = Retriever(Vault(provisioned_sample))
    index = retriever.index()
    stage = Prf(prf=3, prf_terms=6, prf_weight=0.5)
    first = index.search(QUERY, k=3)
    model = stage.relevance_model(retriever, [(h.doc, h.score) for h in first])
    assert len(model) == 6 and sum(model.values()) == pytest.approx(1.0)
    tokens = index.analyze(QUERY)
    weights = expanded_query(index, tokens, model, 0.5)
    assert set(weights) == {tid for tid, _ in index.query_terms(tokens)} | set(model)
    # Original terms keep half their count; the expansion adds half the query length of mass.
    assert sum(weights.values()) == pytest.approx(len(index.query_terms(tokens)))
    ranking = stage.run(retriever, QUERY, 20, None)
    ranked = ranking.docs
    assert ranking.ranked_by == "prf"
    prf_scores = [c["prf"] for _, c in ranked]
    assert ranked and prf_scores == sorted(prf_scores, reverse=True)
    by_term = {tid: index.score_tokens([index.term_at(tid)]) for tid in weights}
    plain = index.score_tokens(tokens)
    for doc, components in ranked[:5]:
        assert set(components) <= {"bm25", "prf"} and "dense" not in components
        # bm25 is the chunk's plain score for the query as written (absent when it did not match).
        assert components.get("bm25", 0.0) == pytest.approx(float(plain[doc]))
        assert components["prf"] == pytest.approx(sum(w * by_term[tid][doc] for tid, w in weights.items()))


def test_feedback_reads_only_current_chunks(fresh_vault: Path) -> None:
    index = Retriever(Vault(fresh_vault)).index()
    first = [(h.doc, h.score) for h in index.search(QUERY, k=5)]
    stale = [(d, s) for d, s in first if index.doc(d).page_path == DESCALING_NOTE]
    assert stale and len(stale) < len(first)
    append_text(fresh_vault, DESCALING_NOTE, "\nA line written after indexing.\n")  # its chunks are now stale
    retriever = Retriever(Vault(fresh_vault))
    assert Prf(prf=5).relevance_model(retriever, stale) == {}  # a stale chunk's text is never read
    assert Prf(prf=5).relevance_model(retriever, first)  # the current ones still feed back


def test_retrieve_serves_prf_and_labels_it(provisioned_sample: Path) -> None:
    out = retrieve_json(provisioned_sample, QUERY, "--strategy", "bm25:prf=5")
    assert out["explain"]["first_stage"] == "bm25+prf" and out["strategy"] == "bm25+prf"
    assert out["label"] == {"first_stage": "bm25+prf", "reranker": None, "fallbacks": []}
    assert out["candidates"] and out["candidates"][0]["page_path"] == DESCALING_NOTE
    for cand in out["candidates"]:
        assert cand["score"] == cand["scores"]["prf"]  # ranked by its expanded-query score
