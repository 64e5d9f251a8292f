"""Metrics by slice: query kind, tag, script, the top folder of the relevant page and the overlap band.

Usage::

    slices = slice_metrics(per_query, queryset, seed=0)
    # run, measure, value, n, ci_low, ci_high, slice_by, slice   (long format, as in metrics.csv)

A query belongs to one kind (``hand-written`` without ``kind:``), one script
(``vaulteval.querysets.scripts.script_of`` of its text), one folder (of its
best-graded relevant page, the first by path on a tie), to every one of its
tags, and to its ``overlap_band`` (low, mid, high: how many of its words its
target holds) when the set records one. Each slice's mean has its own 95% bootstrap interval, so a slice of
five queries shows how little it can say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import Query, QuerySet

SLICE_BY = ("kind", "tag", "script", "folder", "overlap")


def _folder(q: "Query") -> str:
    best = max(q.relevant.values())
    page = min(p for p, g in q.relevant.items() if g == best)
    parts = page.split("/")
    if parts[0] == "wiki" and len(parts) > 1:
        parts = parts[1:]
    return parts[0] if len(parts) > 1 else "(root)"


def query_slices(queryset: "QuerySet") -> "pd.DataFrame":
    """query_id, slice_by, slice: one row per membership (a query is in each of its tags)."""
    import pandas as pd

    from vaulteval.querysets.scripts import script_of

    rows = []
    for q in queryset.positive:
        rows.append((q.query_id, "kind", q.kind or "hand-written"))
        rows.append((q.query_id, "script", script_of(q.text)))
        rows.append((q.query_id, "folder", _folder(q)))
        rows += [(q.query_id, "tag", t) for t in dict.fromkeys(q.tags)]
        if q.overlap_band:
            rows.append((q.query_id, "overlap", q.overlap_band))
    return pd.DataFrame(rows, columns=["query_id", "slice_by", "slice"])


def slice_metrics(per_query: "pd.DataFrame", queryset: "QuerySet", *, seed: int = 0) -> "pd.DataFrame":
    """Mean and 95% bootstrap interval of every measure, per run and slice."""
    import pandas as pd

    from vaulteval.workbench.intervals import mean_ci
    from vaulteval.workbench.measures import fmean

    columns = ["run", "measure", "value", "n", "ci_low", "ci_high", "slice_by", "slice"]
    member = query_slices(queryset)
    if member.empty or per_query.empty:
        return pd.DataFrame(columns=columns)
    joined = per_query.merge(member, on="query_id").sort_values(["slice_by", "slice", "query_id"], kind="stable")
    rows = []
    for (run, measure, by, name), grp in joined.groupby(["run", "measure", "slice_by", "slice"], sort=False):
        low, high = mean_ci(grp.value.to_numpy(), seed=seed)
        rows.append((run, measure, fmean(grp.value.tolist()), len(grp), low, high, by, name))
    out = pd.DataFrame(rows, columns=columns)
    order = {b: i for i, b in enumerate(SLICE_BY)}
    return out.sort_values(["run", "slice_by", "slice", "measure"], key=lambda s: s.map(order) if s.name ==
                           "slice_by" else s, kind="stable").reset_index(drop=True)
