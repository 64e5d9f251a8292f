"""The answer an evaluation was run for, from report.json: the best strategy, how sure, and the ranking.

Usage::

    best_line(report, vault="vault notes")   # best: hybrid:rrf, nDCG@10 0.712 [0.651, 0.770]; vs the default ...
    sure_line(report)                        # how sure: 66 questions (66 written for this set) ...
    ranking(report)                          # [{"rank": 1, "run": ..., "mean": ..., "verdict": ...}, ...]
    questions(queryset)                      # {"written": 60, "real": 6, "generated": 0, "model": 0}

Every number is a row of report.json's summary for the first measure (its mean with the 95% bootstrap
interval, and the comparison against the baseline from ``procedure``), so the first screen and the
tables below it cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vaulteval.workbench.procedure import ALPHA, UNDECIDED, comparison_line, comparison_tail, interval_text

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import QuerySet

# Who wrote the questions (``evidence.writer_of``): a person or an agent for this set, a person asking (a query
# log, real), a model, or the generator from the notes' own text.
PROVENANCE = {"written": "written for this set", "real": "real, from a query log",
              "model": "written by a model", "generated": "generated from the notes' own text"}


def questions(queryset: "QuerySet") -> dict[str, int]:
    """How many positive queries of each provenance (PROVENANCE's keys)."""
    from vaulteval.workbench.evidence import writer_of

    out = dict.fromkeys(PROVENANCE, 0)
    for q in queryset.positive:
        writer = writer_of(q)
        key = writer if writer in ("real", "generated") else "model" if writer.startswith("model") else "written"
        out[key] += 1
    return out


def _first_rows(report: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    rows = report.get("tables", {}).get("summary", {}).get("rows", [])
    measures = (report.get("params") or {}).get("measures") or list(dict.fromkeys(r["measure"] for r in rows))
    first = measures[0] if measures else None
    return first, [r for r in rows if r.get("measure") == first and r.get("value") is not None]


def _mean_text(row: Mapping[str, Any]) -> str:
    low, high = row.get("ci_low"), row.get("ci_high")
    if low is None or high is None:
        return f"{row['value']:.3f}"
    return f"{row['value']:.3f} [{low:.3f}, {high:.3f}]"


def ranking(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every run on the first measure, best mean first (ties keep the report's order), with its verdict."""
    measure, rows = _first_rows(report)
    ordered = sorted(enumerate(rows), key=lambda ir: (-round(float(ir[1]["value"]), 12), ir[0]))
    out = []
    for rank, (_, r) in enumerate(ordered, 1):
        base = r.get("status") == "baseline"
        out.append({"rank": rank, "run": r["run"], "measure": measure, "mean": r["value"], "ci_low": r.get("ci_low"),
                    "ci_high": r.get("ci_high"), "delta": None if base else r.get("delta"),
                    "delta_ci_low": None if base else r.get("delta_ci_low"),
                    "delta_ci_high": None if base else r.get("delta_ci_high"),
                    "verdict": "the default (baseline)" if base else (r.get("verdict") or r.get("status"))})
    return out


def ranking_lines(report: Mapping[str, Any]) -> list[str]:
    """``1. bm25  nDCG@10 0.900 [0.845, 0.944]  Δ +0.012 [...] → better`` per run, best first."""
    out = []
    for r in ranking(report):
        row = dict(r, value=r["mean"])
        tail = "(the default)" if r["delta"] is None else f"Δ {interval_text(r)} → {r['verdict']}"
        out.append(f"{r['rank']}. {r['run']}: {r['measure']} {_mean_text(row)}  {tail}")
    return out


def best_line(report: Mapping[str, Any], where: str = "") -> str | None:
    """Line 1: the best strategy on this set, its mean with an interval, its gain over the default."""
    measure, rows = _first_rows(report)
    if not rows:
        return None
    baseline = report.get("baseline")
    best = max(rows, key=lambda r: (round(float(r["value"]), 12), r.get("status") == "baseline"))
    head = f"best{f' for {where}' if where else ''}: {best['run']}, {measure} {_mean_text(best)}"
    compared = [r for r in rows if r.get("verdict")]
    if best.get("status") == "baseline":
        if not compared:
            return f"{head} (the only strategy)"
        closest = max(compared, key=lambda r: float(r["delta"]))
        return (f"{head}: the default itself; nothing beats it (closest: "
                f"{comparison_line(dict(closest, baseline=baseline))})")
    if not best.get("verdict"):
        return f"{head}; vs the default {baseline}: not compared ({best.get('status')})"
    return f"{head}; vs the default {baseline}, {comparison_tail(best)}"


def sure_line(report: Mapping[str, Any], compared: Mapping[str, Any] | None = None, split: str = "") -> str | None:
    """Line 2: how many questions, who wrote them, and what this set can detect (for ``compared``, a comparison
    row, or else the least sensitive undecided comparison of the first measure)."""
    measure, rows = _first_rows(report)
    params = report.get("params") or {}
    counts = params.get("questions")
    if not rows or not isinstance(counts, Mapping):
        return None
    n = sum(int(v) for v in counts.values())
    parts = [f"{int(counts[k])} {label}" for k, label in PROVENANCE.items() if int(counts.get(k) or 0)]
    backed = ", none real (from users)" if not counts.get("real") else ""
    candidates = [compared] if compared else rows
    undecided = [r for r in candidates if r.get("verdict") == UNDECIDED and r.get("mde") is not None]
    if undecided:
        worst = max(undecided, key=lambda r: float(r["mde"]))
        m = int(worst.get("comparisons") or 1)
        detect = (f"this set detects a difference of {float(worst['mde']):.3f} {measure} or more "
                  f"(paired t-test, alpha {ALPHA:g}{f'/{m}' if m > 1 else ''}, power 0.8)")
    elif any(r.get("verdict") for r in candidates):
        detect = "the difference from the default is detected at this size"
    else:
        detect = "one strategy: nothing to detect"
    return f"how sure: {n} {split}questions, {', '.join(parts) or 'none'}{backed}; {detect}"


def tune_lines(tune: Mapping[str, Any], report: Mapping[str, Any], where: str) -> list[str]:
    """The answer of a tune run: the best strategy with its held-out mean and interval and its gain over the
    default (the decision's comparison, the same words), how sure, then the search's ranking, best first."""
    d, best, baseline = tune["decision"], tune["best"], tune["baseline"]
    measure, rows = _first_rows(report)
    by_run = {r["run"]: r for r in rows}
    comp = d.get("comparison")
    if best == baseline or not comp:
        held = by_run.get("default")
        line1 = (f"best for {where}: {baseline} (the default), held-out {measure} "
                 f"{_mean_text(held) if held else '?'}: nothing on the grid beat it on the tune split")
    else:
        held = by_run.get("best")
        comp = {**comp, "measure": measure}
        line1 = (f"best for {where}: {best}, held-out {measure} {_mean_text(held) if held else '?'}; "
                 f"vs the default {baseline}, {comparison_tail(comp)}")
    line1 += f"; verdict: {d['verdict']}"
    tuned = len(((tune.get("params") or {}).get("splits") or {}).get("tune", {}).get("ids") or [])
    sure = sure_line(report, comp if comp else None, "held-out ")
    sure = f"{sure}; chosen on {tuned} other questions" if sure and tuned else sure
    search = [f"{i}. {r['strategy']}: {measure} {float(r['mean']):.3f} on the tune split ({r['n']} questions)"
              for i, r in enumerate(tune.get("search") or [], 1)]
    return [line1, *([sure] if sure else []), *search]
