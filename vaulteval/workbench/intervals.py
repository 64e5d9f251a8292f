"""Statistics for small query sets: bootstrap intervals, McNemar's exact test, the minimum detectable effect.

Usage::

    mean_ci(scores, seed=0)                    # (low, high): 95% bootstrap interval of the mean
    paired_delta_ci(run, base, seed=0)         # (low, high) of the mean per-query difference run - base
    mcnemar_exact(run_hits, base_hits)         # McNemar(b, c, p): exact, on the discordant pairs
    min_detectable_effect(deltas)              # smallest mean difference a paired t-test finds 80% of the time
    queries_needed(sd, effect)                 # how many paired queries that test needs to find ``effect``

All arithmetic is scipy's: ``scipy.stats.bootstrap`` (percentile intervals,
seeded, so ``eval verify`` gets the same numbers), ``scipy.stats.binomtest``
for McNemar's exact test (the discordant pairs are binomial with p = 1/2
under the null), and the noncentral t distribution for the power of a
paired t-test, solved for the effect with ``scipy.optimize.brentq``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

CONFIDENCE = 0.95
N_RESAMPLES = 2000
ALPHA = 0.05
POWER = 0.8


def _interval(data: tuple, statistic, *, paired: bool, seed: int, n_resamples: int,
              confidence: float) -> tuple[float, float]:
    from scipy import stats

    arrays = [np.asarray(d, dtype=np.float64) for d in data]
    if arrays[0].size == 0:
        return math.nan, math.nan
    if all(np.ptp(a) == 0 for a in arrays):  # no spread to resample (also one query): the point itself
        point = float(statistic(*arrays, axis=-1))
        return point, point
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap(tuple(arrays), statistic, paired=paired, vectorized=True, n_resamples=n_resamples,
                              confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def mean_ci(values: Sequence[float], *, seed: int = 0, n_resamples: int = N_RESAMPLES,
            confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Usage: ``mean_ci([0.5, 1.0, 0.0])`` -> percentile bootstrap interval of the mean."""
    return _interval((np.asarray(values, dtype=np.float64),), _mean, paired=False, seed=seed,
                     n_resamples=n_resamples, confidence=confidence)


def paired_delta_ci(a: Sequence[float], b: Sequence[float], *, seed: int = 0, n_resamples: int = N_RESAMPLES,
                    confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Usage: ``paired_delta_ci(run, base)``: queries are resampled as pairs, so their correlation is kept."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired scores need equal lengths, got {x.size} and {y.size}")
    if x.size and np.ptp(x - y) == 0:
        point = float(np.mean(x - y))
        return point, point
    return _interval((x, y), _mean_diff, paired=True, seed=seed, n_resamples=n_resamples, confidence=confidence)


class McNemar(NamedTuple):
    """Discordant pairs: ``b`` queries only the run succeeds on, ``c`` only the baseline; exact two-sided p."""

    b: int
    c: int
    p: float


def mcnemar_exact(run_hits: Sequence[bool], base_hits: Sequence[bool]) -> McNemar:
    """Usage: ``mcnemar_exact(run_success, base_success)``; p = 1 when no pair is discordant."""
    from scipy import stats

    x, y = np.asarray(run_hits, dtype=bool), np.asarray(base_hits, dtype=bool)
    if x.shape != y.shape:
        raise ValueError(f"paired outcomes need equal lengths, got {x.size} and {y.size}")
    b, c = int((x & ~y).sum()), int((~x & y).sum())
    if b + c == 0:
        return McNemar(b, c, 1.0)
    return McNemar(b, c, float(stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue))


def min_detectable_effect(deltas: Sequence[float], *, alpha: float = ALPHA, power: float = POWER,
                          fallback_sd: float | None = None) -> float:
    """The smallest mean difference a two-sided paired t-test at ``alpha`` detects with ``power``.

    The spread is the standard deviation of the per-query differences (or
    ``fallback_sd`` when they are all equal, e.g. a run compared with itself).
    NaN with fewer than two queries.
    """
    d = np.asarray(deltas, dtype=np.float64)
    if d.size < 2:
        return math.nan
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        sd = float(fallback_sd or 0.0)
    return detectable_at(sd, int(d.size), alpha=alpha, power=power)


def detectable_at(sd: float, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """Usage: ``detectable_at(0.2, 150)``: the effect ``min_detectable_effect`` finds for ``n`` queries of spread ``sd``."""
    from scipy import optimize, stats

    if n < 2:
        return math.nan
    if sd == 0.0:
        return 0.0
    df, crit = n - 1, float(stats.t.ppf(1 - alpha / 2, n - 1))

    def shortfall(effect: float) -> float:
        shift = effect * math.sqrt(n)
        upper, lower = float(stats.nct.sf(crit, df, shift)), float(stats.nct.cdf(-crit, df, shift))
        # Far in the tails scipy's noncentral t returns NaN; those tails are then 1 and 0.
        upper = (1.0 if shift > crit else 0.0) if math.isnan(upper) else upper
        return upper + (0.0 if math.isnan(lower) else lower) - power

    high = 1.0
    while shortfall(high) < 0 and high < 1e3:  # grow the bracket: few queries need a large effect
        high *= 2
    return float(optimize.brentq(shortfall, 1e-9, high)) * sd


def queries_needed(sd: float, effect: float, *, alpha: float = ALPHA, power: float = POWER,
                   limit: int = 100_000) -> int | None:
    """Usage: ``queries_needed(0.2, 0.03)``: the fewest paired queries whose minimum detectable effect is
    at most ``effect``; None when even ``limit`` queries are not enough (or there is no effect to find)."""
    if not effect > 0 or not math.isfinite(sd):
        return None
    if sd == 0.0:
        return 2
    if detectable_at(sd, limit, alpha=alpha, power=power) > effect:
        return None
    low, high = 2, limit  # detectable_at falls as n grows: bisect for the first n that reaches the effect
    while low < high:
        mid = (low + high) // 2
        if detectable_at(sd, mid, alpha=alpha, power=power) <= effect:
            high = mid
        else:
            low = mid + 1
    return low
