"""The tuner's verdict on a candidate strategy against the default: adopt, keep, or inconclusive.

Usage::

    ev = Evidence(default={"q1": 0.5, ...}, candidate={"q1": 0.7, ...},
                  slices={"kind=title": ["q1", ...], "overlap=high": [...]}, high_overlap={"q1", ...})
    v = judge(ev, seed=0, candidate_semantic=True)
    v["verdict"]          # "adopt" | "keep" | "inconclusive"
    v["line"]             # one sentence for the terminal

The rules (docs/run-manifest.md, "tune.json"):

- **adopt** only when the comparison of candidate and default
  (``procedure.paired_comparison``: a paired t-test and its own 95% interval,
  one comparison) says ``better``, and the candidate is ``worse`` on no slice
  (a query kind or an overlap band, by the same test). Slices are not
  corrected for multiplicity: each one can veto an adoption.
- **keep** when the default is as good or better (mean difference <= 0), or
  when the tune split already found nothing better than the default.
- **inconclusive** otherwise, with ``queries_needed``: how many judged queries
  that test needs to find the observed difference with 80% power (at the
  spread seen here).

Generated sets favour words the query shares with its target. When more
than half of the test queries are in the ``high`` overlap band, the verdict
says so; and when a semantic strategy (dense, hybrid, rerank) is the
candidate, the default, or on the grid at all, that evidence cannot decide:
the verdict is inconclusive, whichever way the numbers lean, with the number
of real questions to judge instead (enough to find a difference of
``REAL_EFFECT`` at the spread seen between a semantic and a lexical
strategy). Measured, such sets pick the wrong hybrid as readily as the
wrong family (docs/benchmarks.md, "Agreement"). Only a grid without any
semantic strategy keeps its verdict, with the note.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ALPHA = 0.05
REAL_EFFECT = 0.05  # the difference the real-question recommendation is sized to find
MIN_TEST_QUERIES = 30
VERDICTS = ("adopt", "keep", "inconclusive")


@dataclass
class Evidence:
    """Per-query scores on the test split ({query id: value}), and which queries form each slice."""

    default: Mapping[str, float]
    candidate: Mapping[str, float] | None = None  # None: the tune split found nothing better than the default
    slices: Mapping[str, Sequence[str]] = field(default_factory=dict)
    high_overlap: set[str] | None = None  # None: the query set records no overlap
    rival: Mapping[str, float] | None = None  # the best of the other family (semantic/lexical) than default and candidate


def judge(ev: Evidence, *, seed: int = 0, measure: str = "nDCG@10", candidate_semantic: bool = False,
          default_semantic: bool = False, grid_semantic: bool = False) -> dict[str, Any]:
    """The verdict and its evidence as a JSON-ready dict (see the module docstring for the rules)."""
    from vaulteval.workbench.procedure import BETTER, REPORT_FORMAT, paired_comparison

    ids = list(ev.default)
    base = np.array([ev.default[q] for q in ids], dtype=np.float64)
    out: dict[str, Any] = {"measure": measure, "n_test": len(ids), "default_mean": _mean(base),
                           "procedure": REPORT_FORMAT}
    if ev.candidate is None:
        out.update(verdict="keep", reason="the default is the best strategy on the tune split",
                   best_mean=out["default_mean"], delta=0.0, ci95=[0.0, 0.0], p=1.0,
                   significant=False, slices=[], queries_needed=None, comparison=None)
    else:
        cand = np.array([ev.candidate[q] for q in ids], dtype=np.float64)
        c = paired_comparison(cand, base)
        diff = cand - base
        losses = slice_losses(ev, ids, cand, base, seed)
        out.update(best_mean=_mean(cand), delta=c.delta, ci95=[c.delta_ci_low, c.delta_ci_high], p=c.p,
                   wins=int((diff > 1e-12).sum()), ties=int((np.abs(diff) <= 1e-12).sum()),
                   losses=int((diff < -1e-12).sum()), significant=c.verdict != "no detectable difference",
                   slices=losses, queries_needed=None, comparison=c.as_row())
        lost = [s for s in losses if s["loses"]]
        if not c.delta > 0:
            out.update(verdict="keep", reason="the default is as good or better on the test split")
        elif c.verdict == BETTER and not lost:
            out.update(verdict="adopt", reason="the gain is detected and no slice loses")
        else:
            why = (f"loses significantly on {', '.join(s['slice'] for s in lost)}" if c.verdict == BETTER
                   else "the gain is not detected")
            # More queries settle an undetected gain; a slice that loses is settled already.
            needed = None if c.more_queries is None or c.more_queries > 100_000 else c.n + c.more_queries
            out.update(verdict="inconclusive", reason=why, queries_needed=needed)
    out["overlap"] = overlap_share(ev.high_overlap, ids)
    out["recommendation"] = None
    if out["overlap"] and out["overlap"]["mostly_high"]:
        _overlap_caveat(out, ev, ids, base, candidate_semantic, default_semantic, grid_semantic)
    out["adopt"] = out["verdict"] == "adopt"
    out["warning"] = size_warning(out)
    return out


def slice_losses(ev: Evidence, ids: list[str], cand: np.ndarray, base: np.ndarray, seed: int) -> list[dict[str, Any]]:
    """Every slice with its mean difference and p (the same paired test); ``loses`` when its verdict is worse."""
    from vaulteval.workbench.procedure import WORSE, paired_comparison

    where = {q: i for i, q in enumerate(ids)}
    rows = []
    for name in sorted(ev.slices):
        rows_of = [where[q] for q in ev.slices[name] if q in where]
        if not rows_of:
            continue
        c = paired_comparison(cand[rows_of], base[rows_of])
        rows.append({"slice": name, "n": len(rows_of), "delta": c.delta,
                     "p": c.p if np.isfinite(c.p) else 1.0, "loses": c.verdict == WORSE})
    return rows


def overlap_share(high: set[str] | None, ids: list[str]) -> dict[str, Any] | None:
    """How many test queries are high-overlap; None when the query set records no overlap."""
    if high is None or not ids:
        return None
    count = sum(q in high for q in ids)
    return {"high": count, "n": len(ids), "share": count / len(ids), "mostly_high": count * 2 > len(ids)}


def _overlap_caveat(out: dict[str, Any], ev: Evidence, ids: list[str], base: np.ndarray, candidate_semantic: bool,
                    default_semantic: bool, grid_semantic: bool) -> None:
    """Mostly high-overlap evidence cannot judge a semantic strategy: say so, and size real questions instead."""
    o = out["overlap"]
    note = (f"{o['high']} of {o['n']} test queries share most of their words with their target: "
            "this set measures shared words, not meaning")
    o["note"] = note
    if not (candidate_semantic or default_semantic or grid_semantic):
        return  # lexical against lexical: shared words are what both strategies match, the verdict stands
    n = _real_questions(ev, ids, base, candidate_semantic, default_semantic)
    if out["verdict"] != "inconclusive":
        out["reason"] = f"{out['reason']}; but {note}, so it cannot judge semantic strategies"
    out["verdict"] = "inconclusive"
    out["real_questions_needed"] = n
    out["recommendation"] = (f"judge {n if n else 'more'} real questions (`retrieve --log` or `mcp --log`, then "
                             f"`queryset from-log` and the judge notebook), then tune on them")


def _real_questions(ev: Evidence, ids: list[str], base: np.ndarray, candidate_semantic: bool,
                    default_semantic: bool) -> int | None:
    """Judged queries a paired test needs to find ``REAL_EFFECT``, at the spread between a semantic and a lexical
    column when the evidence has both (candidate or rival against the default), else the default's own spread."""
    from vaulteval.workbench.intervals import queries_needed

    if len(ids) < 2:
        return None
    mixed = ev.candidate is not None and candidate_semantic != default_semantic
    other = ev.candidate if mixed else (ev.rival if ev.rival is not None else ev.candidate)
    if other is not None:
        spread = float(np.std(np.array([other[q] for q in ids]) - base, ddof=1))
    else:
        spread = float(np.std(base, ddof=1))
    if not math.isfinite(spread) or spread <= 0:
        spread = float(np.std(base, ddof=1))
    return queries_needed(spread, REAL_EFFECT) if math.isfinite(spread) and spread > 0 else None


