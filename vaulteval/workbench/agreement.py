"""How far two query sets agree on the order of strategies, and how far that agreement can be measured at all.

Usage::

    real = np.array(...)   # queries x strategies (nDCG@10 per query), the real questions
    gen = np.array(...)    # queries x strategies, a generated set, the same strategy columns
    order_tau(gen.mean(0), real.mean(0))          # Kendall's tau-b of the two orders of the strategies
    tau_interval(gen, real, seed=0)               # (low, high): 95% bootstrap interval, both sets resampled
    self_tau(real, seed=0)                        # (median, low, high): the real order against its own resamples
    separated_pairs(real, seed=0)                 # [(i, j, delta)]: strategy pairs the real questions tell apart
    pair_agreement(gen.mean(0), pairs)            # (agreeing, total): those pairs the generated set orders alike

With ten strategies of which several sit within 0.01 of each other, one
swap of two near-equal hybrids moves tau by 0.04, and a set of 30 real
questions orders such strategies differently under resampling. So the
interval says whether a tau is measured at all; ``self_tau`` is the
ceiling (the real questions against resamples of themselves); and
``pair_agreement`` asks only about the pairs the real questions separate
(a paired randomization test, p < ``ALPHA``), which a generated set must
get right for its verdicts to be worth anything. All resampling is
``scipy.stats`` (``bootstrap``, ``permutation_test`` through
``stats.paired_test``), seeded.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

ALPHA = 0.05
CONFIDENCE = 0.95
N_RESAMPLES = 1000


def order_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b between two score vectors over the same strategies (NaN when either is constant)."""
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.kendalltau(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)).statistic)


def _matrix(x: np.ndarray) -> np.ndarray:
    m = np.asarray(x, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError(f"expected a queries x strategies table with at least one query, got shape {m.shape}")
    return m


def tau_interval(gen: np.ndarray, real: np.ndarray, *, seed: int = 0, n_resamples: int = N_RESAMPLES,
                 confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of tau between the two orders, each set's queries resampled independently."""
    from scipy import stats

    g, r = _matrix(gen), _matrix(real)
    if g.shape[1] != r.shape[1]:
        raise ValueError(f"both tables need the same strategies, got {g.shape[1]} and {r.shape[1]} columns")

    def statistic(rows_g: np.ndarray, rows_r: np.ndarray) -> float:  # resampled row numbers of each table
        return order_tau(g[rows_g.astype(int)].mean(axis=0), r[rows_r.astype(int)].mean(axis=0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap((np.arange(len(g)), np.arange(len(r))), statistic, paired=False, vectorized=False,
                              n_resamples=n_resamples,
                              confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (low, high) if not (math.isnan(low) or math.isnan(high)) else (math.nan, math.nan)


def self_tau(real: np.ndarray, *, seed: int = 0, n_resamples: int = N_RESAMPLES,
             confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Tau of the real order against the order of each bootstrap resample of the same questions: (median, low, high).

    A generated set is not expected to agree with the real questions better than they agree with themselves."""
    r = _matrix(real)
    rng = np.random.default_rng(seed)
    full = r.mean(axis=0)
    taus = np.array([order_tau(r[rng.integers(0, len(r), len(r))].mean(axis=0), full) for _ in range(n_resamples)])
    taus = taus[~np.isnan(taus)]
    if not taus.size:
        return math.nan, math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    return float(np.median(taus)), float(np.percentile(taus, tail)), float(np.percentile(taus, 100 - tail))


def separated_pairs(real: np.ndarray, *, seed: int = 0, alpha: float = ALPHA,
                    n_resamples: int = 2000) -> list[tuple[int, int, float]]:
    """(i, j, mean real score of i minus j) for each strategy pair whose paired randomization test gives p < alpha."""
    from vaulteval.workbench.stats import paired_test

    r = _matrix(real)
    out = []
    for i in range(r.shape[1]):
        for j in range(i + 1, r.shape[1]):
            delta = r[:, i] - r[:, j]
            if not np.any(delta):
                continue
            test = paired_test(r[:, i], r[:, j], seed=seed, n_resamples=n_resamples)
            if test.p_randomization < alpha:
                out.append((i, j, float(delta.mean())))
    return out


def pair_agreement(gen_means: np.ndarray, pairs: list[tuple[int, int, float]]) -> tuple[int, int]:
    """How many of ``pairs`` the generated means order the same way as the real questions (a tie agrees with none)."""
    g = np.asarray(gen_means, dtype=np.float64)
    agree = sum(1 for i, j, delta in pairs if np.sign(g[i] - g[j]) == np.sign(delta) != 0)
    return agree, len(pairs)
