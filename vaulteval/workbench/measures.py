"""Measures through ir-measures: per query and aggregated; negative queries apart.

Usage::

    ms = parse_measures(["nDCG@10", "R@100", "RR"])
    pq = per_query(run, queryset, ms)        # run, query_id, measure, value (queries with a relevant page)
    aggregate(pq)                             # run, measure, value (mean), n
    with_intervals(aggregate(pq), pq)         # ... plus ci_low, ci_high (95% bootstrap)
    negatives(run, queryset)                  # run, query_id, n_returned, top_score, top_doc

Means are over queries with at least one relevant page (grade > 0); a query
the run returned nothing for scores 0 on every measure. Negative queries
(nothing relevant) never enter a mean: they are reported by how many returned
anything and with what top score. Measures are computed by ir-measures'
pytrec_eval backend, so nDCG uses the grades as gains, as trec_eval does.
Every mean is taken with ``math.fsum`` (``fmean``), so it has the same bits
whatever order the queries arrive in: serial, ``local:N`` and a cluster write
the same ``metrics.csv``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench.runs import Run

DEFAULT_MEASURES = ("nDCG@{k}", "R@{k}", "P@{k}", "Success@{k}", "RR", "AP")


class UnknownMeasure(UsageError):
    """A measure name ir-measures cannot parse."""


def default_measures(k: int = 10) -> list[str]:
    return [m.format(k=k) for m in DEFAULT_MEASURES]


def parse_measures(items: "Iterable[Any] | str | None" = None, k: int = 10) -> list:
    """Usage: ``parse_measures("nDCG@10,RR")`` -> ir_measures Measure objects (strings or Measures in)."""
    import ir_measures

    if items is None:
        items = default_measures(k)
    if isinstance(items, str):
        items = [p for p in items.replace(" ", ",").split(",") if p]
    out = []
    for item in items:
        if not isinstance(item, str):
            out.append(item)
            continue
        try:
            out.append(ir_measures.parse_measure(item))
        except (ValueError, NameError, TypeError, SyntaxError, KeyError) as exc:
            raise UnknownMeasure(f"unknown measure {item!r} ({exc}); try nDCG@10, R@100, RR, P@5, Success@10, AP") from None
    if not out:
        raise UnknownMeasure("no measures given; try --measures nDCG@10,R@10,RR")
    return list(dict.fromkeys(out))


def per_query(run: "Run", queryset: "QuerySet", measures: Iterable[Any]) -> "pd.DataFrame":
    """One row per (positive query, measure); zero where the run returned nothing."""
    import ir_measures
    import pandas as pd

    ms = parse_measures(list(measures))
    positive = [q.query_id for q in queryset.positive]
    qrels = [qr for qr in queryset.to_qrels() if qr.query_id in set(positive)]
    values: dict[tuple[str, str], float] = {(qid, str(m)): 0.0 for qid in positive for m in ms}
    scored = [sd for sd in run.scored_docs() if sd.query_id in set(positive)]
    if scored and qrels:
        for metric in ir_measures.iter_calc(ms, qrels, scored):
            values[(metric.query_id, str(metric.measure))] = float(metric.value)
    rows = [(run.name, qid, m, v) for (qid, m), v in values.items()]
    return pd.DataFrame(rows, columns=["run", "query_id", "measure", "value"])


def fmean(values: Iterable[float]) -> float:
    """Usage: ``fmean([0.5, 1.0])`` -> the mean through ``math.fsum``: exactly rounded, so the same bits in any
    order (serial, Dask shards, another hash seed); NaN when empty."""
    items = list(values)
    return math.fsum(items) / len(items) if items else math.nan


def aggregate(per_query_df: "pd.DataFrame") -> "pd.DataFrame":
    """Mean of each (run, measure) over its rows (``fmean``; NaN skipped), in first-seen order, with the count ``n``."""
    import pandas as pd

    rows = []
    for (run, measure), grp in per_query_df.groupby(["run", "measure"], sort=False):
        values = grp["value"].dropna().tolist()
        rows.append((run, measure, fmean(values), len(values)))
    return pd.DataFrame(rows, columns=["run", "measure", "value", "n"])


def with_intervals(agg: "pd.DataFrame", per_query_df: "pd.DataFrame", *, seed: int = 0) -> "pd.DataFrame":
    """``agg`` plus ``ci_low``/``ci_high``: the 95% bootstrap interval of each mean over its queries."""
    from vaulteval.workbench.intervals import mean_ci

    # Queries in id order, as compare() pairs them, so both give the same interval for the same seed.
    groups = {key: grp.sort_values("query_id")["value"].to_numpy()
              for key, grp in per_query_df.groupby(["run", "measure"], sort=False)}
    bounds = [mean_ci(groups[(r, m)], seed=seed) for r, m in zip(agg.run, agg.measure)]
    out = agg.copy()
    out["ci_low"] = [b[0] for b in bounds]
    out["ci_high"] = [b[1] for b in bounds]
    return out


def negatives(run: "Run", queryset: "QuerySet") -> "pd.DataFrame":
    """Each negative query: how many pages the run returned and the top one's score."""
    import pandas as pd

    rows = []
    top = run.df.sort_values("rank").groupby("query_id", sort=False)
    firsts = {qid: grp.iloc[0] for qid, grp in top}
    counts = run.df.groupby("query_id").size().to_dict()
    for q in queryset.negative:
        first = firsts.get(q.query_id)
        rows.append((run.name, q.query_id, int(counts.get(q.query_id, 0)),
                     float(first.score) if first is not None else None,
                     first.doc_id if first is not None else None))
    return pd.DataFrame(rows, columns=["run", "query_id", "n_returned", "top_score", "top_doc"])


