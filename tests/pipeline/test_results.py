"""The result shapes: a candidate's score is its last component, the label's text form, --min-score on score."""

from __future__ import annotations

import pytest

from vaulteval.pipeline.results import Candidate, Label, RetrievalResult


def _cand(name: str, ranked_by: str | None = None, **scores: float) -> Candidate:
    ranked_by = ranked_by or list(scores)[-1]
    return Candidate(f"{name}:0", name, f"wiki/{name}.md", f"/v/wiki/{name}.md", 0, scores, ranked_by, "text")


@pytest.mark.parametrize("scores, ranked_by", [
    ({"bm25": 3.5}, "bm25"),
    ({"dense": 0.41}, "dense"),
    ({"bm25": 3.5, "dense": 0.41}, "dense"),
    ({"dense": 0.41, "fused": 0.0325}, "fused"),
    ({"bm25": 3.5, "dense": 0.41, "fused": 0.7}, "fused"),
])
def test_score_is_the_component_the_stage_ranked_by_and_then_the_rerank(scores: dict, ranked_by: str) -> None:
    cand = _cand("a", ranked_by, **scores)
    assert cand.score == scores[ranked_by] and cand.scores == scores
    cand.set_score("rerank", 0.1234567)
    assert cand.score == cand.scores["rerank"] == 0.123457 and cand.rerank_score == 0.123457


def test_the_json_holds_each_component_once_under_scores() -> None:
    dense_only = _cand("a", dense=0.5)
    assert dense_only.to_dict()["scores"] == {"dense": 0.5} and dense_only.bm25_score == 0.0
    assert dense_only.rerank_score is None  # never a copy of another score
    plain = _cand("b", bm25=2.0).to_dict()
    assert plain["scores"] == {"bm25": 2.0} and plain["score"] == 2.0
    assert not {"bm25_score", "rerank_score", "dense_score"} & set(plain)


@pytest.mark.parametrize("label, text", [
    (Label(), "bm25-only"),
    (Label("bm25", "ollama"), "bm25+rerank:ollama"),
    (Label("bm25", None, [("rerank", "timeout")]), "bm25+noop-rerank:timeout"),
    (Label("bm25", None, [("rerank", "no-candidates")]), "bm25+noop-rerank:no-candidates"),
    (Label("bm25+fields"), "bm25+fields"),
    (Label("bm25", None, [("fields", "no-field-index")]), "bm25+noop-fields:no-field-index"),
    (Label("hybrid:rrf", "sentence-transformers"), "hybrid:rrf+rerank:sentence-transformers"),
    (Label("bm25", None, [("dense", "model-language")]), "bm25+noop-dense:model-language"),
    (Label("hybrid:cc", None, [("fields", "no-field-index"), ("rerank", "timeout")]),
     "hybrid:cc+noop-fields:no-field-index+noop-rerank:timeout"),
])
def test_the_label_text_is_the_v1_strategy_string(label: Label, text: str) -> None:
    assert label.text() == str(label) == text
    assert Label.from_dict(label.to_dict()) == label


def test_failures_leave_out_an_empty_rerank_pool() -> None:
    assert Label("bm25", None, [("rerank", "no-candidates")]).failures == []
    assert Label("bm25", None, [("dense", "timeout"), ("rerank", "model-language")]).failures == [
        "timeout", "model-language"]


def test_min_score_compares_score_and_counts_what_it_dropped() -> None:
    cands = [_cand("a", bm25=9.0, dense=0.8), _cand("b", bm25=12.0, dense=0.5), _cand("c", dense=0.3)]
    result = RetrievalResult("q", Label("dense"), 5, list(cands)).with_min_score(0.5)
    assert [c.page_address for c in result.candidates] == ["a", "b"]  # BM25 12.0 would pass any cosine cut
    assert result.to_dict()["dropped_below_min_score"] == 1 and result.to_dict()["min_score"] == 0.5
    assert result.to_dict()["label"] == {"first_stage": "dense", "reranker": None, "fallbacks": []}
