"""Compare runs against a baseline: deltas, wins/ties/losses, paired tests, rerank impact.

Usage::

    report = compare([bm25_run, rerank_run], queryset, ["nDCG@10", "R@10"], baseline="bm25")
    report.to_dataframe()          # run, measure, value, baseline_value, delta, its interval, p, verdict,
                                   # mde, more_queries, comparisons, wins, ties, losses, status

Deltas and tests are over the queries with a relevant page, paired by query,
by one procedure (``procedure.paired_comparison``: a paired t-test whose own
interval, Bonferroni-corrected across the compared runs of each measure,
decides the verdict). A run whose
reranker fell back for every query gets ``status = "fallback: <reason> (n/N
queries)"`` and no delta or p-value: its numbers are BM25's, not the
reranker's, so they are never shown as "no impact".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.workbench.measures import fmean, negatives, negatives_summary, parse_measures, per_query, pool_recall
from vaulteval.workbench.report import Report
from vaulteval.workbench.intervals import mean_ci
from vaulteval.workbench.procedure import PROCEDURE, REPORT_FORMAT, paired_comparison
from vaulteval.workbench.stats import TIE_EPS

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench.runs import Run

SUMMARY_COLUMNS = ["run", "measure", "value", "ci_low", "ci_high", "baseline_value", "delta", "delta_ci_low",
                   "delta_ci_high", "p", "verdict", "mde", "more_queries", "comparisons", "wins", "ties", "losses",
                   "status"]



def compare(runs: "Sequence[Run] | dict[str, Run]", queryset: "QuerySet", measures: Iterable[Any] | None = None, *,
            baseline: "str | Run | None" = None, k: int = 10, alpha: float = 0.05, seed: int = 0,
            per_query_df: "pd.DataFrame | None" = None) -> Report:
    """Usage: ``compare(runs, queryset, baseline="bm25")`` -> Report (the first run is the default baseline)."""
    import pandas as pd

    from vaulteval.querysets.bands import semantic_note

    run_list = list(runs.values()) if isinstance(runs, dict) else list(runs)
    if not run_list:
        raise UsageError("compare needs at least one run")
    names = [r.name for r in run_list]
    if len(set(names)) != len(names):
        raise UsageError(f"run names must be unique to compare them, got {names}; rename with Strategy name=...")
    base_name = baseline.name if hasattr(baseline, "name") else (baseline or names[0])
    if base_name not in names:
        raise UsageError(f"baseline {base_name!r} is not among the runs ({', '.join(names)})")
    ms = [str(m) for m in parse_measures(measures, k)]
    pq = per_query_df if per_query_df is not None else pd.concat([per_query(r, queryset, ms) for r in run_list])
    wide = pq.pivot_table(index=["measure", "query_id"], columns="run", values="value")
    by_name = {r.name: r for r in run_list}

    rows, deltas = [], []
    tested = [n for n in names if n != base_name and not by_name[n].fully_fell_back]
    for measure in ms:
        block = wide.loc[measure]
        base = block[base_name]
        for name in names:
            run = by_name[name]
            status = "baseline" if name == base_name else (run.fallback or "ok")
            low, high = mean_ci(block[name].to_numpy(), seed=seed)
            row = {"run": name, "measure": measure, "value": fmean(block[name].dropna().tolist()), "ci_low": low,
                   "ci_high": high, "baseline_value": fmean(base.dropna().tolist()), "status": status}
            if name in tested:
                c = paired_comparison(block[name].to_numpy(), base.to_numpy(), comparisons=len(tested), alpha=alpha)
                diff = block[name].to_numpy() - base.to_numpy()
                row.update(c.as_row(), wins=int((diff > TIE_EPS).sum()), losses=int((diff < -TIE_EPS).sum()))
                row["ties"] = c.n - row["wins"] - row["losses"]
                row.pop("n")
                d = (block[name] - base).rename("delta").reset_index()
                d["run"], d["measure"], d["value"], d["baseline"] = name, measure, block[name].values, base.values
                deltas.append(d)
            rows.append(row)
    summary = pd.DataFrame(rows).reindex(columns=SUMMARY_COLUMNS)
    summary = summary.astype({"wins": "Int64", "ties": "Int64", "losses": "Int64", "more_queries": "Int64",
                              "comparisons": "Int64", "verdict": "object", "mde": "float64"})
    per_q = pd.concat(deltas)[["run", "query_id", "measure", "value", "baseline", "delta"]] if deltas else \
        pd.DataFrame(columns=["run", "query_id", "measure", "value", "baseline", "delta"])

    notes = [f"WARNING {r.name}: {r.fallback}; its numbers are BM25's, not the reranker's"
             for r in run_list if r.fallback]
    notes += noise_notes(summary, len(wide.loc[ms[0]]) if len(ms) else 0)
    notes += [n for n in [semantic_note(queryset)] if n]
    tables = {
        "summary": summary,
        "rerank": _rerank_table(run_list, by_name[base_name], queryset, k),
        "pool": _pool_table(run_list, queryset),
        "negatives": negatives_summary(pd.concat([negatives(r, queryset) for r in run_list])),
        "latency": _latency_table(run_list),
    }
    from vaulteval.workbench.answer import questions

    params = {"k": k, "alpha": alpha, "seed": seed, "measures": ms, "report_format": REPORT_FORMAT,
              "procedure": PROCEDURE, "questions": questions(queryset)}
    return Report(tables=tables, per_query=per_q, baseline=base_name, notes=notes, params=params)


def gate(report: Report, fail_on: str = "worse") -> list[str]:
    """The comparison lines whose verdict is ``fail_on`` (the same lines the report prints); empty: it passes."""
    from vaulteval.workbench.procedure import comparison_line

    rows = report.to_dataframe().to_dict("records")
    return [comparison_line({**r, "baseline": report.baseline}) for r in rows if r.get("verdict") == fail_on]


def noise_notes(summary: "pd.DataFrame", n: int) -> list[str]:
    """One line per measure: the largest minimum detectable effect among the undecided comparisons, in words."""
    notes = []
    for measure, grp in summary[summary.mde.notna()].groupby("measure", sort=False):
        m = int(grp.comparisons.max())
        notes.append(f"with {n} queries a difference under {grp.mde.max():.3f} {measure} cannot be told from noise "
                     f"(paired t-test, alpha 0.05{f'/{m}' if m > 1 else ''}, power 0.8)")
    return notes


def rescued_and_lost(run: "Run", queryset: "QuerySet", k: int, reference: dict[str, list[str]] | None = None
                     ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Relevant pages the run has in its top k and the reference (its own BM25 order) has not, and vice versa."""
    ref = reference if reference is not None else run.bm25_rankings()
    if ref is None:
        raise UsageError(f"run {run.name} has no pool; pass the BM25 run as reference")
    final = run.rankings()
    rescued, lost = [], []
    for q in queryset.positive:
        rel = {d for d, g in q.relevant.items() if g > 0}
        now, before = set(final.get(q.query_id, [])[:k]) & rel, set(ref.get(q.query_id, [])[:k]) & rel
        rescued += [(q.query_id, d) for d in sorted(now - before)]
        lost += [(q.query_id, d) for d in sorted(before - now)]
    return rescued, lost


