"""Significance tests, Holm's correction, measures and the comparison report on constructed runs.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_compare.py -q``
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vaulteval.workbench.compare import compare
from vaulteval.workbench.measures import UnknownMeasure, aggregate, negatives, parse_measures, per_query
from vaulteval.querysets.queryset import Query, QuerySet
from vaulteval.workbench.report import markdown_table
from vaulteval.pipeline.results import Label
from vaulteval.workbench.runs import QUERY_COLUMNS, Run
from vaulteval.workbench.stats import holm, paired_test
from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank
from vaulteval.workbench.strategy import Strategy

from evalkit import eval_cache  # noqa: F401


# ---------------------------------------------------------------------- stats

def test_holm_on_a_hand_computed_example() -> None:
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> running max .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    out = holm([0.02, math.nan, 0.01])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_paired_test_matches_scipy_on_known_inputs() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(40)
    b = a - 0.04 + rng.normal(0, 0.08, 40)
    t = paired_test(a, b, seed=3)
    assert t.p_ttest == pytest.approx(stats.ttest_rel(a, b).pvalue)
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), vectorized=True,
                                 permutation_type="samples", n_resamples=9999, rng=np.random.default_rng(3))
    assert t.p_randomization == pytest.approx(ref.pvalue)
    assert t.mean_delta == pytest.approx(np.mean(a - b)) and t.wins + t.ties + t.losses == 40


def test_exact_randomization_by_hand() -> None:
    # four pairs all +1: the sign-flip distribution has 16 equally likely means; |mean| >= 1 in 2 of them
    assert paired_test([1, 1, 1, 1], [0, 0, 0, 0]).p_randomization == pytest.approx(2 / 16)
    t = paired_test([1, 0, 1], [0, 0, 0])
    assert (t.wins, t.ties, t.losses, t.p_randomization) == (2, 1, 0, pytest.approx(0.5))
    same = paired_test([0.3, 0.5], [0.3, 0.5])
    assert (same.p_randomization, same.p_ttest, same.ties) == (1.0, 1.0, 2)


# ------------------------------------------------------------------- measures

def _qs() -> QuerySet:
    queries = [Query("a", "alpha", {"d1": 2, "d2": 1}), Query("b", "beta", {"d3": 1}),
               Query("c", "gamma", {"d4": 1}), Query("n", "nothing here", {})]
    return QuerySet("t", Path("t.yaml"), queries, "sha256:x", "yaml")


def _run(name: str, rows: list[tuple], strategy: Strategy | None = None, labels: dict | None = None,
         pool: list[tuple] | None = None) -> Run:
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])
    run = Run(name, df, strategy)
    if labels is not None:
        run.queries = pd.DataFrame([(q, str(lbl), 1.0, 0.5, 3, 0, lbl.reranked, (lbl.failures or [None])[-1])
                                    for q, lbl in labels.items()], columns=QUERY_COLUMNS)
    if pool is not None:
        run.pool = pd.DataFrame(pool, columns=["query_id", "pool_rank", "bm25_rank", "chunk_id", "doc_id",
                                               "bm25_score", "rerank_score"])
    return run


BASE_ROWS = [("a", "x", 3.0, 1), ("a", "d1", 2.0, 2), ("b", "d3", 5.0, 1), ("n", "x", 9.5, 1)]


def test_measures_by_hand_with_zero_fill_and_negatives_apart() -> None:
    qs = _qs()
    run = _run("bm25", BASE_ROWS)
    pq = per_query(run, qs, ["RR", "P@2", "Success@1", "nDCG@2"])
    value = {(r.query_id, r.measure): r.value for r in pq.itertuples()}
    assert value[("a", "RR")] == 0.5 and value[("b", "RR")] == 1.0 and value[("c", "RR")] == 0.0  # c: nothing returned
    assert value[("a", "P@2")] == 0.5 and value[("a", "Success@1")] == 0.0
    ideal = 2 / math.log2(2) + 1 / math.log2(3)                      # trec_eval gains are the grades
    assert value[("a", "nDCG@2")] == pytest.approx((2 / math.log2(3)) / ideal)
    assert "n" not in set(pq.query_id)
    agg = aggregate(pq).set_index("measure")
    assert agg.loc["RR", "value"] == pytest.approx(0.5) and agg.loc["RR", "n"] == 3
    neg = negatives(run, qs)
    assert neg.to_dict("records") == [{"run": "bm25", "query_id": "n", "n_returned": 1, "top_score": 9.5, "top_doc": "x"}]


def test_measure_strings_parse_and_bad_ones_fail() -> None:
    assert [str(m) for m in parse_measures("nDCG@10,R@100 RR")] == ["nDCG@10", "R@100", "RR"]
    assert [str(m) for m in parse_measures(None, k=5)][:2] == ["nDCG@5", "R@5"]
    with pytest.raises(UnknownMeasure, match="nDGC@10"):
        parse_measures(["nDGC@10"])


def test_ties_in_score_never_reorder_a_run() -> None:
    qs = QuerySet("t", Path("t"), [Query("a", "q", {"d2": 1})], "sha256:x", "yaml")
    run = _run("r", [("a", "d1", 1.0, 1), ("a", "d2", 1.0, 2)])  # trec_eval would put d2 first
    assert per_query(run, qs, ["RR"]).value.tolist() == [0.5]


# -------------------------------------------------------------------- compare

def test_compare_deltas_wins_and_report_outputs(tmp_path: Path) -> None:
    qs = _qs()
    base = _run("bm25", BASE_ROWS)
    better = _run("better", [("a", "d1", 1.0, 1), ("b", "d3", 1.0, 1), ("c", "d4", 1.0, 1)])
    report = compare([base, better], qs, ["RR"], k=10)
    row = report.to_dataframe().set_index("run").loc["better"]
    assert row.delta == pytest.approx((0.5 + 0 + 1) / 3) and (row.wins, row.ties, row.losses) == (2, 1, 0)
    pq = report.per_query
    assert row.p == pytest.approx(stats.ttest_rel(pq.value, pq.baseline).pvalue) and row.status == "ok"
    assert row.comparisons == 1 and row.verdict == "no detectable difference" and row.more_queries >= 1
    assert report.to_dataframe().set_index("run").loc["bm25", "status"] == "baseline"
    md = report.to_markdown()
    assert "| better" in md and "## Negative queries" in md and "<table" in report._repr_html_()
    for ext in ("md", "html", "json", "csv"):
        assert report.save(tmp_path / f"r.{ext}").stat().st_size > 0
    assert json.loads((tmp_path / "r.json").read_text())["baseline"] == "bm25"
    deltas = report.per_query.set_index("query_id")
    assert deltas.loc["c", "delta"] == 1.0


def test_fallen_back_reranker_is_flagged_never_no_impact() -> None:
    qs = _qs()
    rr = Strategy(name="rr", reranker=EmbeddingRerank())
    fell = _run("rr", BASE_ROWS, rr, labels={q: Label(fallbacks=[("rerank", "ollama-unreachable")]) for q in "abcn"})
    report = compare([_run("bm25", BASE_ROWS), fell], qs, ["RR"])
    row = report.to_dataframe().set_index("run").loc["rr"]
    assert row.status == "fallback: ollama-unreachable (4/4 queries)"
    assert math.isnan(row.delta) and pd.isna(row.wins) and math.isnan(row.p) and pd.isna(row.verdict)
    assert any("rr: fallback" in n for n in report.notes) and "WARNING rr" in report.to_markdown()


def test_rescued_and_lost_pages_in_the_report() -> None:
    qs = _qs()
    rr = Strategy(name="rr", reranker=EmbeddingRerank())
    pool = [("a", 1, 2, "c1", "d1", 1.0, 0.9), ("a", 2, 1, "c0", "x", 2.0, 0.1),
            ("b", 1, 2, "c2", "y", 1.0, 0.9), ("b", 2, 1, "c3", "d3", 5.0, 0.5)]
    run = _run("rr", [("a", "d1", 0.9, 1), ("a", "x", 0.1, 2), ("b", "y", 0.9, 1), ("b", "d3", 0.5, 2)], rr,
               labels={q: Label(reranker="ollama") for q in "abc"}, pool=pool)
    table = compare([_run("bm25", BASE_ROWS), run], qs, ["RR"], k=1)["rerank"].iloc[0]
    assert (table["rescued@1"], table["lost@1"], table.net) == (1, 1, 0)
    assert table.rescued_pages == "a:d1" and table.lost_pages == "b:d3"
    assert table.queries_reranked == 3


def test_markdown_table_aligns_numbers() -> None:
    text = markdown_table(pd.DataFrame({"run": ["a|b"], "value": [0.123456]}))
    assert text.splitlines() == ["| run  |  value |", "| ---- | -----: |", "| a\\|b | 0.1235 |"]


def test_compare_reports_the_t_interval_p_verdict_and_what_the_set_can_detect() -> None:
    from vaulteval.workbench.intervals import detectable_at, mean_ci

    qs = _qs()
    better = _run("better", [("a", "d1", 3.0, 1), ("b", "d3", 5.0, 1), ("c", "d4", 1.0, 1)])
    report = compare([_run("bm25", BASE_ROWS), better], qs, ["RR", "Success@1"], seed=2)
    summary = report.to_dataframe().set_index(["run", "measure"])
    row = summary.loc[("better", "Success@1")]
    base_hits, run_hits = np.array([0.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.0])  # queries a, b, c
    ci = stats.ttest_rel(run_hits, base_hits).confidence_interval(0.95)
    assert (row.delta_ci_low, row.delta_ci_high) == pytest.approx((ci.low, ci.high))
    assert (row.ci_low, row.ci_high) == pytest.approx(mean_ci(run_hits, seed=2))
    assert row.verdict == "no detectable difference" and row.delta_ci_low < 0 < row.delta_ci_high
    assert row.mde == pytest.approx(detectable_at(float(np.std(run_hits - base_hits, ddof=1)), 3))
    assert any(n.startswith("with 3 queries a difference under") and "Success@1" in n for n in report.notes)
    assert "p_mcnemar" not in report.to_dataframe().columns  # one test per comparison


def test_three_runs_are_corrected_together_by_bonferroni() -> None:
    qs = _qs()
    runs = [_run("bm25", BASE_ROWS), _run("better", [("a", "d1", 3.0, 1), ("b", "d3", 5.0, 1), ("c", "d4", 1.0, 1)]),
            _run("same", BASE_ROWS)]
    report = compare(runs, qs, ["RR"])
    summary = report.to_dataframe().set_index("run")
    row = summary.loc["better"]
    pq = report.per_query[report.per_query.run == "better"]
    raw = stats.ttest_rel(pq.value, pq.baseline)
    ci = raw.confidence_interval(1 - 0.05 / 2)
    assert row.comparisons == 2 and row.p == pytest.approx(min(1.0, 2 * raw.pvalue))
    assert (row.delta_ci_low, row.delta_ci_high) == pytest.approx((ci.low, ci.high))
