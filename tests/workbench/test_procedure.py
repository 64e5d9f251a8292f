"""One procedure per comparison: for random paired scores and any number of strategies, no printed line
contradicts another (the interval, the p value, the verdict, what the set detects and the queries it needs).

Usage: ``.venv/bin/python -m pytest tests/workbench/test_procedure.py -q``
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from vaulteval.workbench.procedure import (ALPHA, BETTER, UNDECIDED, WORSE, comparison_line, contradiction,
                                           paired_comparison, printed_contradictions)

from hypothesis_budget import examples

# Scores on a coarse grid (as nDCG, RR and Success are), so ties and equal differences are common.
SCORE = st.integers(0, 20).map(lambda i: i / 20)


@st.composite
def evaluations(draw: st.DrawFn) -> tuple[np.ndarray, list[np.ndarray]]:
    n = draw(st.integers(2, 40))
    base = np.array(draw(st.lists(SCORE, min_size=n, max_size=n)))
    runs = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["random", "shifted", "same"]))
        if kind == "same":
            runs.append(base.copy())
        elif kind == "shifted":  # a run built to be better or worse by a fixed amount, clipped to [0, 1]
            runs.append(np.clip(base + draw(st.sampled_from([-0.5, -0.2, 0.2, 0.5])), 0, 1))
        else:
            runs.append(np.array(draw(st.lists(SCORE, min_size=n, max_size=n))))
    return base, runs


@settings(max_examples=max(examples(), 100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evaluations())
def test_no_printed_line_contradicts_another(data: tuple[np.ndarray, list[np.ndarray]]) -> None:
    base, runs = data
    m = len(runs)
    for i, run in enumerate(runs):
        c = paired_comparison(run, base, comparisons=m)
        row = {**c.as_row(), "run": f"r{i}", "baseline": "base", "measure": "nDCG@10"}
        assert contradiction(row) is None, (row, contradiction(row))
        line = comparison_line(row)
        assert printed_contradictions(line) == [], line
        if c.verdict == UNDECIDED:
            assert c.more_queries is not None and c.more_queries >= 1 and "more queries" in line
            assert c.delta_ci_low <= 0 <= c.delta_ci_high or math.isnan(c.delta_ci_low)
        else:
            assert (c.delta_ci_low > 0) == (c.verdict == BETTER) and (c.delta_ci_high < 0) == (c.verdict == WORSE)
            assert c.p < ALPHA and c.mde is None and c.more_queries is None
            assert "needs" not in line and "detects" not in line


@settings(max_examples=max(examples(), 50), deadline=None)
@given(evaluations(), st.integers(2, 40))
def test_the_correction_widens_the_interval_and_raises_p_together(data: tuple[np.ndarray, list[np.ndarray]],
                                                                    m: int) -> None:
    base, runs = data
    one, many = paired_comparison(runs[0], base), paired_comparison(runs[0], base, comparisons=m)
    assert many.p >= one.p or math.isnan(one.p)
    if not math.isnan(one.delta_ci_low):
        assert many.delta_ci_low <= one.delta_ci_low + 1e-12 and many.delta_ci_high >= one.delta_ci_high - 1e-12
    assert not (one.verdict == UNDECIDED and many.verdict != UNDECIDED)  # a correction never creates a finding


def test_the_interval_and_p_are_scipys_paired_t_test_bonferroni_adjusted() -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 1, 30)
    run = np.clip(base + rng.normal(0.05, 0.2, 30), 0, 1)
    ref = stats.ttest_rel(run, base)
    c = paired_comparison(run, base, comparisons=4)
    ci = ref.confidence_interval(1 - 0.05 / 4)
    assert c.p == pytest.approx(min(1.0, 4 * ref.pvalue))
    assert (c.delta_ci_low, c.delta_ci_high) == pytest.approx((ci.low, ci.high))


@pytest.mark.parametrize("line", [
    "a vs b, nDCG@10: Δ +0.163 [+0.076, +0.260] 95%, p 0.084 → no detectable difference (needs about 0 more queries)",
    "a vs b, nDCG@10: Δ +0.068 [+0.003, +0.152] 95%, p 1.000 → no detectable difference (needs about 33 more queries)",
    "a vs b, nDCG@10: Δ +0.020 [-0.010, +0.050] 95%, p 0.300 → better",
    "a vs b, nDCG@10: Δ +0.020 [-0.010, +0.050] 95%, p 0.300 → no detectable difference (the set detects 0.010 or "
    "more; needs about 40 more queries)",
    "a vs b, nDCG@10: Δ -0.120 [-0.200, -0.040] 95%, p 0.003 → worse (needs about 3 more queries)",
])
def test_the_scan_finds_the_lines_the_issue_shows_and_other_contradictions(line: str) -> None:
    assert len(printed_contradictions(line)) == 1


def test_identical_runs_are_undecided_with_more_queries_and_constant_shifts_use_the_baseline_spread() -> None:
    base = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
    same = paired_comparison(base, base)
    assert same.verdict == UNDECIDED and same.p == 1.0 and same.more_queries > 1 and same.delta_ci_low < 0
    shifted = paired_comparison(base - 0.2, base)  # every query loses 0.2: judged at the baseline's spread
    se = np.std(base, ddof=1) / math.sqrt(5)
    assert shifted.p == pytest.approx(2 * stats.t.sf(0.2 / se, 4))
    one = paired_comparison([0.5], [0.2])
    assert one.verdict == UNDECIDED and one.more_queries == 1 and math.isnan(one.p)