def _rerank_table(runs: list["Run"], base: "Run", queryset: "QuerySet", k: int) -> "pd.DataFrame":
    import pandas as pd

    rows = []
    for run in runs:
        if not run.reranked:
            continue
        reference = run.bm25_rankings() if run.pool is not None else base.rankings()
        rescued, lost = rescued_and_lost(run, queryset, k, reference)
        rows.append({"run": run.name, "status": run.fallback or "ok", "queries_reranked": len(run.reranked_queries),
                     f"rescued@{k}": len(rescued), f"lost@{k}": len(lost), "net": len(rescued) - len(lost),
                     "rescued_pages": _examples(rescued), "lost_pages": _examples(lost)})
    return pd.DataFrame(rows)


def _examples(pairs: list[tuple[str, str]], limit: int = 5) -> str:
    shown = "; ".join(f"{q}:{d}" for q, d in pairs[:limit])
    return shown + (f"; +{len(pairs) - limit} more" if len(pairs) > limit else "")


def _pool_table(runs: list["Run"], queryset: "QuerySet") -> "pd.DataFrame":
    import pandas as pd

    rows = [{"run": r.name, "bm25_top": r.strategy.bm25_top if r.strategy else None,
             "pool_recall": pool_recall(r, queryset)} for r in runs if r.pool is not None]
    return pd.DataFrame(rows)


def _latency_table(runs: list["Run"]) -> "pd.DataFrame":
    import pandas as pd

    rows = []
    for r in runs:
        if r.queries is None or r.queries.empty:
            continue
        lat = r.queries.latency_ms.astype(float)
        rr = r.queries.rerank_ms.astype(float) if r.reranked else None
        rows.append({"run": r.name, "queries": len(lat), "mean": lat.mean(), "p50": lat.quantile(0.5),
                     "p95": lat.quantile(0.95), "max": lat.max(),
                     "rerank_mean": rr.mean() if rr is not None else None})
    return pd.DataFrame(rows)
