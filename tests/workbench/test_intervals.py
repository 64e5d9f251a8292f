"""Small-set statistics: bootstrap intervals, McNemar's exact test and the minimum detectable effect, against scipy.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_intervals.py -q``
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from vaulteval.workbench.intervals import mcnemar_exact, mean_ci, min_detectable_effect, paired_delta_ci

SCORES = [0.0, 1.0, 0.63, 0.5, 0.0, 1.0, 0.43, 0.39, 1.0, 0.0, 0.77, 0.31]
BASE = [0.0, 0.5, 0.63, 0.0, 0.0, 1.0, 0.43, 0.5, 0.39, 0.0, 0.5, 0.31]


def test_mean_ci_is_scipys_percentile_bootstrap() -> None:
    low, high = mean_ci(SCORES, seed=3)
    ref = stats.bootstrap((np.array(SCORES),), np.mean, method="percentile", n_resamples=2000,
                          confidence_level=0.95, rng=np.random.default_rng(3))
    assert (low, high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=1e-12)
    assert low < float(np.mean(SCORES)) < high


def test_mean_ci_matches_normal_theory_on_a_large_sample() -> None:
    x = np.random.default_rng(0).normal(0.5, 0.2, 2000)
    low, high = mean_ci(x, seed=1)
    half = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
    assert low == pytest.approx(x.mean() - half, abs=0.002)
    assert high == pytest.approx(x.mean() + half, abs=0.002)


def test_intervals_without_spread_are_the_point() -> None:
    assert mean_ci([0.4, 0.4, 0.4]) == pytest.approx((0.4, 0.4), abs=1e-15)
    assert mean_ci([0.7]) == (0.7, 0.7)
    assert paired_delta_ci([1, 0, 1], [1, 0, 1]) == (0.0, 0.0)
    assert all(math.isnan(v) for v in mean_ci([]))


def test_paired_delta_ci_resamples_queries_as_pairs() -> None:
    low, high = paired_delta_ci(SCORES, BASE, seed=5)
    ref = stats.bootstrap((np.array(SCORES), np.array(BASE)), lambda a, b, axis=-1: np.mean(a - b, axis=axis),
                          paired=True, vectorized=True, method="percentile", n_resamples=2000,
                          rng=np.random.default_rng(5))
    assert (low, high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=1e-12)
    # pairing keeps the correlation: the interval is narrower than an unpaired one
    unpaired = stats.bootstrap((np.array(SCORES), np.array(BASE)), lambda a, b, axis=-1: np.mean(a, axis=axis) -
                               np.mean(b, axis=axis), method="percentile", n_resamples=2000,
                               rng=np.random.default_rng(5)).confidence_interval
    assert high - low < unpaired.high - unpaired.low


def test_mcnemar_exact_on_a_textbook_table() -> None:
    # 10 queries only the run finds, 2 only the baseline: p = 2 * P(X <= 2 | n=12, 1/2) = 2 * 79 / 4096
    run = [True] * 10 + [False] * 2 + [True] * 5 + [False] * 3
    base = [False] * 10 + [True] * 2 + [True] * 5 + [False] * 3
    result = mcnemar_exact(run, base)
    assert (result.b, result.c) == (10, 2)
    assert result.p == pytest.approx(158 / 4096, rel=1e-12)
    assert result.p == pytest.approx(stats.binomtest(2, 12, 0.5).pvalue, rel=1e-12)
    assert mcnemar_exact([True, False], [True, False]).p == 1.0


def test_min_detectable_effect_has_the_power_it_claims() -> None:
    deltas = np.random.default_rng(2).normal(0.0, 0.3, 40)
    mde = min_detectable_effect(deltas)
    sd, n = deltas.std(ddof=1), deltas.size
    # Power of the paired t-test at that effect, from scipy's t distributions directly.
    shift = mde / sd * math.sqrt(n)
    crit = stats.t.ppf(0.975, n - 1)
    assert stats.nct.sf(crit, n - 1, shift) + stats.nct.cdf(-crit, n - 1, shift) == pytest.approx(0.8, abs=1e-6)
    # Close to the large-sample normal value, and above it (the t distribution has heavier tails).
    normal = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * sd / math.sqrt(n)
    assert normal < mde < normal * 1.05


def test_min_detectable_effect_shrinks_with_more_queries() -> None:
    rng = np.random.default_rng(4)
    small, large = min_detectable_effect(rng.normal(0, 0.3, 20)), min_detectable_effect(rng.normal(0, 0.3, 320))
    assert large < small / 3
    assert min_detectable_effect([0.1]) != min_detectable_effect([0.1])  # NaN below two queries
    assert min_detectable_effect([0.0, 0.0, 0.0], fallback_sd=0.3) > 0
