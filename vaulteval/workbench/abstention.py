"""Abstention: which score threshold lets a run say "nothing found" for negatives and still keep its answers.

Usage::

    curve = abstention_curve(run, queryset, k=10)   # run, step, threshold, fp_rate, recall_kept
    suggest(curve)                                  # (threshold, recall_kept, fp_rate) with fp_rate <= 10%, or None
    useful(suggest(curve))                          # False: "no useful threshold" (keeps under half the answers)

At a threshold t a run keeps only results whose ``score`` is at least t:
the value each result was ranked by (rerank cosine, fused score, dense cosine
or BM25), exactly what ``retrieve --min-score`` compares for that strategy.
A query whose model stage fell back was scored by the stage that ran instead, on another scale
(BM25's, not a cosine), so a reranked run's curve uses only the queries it reranked: one
threshold must mean one thing. ``fp_rate`` is the share of negative
queries that would still return something (top score >= t); ``recall_kept``
the share of the relevant pages it found in its top k that would survive.
The suggestion is the lowest threshold whose false-positive rate is at most
``max_fp``: the one that keeps the most answers. ``retrieve --min-score``
applies it. A threshold that keeps fewer than ``MIN_KEPT`` of the relevant pages found is no
useful threshold: it silences the run to silence the negatives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench.runs import Run

MAX_FP = 0.10
MIN_KEPT = 0.5
COLUMNS = ["run", "step", "threshold", "fp_rate", "recall_kept"]


def _scores(run: "Run", queryset: "QuerySet", k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top score of each negative query that returned anything; scores of relevant pages in a top k."""
    df = run.df[run.df["rank"] <= k]
    if getattr(run, "reranked", False) and run.fallback:  # keep one score scale: the queries the model scored
        df = df[df.query_id.isin(run.reranked_queries)]
    negative = {q.query_id for q in queryset.negative}
    top = df[df.query_id.isin(negative)].sort_values("rank").groupby("query_id").score.first()
    hits = []
    for q in queryset.positive:
        rows = df[(df.query_id == q.query_id) & df.doc_id.isin([d for d, g in q.relevant.items() if g > 0])]
        hits += rows.score.tolist()
    return top.to_numpy(dtype=np.float64), np.asarray(hits, dtype=np.float64)


def abstention_curve(run: "Run", queryset: "QuerySet", k: int = 10) -> "pd.DataFrame":
    """One row per candidate threshold (every observed score, and just above the highest negative)."""
    import pandas as pd

    neg_top, hits = _scores(run, queryset, k)
    n_neg = len(queryset.negative)
    if getattr(run, "reranked", False) and run.fallback:
        n_neg = sum(1 for q in queryset.negative if q.query_id in run.reranked_queries)
    if n_neg == 0 or hits.size == 0:
        return pd.DataFrame(columns=COLUMNS)
    cuts = set(neg_top.tolist()) | set(hits.tolist())
    if neg_top.size:
        cuts.add(float(np.nextafter(neg_top.max(), np.inf)))
    rows = []
    for step, t in enumerate(sorted(cuts)):
        rows.append((run.name, step, float(t), float((neg_top >= t).sum() / n_neg), float((hits >= t).mean())))
    return pd.DataFrame(rows, columns=COLUMNS)


def suggest(curve: "pd.DataFrame", max_fp: float = MAX_FP) -> tuple[float, float, float] | None:
    """The lowest threshold with ``fp_rate <= max_fp``: (threshold, recall_kept, fp_rate), or None."""
    ok = curve[curve.fp_rate <= max_fp]
    if ok.empty:
        return None
    best = ok.sort_values("threshold").iloc[0]
    return float(best.threshold), float(best.recall_kept), float(best.fp_rate)


def useful(best: tuple[float, float, float] | None, min_kept: float = MIN_KEPT) -> bool:
    """Whether a suggestion keeps at least ``min_kept`` of the relevant pages found (else "no useful threshold")."""
    return best is not None and best[1] >= min_kept
