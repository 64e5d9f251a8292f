"""Agreement statistics between two query sets' orders of strategies (vaulteval.workbench.agreement)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vaulteval.workbench.agreement import order_tau, pair_agreement, self_tau, separated_pairs, tau_interval


def _table(means: list[float], n: int, spread: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(np.asarray(means) + rng.normal(0.0, spread, (n, len(means))), 0.0, 1.0)


def test_order_tau_is_one_for_the_same_order_and_minus_one_reversed():
    assert order_tau([0.1, 0.5, 0.9], [0.2, 0.3, 0.4]) == pytest.approx(1.0)
    assert order_tau([0.1, 0.5, 0.9], [0.4, 0.3, 0.2]) == pytest.approx(-1.0)
    assert math.isnan(order_tau([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]))


def test_well_separated_strategies_give_a_narrow_interval_above_zero():
    means = [0.2, 0.4, 0.6, 0.8]
    real, gen = _table(means, 80, 0.1, 1), _table(means, 120, 0.1, 2)
    low, high = tau_interval(gen, real, seed=0, n_resamples=300)
    assert low > 0.6 and high == pytest.approx(1.0)


def test_near_tied_strategies_on_few_queries_give_an_interval_that_spans_zero():
    means = [0.50, 0.505, 0.51, 0.515, 0.52]
    real, gen = _table(means, 15, 0.3, 3), _table(means, 15, 0.3, 4)
    low, high = tau_interval(gen, real, seed=0, n_resamples=300)
    assert low < 0 < high


def test_tau_interval_needs_the_same_strategies():
    with pytest.raises(ValueError, match="same strategies"):
        tau_interval(np.zeros((5, 3)), np.zeros((5, 4)))


def test_self_tau_is_near_one_when_separated_and_lower_when_tied():
    separated = self_tau(_table([0.2, 0.4, 0.6, 0.8], 60, 0.1, 5), seed=0, n_resamples=200)
    tied = self_tau(_table([0.50, 0.505, 0.51, 0.515], 20, 0.3, 6), seed=0, n_resamples=200)
    assert separated[0] == pytest.approx(1.0)
    assert tied[0] < separated[0] and tied[1] < 0.5


def test_separated_pairs_keeps_the_pairs_the_questions_tell_apart():
    rng = np.random.default_rng(7)
    base = rng.random(40)
    real = np.column_stack([base, base + 0.3, base + rng.normal(0, 0.01, 40)])  # 1 beats 0 always; 2 ~ 0
    pairs = separated_pairs(real, seed=0, n_resamples=500)
    found = {(i, j): d for i, j, d in pairs}
    assert (0, 1) in found and found[(0, 1)] == pytest.approx(-0.3)
    assert (0, 2) not in found
    assert (1, 2) in found


def test_pair_agreement_counts_same_sign_and_no_ties():
    pairs = [(0, 1, -0.2), (1, 2, 0.1), (0, 2, -0.1)]
    assert pair_agreement(np.array([0.1, 0.5, 0.3]), pairs) == (3, 3)
    assert pair_agreement(np.array([0.5, 0.1, 0.3]), pairs) == (0, 3)
    assert pair_agreement(np.array([0.3, 0.3, 0.3]), pairs) == (0, 3)