def negatives_summary(neg: "pd.DataFrame") -> "pd.DataFrame":
    """Per run: negative queries, how many returned anything, mean and max top score."""
    import pandas as pd

    rows = []
    for name, grp in neg.groupby("run", sort=False):
        returned = grp[grp.n_returned > 0]
        rows.append((name, len(grp), len(returned),
                     fmean(returned.top_score.tolist()) if len(returned) else None,
                     float(returned.top_score.max()) if len(returned) else None))
    return pd.DataFrame(rows, columns=["run", "negatives", "returned_any", "mean_top_score", "max_top_score"])


def condensed(run: "Run", queryset: "QuerySet") -> "Run":
    """The run with every unjudged page removed and the rest re-ranked (Sakai's condensed lists)."""
    from vaulteval.workbench.runs import Run

    judged = {(q.query_id, d) for q in queryset for d in q.relevant}
    keep = [(qid, doc) in judged for qid, doc in zip(run.df.query_id, run.df.doc_id)]
    df = run.df[keep].sort_values(["query_id", "rank"]).copy()
    df["rank"] = df.groupby("query_id").cumcount() + 1
    return Run(run.name, df.reset_index(drop=True), run.strategy)


def judged_at(run: "Run", queryset: "QuerySet", k: int) -> float | None:
    """Mean share of each positive query's top k that carries a judgment (any grade): unjudged pages count as
    non-relevant in every measure, so a low value means the numbers undercount. ir-measures' ``Judged@k``."""
    import ir_measures

    positive = {q.query_id for q in queryset.positive}
    if not positive:
        return None
    qrels = [qr for qr in queryset.to_qrels() if qr.query_id in positive]
    scored = [sd for sd in run.scored_docs() if sd.query_id in positive]
    measure = ir_measures.parse_measure(f"Judged@{k}")
    values = {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], qrels, scored)} if scored else {}
    return fmean(values.get(qid, 0.0) for qid in positive)


def pool_recall(run: "Run", queryset: "QuerySet") -> float | None:
    """Mean share of relevant pages inside the candidate pool: the ceiling of any reranker over it."""
    pools = run.pool_pages()
    if run.pool is None:
        return None
    shares = []
    for q in queryset.positive:
        rel = {d for d, g in q.relevant.items() if g > 0}
        shares.append(len(rel & set(pools.get(q.query_id, []))) / len(rel))
    return fmean(shares) if shares else None
