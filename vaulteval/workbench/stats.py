"""Paired significance tests over per-query scores, and Holm's correction.

Usage::

    t = paired_test(new_scores, baseline_scores, seed=0)
    t.p_randomization, t.p_ttest, t.wins, t.ties, t.losses
    holm([0.01, 0.04, 0.03, 0.005])    # -> [0.03, 0.06, 0.06, 0.02]

The randomization test is ``scipy.stats.permutation_test`` with
``permutation_type="samples"`` (each query's pair of scores is swapped at
random: a sign-flip test of the mean difference), exact when there are no
more than ``n_resamples`` arrangements, seeded otherwise. The t-test is
``scipy.stats.ttest_rel``. Identical score lists give p = 1 for both.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

TIE_EPS = 1e-12


class PairedTest(NamedTuple):
    """Mean difference (a - b) over paired queries, win/tie/loss counts and two-sided p-values."""

    n: int
    mean_delta: float
    wins: int
    ties: int
    losses: int
    p_randomization: float
    p_ttest: float


def _mean_diff(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a - b, axis=axis)


def paired_test(a: Sequence[float], b: Sequence[float], *, seed: int = 0, n_resamples: int = 9999) -> PairedTest:
    """Usage: ``paired_test(run_scores, baseline_scores)``; the lists are aligned by query."""
    from scipy import stats

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired scores need equal lengths, got {x.size} and {y.size}")
    delta = x - y
    wins, losses = int((delta > TIE_EPS).sum()), int((delta < -TIE_EPS).sum())
    ties = int(delta.size - wins - losses)
    if delta.size == 0:
        return PairedTest(0, math.nan, 0, 0, 0, math.nan, math.nan)
    if wins == 0 and losses == 0:
        return PairedTest(int(delta.size), float(delta.mean()), wins, ties, losses, 1.0, 1.0)
    perm = stats.permutation_test((x, y), _mean_diff, permutation_type="samples", vectorized=True,
                                  n_resamples=n_resamples, alternative="two-sided",
                                  rng=np.random.default_rng(seed))
    with warnings.catch_warnings():  # constant differences: scipy warns about precision, the p-value stands
        warnings.simplefilter("ignore", RuntimeWarning)
        p_t = float(stats.ttest_rel(x, y).pvalue) if delta.size > 1 else math.nan
    return PairedTest(int(delta.size), float(delta.mean()), wins, ties, losses, float(perm.pvalue), p_t)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in input order; NaN stays NaN and is not counted."""
    indexed = [(p, i) for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    m = len(indexed)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for j, (p, i) in enumerate(sorted(indexed)):
        running = max(running, min(1.0, (m - j) * p))
        out[i] = running
    return out