def size_warning(out: dict[str, Any]) -> str | None:
    n = out["n_test"]
    if n < MIN_TEST_QUERIES:
        return f"the test split has {n} queries (< {MIN_TEST_QUERIES}): too small to tell strategies apart"
    return None


def verdict_line(decision: dict[str, Any], best: str, baseline: str) -> str:
    """Usage: ``verdict_line(tune_json["decision"], best, baseline)`` -> one sentence for the terminal; the
    comparison in it is ``procedure.comparison_line``, as every other command prints it."""
    from vaulteval.workbench.procedure import comparison_line

    v = decision["verdict"]
    measure = decision.get("measure", "")
    if best == baseline or decision.get("best_mean") is None or not decision.get("comparison"):
        head = f"verdict: {v}: {baseline} (nothing on the grid beat it on the tune split)"
    else:
        row = {**decision["comparison"], "run": best, "baseline": baseline, "measure": measure}
        head = f"verdict: {v}: {comparison_line(row)}, {decision['n_test']} test queries"
    tail = [decision["reason"]]
    if decision.get("recommendation"):
        tail.append(decision["recommendation"])
    elif (decision.get("overlap") or {}).get("note"):
        tail.append(decision["overlap"]["note"])
    return f"{head}; {'; '.join(tail)}"


def overlap_band(query: Any) -> str | None:
    """A generated query's lexical-overlap band (``low``, ``mid``, ``high``), or None when it records none.

    Read from the query's optional fields (``overlap: {band: ...}``, ``overlap: high`` or
    ``overlap_band: high``): hand-written sets have none, and the verdict then has no overlap slices.
    """
    fields = getattr(query, "fields", None) or {}
    value = fields.get("overlap_band", fields.get("overlap"))
    if isinstance(value, Mapping):
        value = value.get("band")
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else 0.0
