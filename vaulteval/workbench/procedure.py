"""One procedure per comparison: the interval, the p value, the verdict, the MDE and "needs N more" of one test.

Usage::

    c = paired_comparison(run_scores, base_scores, comparisons=3)   # paired t-test, Bonferroni over 3
    c.verdict                # "better" | "worse" | "no detectable difference"
    comparison_line({"run": "bm25-english", "baseline": "bm25", "measure": "nDCG@10", **c.as_row()})
    PROCEDURE                # the two sentences docs/run-manifest.md and the notebooks print

The test is the paired t-test of the per-query differences (``scipy.stats.ttest_rel``); its interval is
the test's own confidence interval, so an interval that excludes 0 and a p below alpha always go
together. Over ``m`` comparisons of one measure (every run against the baseline) the correction is
Bonferroni: the interval is the ``1 - alpha/m`` interval and the printed p is ``min(1, m * p)``; the
minimum detectable effect (power 0.8) and "needs about N more queries" are computed at ``alpha/m``
too, and are left out once a difference is detected. When every query moved by the same amount the
differences have no spread, and the baseline's spread stands in for it (a t-test at that spread). ``comparison_line`` is the one sentence that
``eval run``, ``eval compare``, ``tune``, the headline, report.md and the notebooks print.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

ALPHA = 0.05
POWER = 0.8
BETTER, WORSE, UNDECIDED = "better", "worse", "no detectable difference"
VERDICTS = (BETTER, WORSE, UNDECIDED)
# One procedure per comparison; a report.json or tune.json decision of another format is refused.
REPORT_FORMAT = 2
LIMIT = 100_000
SPREAD_EPS = 1e-12  # differences that vary less than this are rounding, not spread  # beyond this many queries "needs more" is said as "over LIMIT"
PROCEDURE = ("Each strategy is compared with the baseline by a paired t-test on the per-query differences, "
             "and its interval, p value and verdict all come from that one test. With several strategies the "
             "correction is Bonferroni: intervals at confidence 1 - 0.05/m and p multiplied by m (m comparisons "
             "per measure), and the smallest detectable difference and the queries still needed use the same "
             "alpha/m.")


@dataclass(frozen=True)
class Comparison:
    """The numbers of one comparison; ``p`` and the interval are already corrected for ``comparisons``."""

    n: int
    delta: float
    delta_ci_low: float
    delta_ci_high: float
    p: float
    comparisons: int
    verdict: str
    mde: float | None  # None once a difference is detected
    more_queries: int | None  # None once detected; LIMIT + 1 means "over LIMIT"

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


def paired_comparison(run: Sequence[float], base: Sequence[float], *, comparisons: int = 1,
                      alpha: float = ALPHA) -> Comparison:
    """Usage: ``paired_comparison(run, base, comparisons=m)``; the lists are aligned by query."""
    from scipy import stats

    x, y = np.asarray(run, dtype=np.float64), np.asarray(base, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired scores need equal lengths, got {x.size} and {y.size}")
    m = max(int(comparisons), 1)
    level = alpha / m
    d = x - y
    n = int(d.size)
    if n < 2:  # no spread to test: nothing is detected, and more queries are what it needs
        mean = float(d.mean()) if n else math.nan
        return Comparison(n, mean, math.nan, math.nan, math.nan, m, UNDECIDED, None, max(2 - n, 1))
    mean, sd = float(d.mean()), float(np.std(d, ddof=1))
    if sd <= SPREAD_EPS:  # every query moved alike (to the last bits): no spread of its own, take the baseline's
        sd = float(np.std(y, ddof=1))
        if sd == 0.0:
            p, low, high = (1.0 if mean == 0.0 else 0.0), mean, mean
        else:
            se, df = sd / math.sqrt(n), n - 1
            p = float(2 * stats.t.sf(abs(mean) / se, df))
            q = float(stats.t.ppf(1 - level / 2, df))
            low, high = mean - q * se, mean + q * se
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = stats.ttest_rel(x, y)
            ci = res.confidence_interval(confidence_level=1 - level)
        p, low, high = float(res.pvalue), float(ci.low), float(ci.high)
    p_adj = min(1.0, p * m)
    detected = p_adj < alpha and mean != 0.0
    verdict = (BETTER if mean > 0 else WORSE) if detected else UNDECIDED
    mde = more = None
    if not detected:
        from vaulteval.workbench.intervals import detectable_at, queries_needed

        mde = detectable_at(sd, n, alpha=level, power=POWER) if sd > 0 else None
        needed = queries_needed(sd, abs(mean), alpha=level, power=POWER, limit=LIMIT) if sd > 0 else None
        more = LIMIT + 1 if needed is None else max(needed - n, 1)
    return Comparison(n, mean, low, high, p_adj, m, verdict, mde, more)


def _signed(value: Any) -> str:
    return "—" if _missing(value) else f"{float(value):+.3f}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def p_text(p: Any, alpha: float = ALPHA) -> str:
    """``0.012``, ``< 0.001``; a p just under alpha keeps a fourth digit so it never reads as alpha."""
    if _missing(p):
        return "—"
    p = float(p)
    if p < 0.001:
        return "< 0.001"
    text = f"{p:.3f}"
    return f"{p:.4f}" if p < alpha and float(text) >= alpha else text


def interval_text(row: Mapping[str, Any]) -> str:
    """``+0.012 [-0.010, +0.030]``: the delta and its (corrected) interval."""
    return f"{_signed(row.get('delta'))} [{_signed(row.get('delta_ci_low'))}, {_signed(row.get('delta_ci_high'))}]"


def more_text(more: Any) -> str:
    if _missing(more):
        return ""
    more = int(more)
    return f"needs over {LIMIT:,} more queries" if more > LIMIT else f"needs about {more} more queries"


def comparison_line(row: Mapping[str, Any]) -> str:
    """The one sentence of a comparison (a report.json summary row, or a Comparison's ``as_row`` plus
    ``run``, ``baseline`` and ``measure``)::

        bm25-english vs bm25, nDCG@10: Δ +0.068 [-0.010, +0.152] 95%, p 0.310 → no detectable difference
        (the set detects 0.113 or more; needs about 33 more queries)
    """
    return f"{row['run']} vs {row['baseline']}, {comparison_tail(row)}"


def comparison_tail(row: Mapping[str, Any]) -> str:
    """``comparison_line`` after ``RUN vs BASELINE, ``: the measure, Δ with its interval, p, the verdict."""
    m = int(row.get("comparisons") or 1)
    p_label = f"p (Bonferroni ×{m})" if m > 1 else "p"
    level = f"{100 * (1 - ALPHA / m):.4g}%"
    line = (f"{row['measure']}: Δ {interval_text(row)} {level}, {p_label} {p_text(row.get('p'))} → {row['verdict']}")
    if row["verdict"] == UNDECIDED:
        detail = [f"the set detects {float(row['mde']):.3f} or more" if not _missing(row.get("mde")) else "",
                  more_text(row.get("more_queries"))]
        detail = [d for d in detail if d]
        if detail:
            line += f" ({'; '.join(detail)})"
    return line


def contradiction(row: Mapping[str, Any], alpha: float = ALPHA) -> str | None:
    """Why a comparison's numbers contradict each other, or None: the check the property test and
    notebook-check run on every printed comparison."""
    low, high, p, verdict = row.get("delta_ci_low"), row.get("delta_ci_high"), row.get("p"), row.get("verdict")
    if _missing(low) or _missing(high):
        return None if verdict == UNDECIDED else "a verdict without an interval"
    excludes = low > 0 or high < 0
    if excludes and verdict == UNDECIDED:
        return "the interval excludes 0 but the verdict is 'no detectable difference'"
    if not excludes and verdict != UNDECIDED:
        return f"the interval holds 0 but the verdict is '{verdict}'"
    if verdict == BETTER and not low > 0 or verdict == WORSE and not high < 0:
        return f"the verdict '{verdict}' goes against the interval's sign"
    if not _missing(p) and (p < alpha) != (verdict != UNDECIDED) and abs(p - alpha) > 1e-9:
        return f"p {p_text(p)} disagrees with the verdict '{verdict}'"
    if verdict == UNDECIDED:
        more, mde, delta = row.get("more_queries"), row.get("mde"), row.get("delta")
        if _missing(more) or int(more) < 1:
            return "no detectable difference, yet no positive number of queries still needed"
        if not _missing(mde) and not _missing(delta) and abs(delta) > mde + 1e-12:
            return "the difference is larger than the smallest detectable one, yet not detected"
    elif not _missing(row.get("more_queries")) or not _missing(row.get("mde")):
        return "a detected difference still printed with an MDE or queries needed"
    return None


_NUM = r"[+-]?\d+\.\d+|—"
PRINTED = re.compile(rf"Δ (?P<delta>{_NUM}) \[(?P<low>{_NUM}), (?P<high>{_NUM})\](?: [\d.]+%)?"
                      rf"(?:, p(?: \(Bonferroni ×\d+\))? (?P<p>< 0\.001|\d\.\d+|—))?"
                      rf" → (?P<verdict>better|worse|no detectable difference)(?: \((?P<tail>[^)]*)\))?")


def printed_contradictions(text: str, alpha: float = ALPHA) -> list[str]:
    """Every printed comparison in ``text`` (a report.md, a headline, a terminal's output) whose own words
    contradict each other, as ``line: why``; read from the text as a person reads it (3 decimals)."""
    found = []
    for line in text.splitlines():
        for m in PRINTED.finditer(line):
            why = _printed_problem(m, alpha)
            if why:
                found.append(f"{line.strip()[:160]}: {why}")
    return found


def _printed_problem(m: "re.Match[str]", alpha: float) -> str | None:
    def num(key: str) -> float | None:
        value = m.group(key)
        return None if value in (None, "—") else float(value)

    delta, low, high, verdict, tail = num("delta"), num("low"), num("high"), m.group("verdict"), m.group("tail") or ""
    p = m.group("p")
    p_value = None if p in (None, "—") else (0.0 if p.startswith("<") else float(p))
    if low is None or high is None:
        return None if verdict == UNDECIDED else "a verdict without an interval"
    if verdict == BETTER and low < 0 or verdict == WORSE and high > 0:
        return f"'{verdict}' with an interval that holds 0"
    if verdict == UNDECIDED and (low > 0 or high < 0):
        return "an interval that excludes 0 with 'no detectable difference'"
    if p_value is not None and (p_value < alpha) != (verdict != UNDECIDED):
        return f"p {p} with '{verdict}'"
    if verdict == UNDECIDED and m.group("p") is not None:  # a full comparison line says what more it needs
        more = re.search(r"needs (?:about (\d+)|over [\d,]+) more quer", tail)
        if not more or (more.group(1) is not None and int(more.group(1)) < 1):
            return "'no detectable difference' without a positive number of queries still needed"
        detects = re.search(r"detects (\d+\.\d+) or more", tail)
        if detects and delta is not None and abs(delta) > float(detects.group(1)):
            return "a difference above what the set detects, yet not detected"
    if verdict != UNDECIDED and ("needs" in tail or "detects" in tail):
        return "a detected difference still printed with what the set detects or needs"
    return None
