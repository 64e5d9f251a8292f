"""What ``judge.ipynb`` shows and saves: a pool as a table of pairs to grade, widgets if available, labels.

Usage::

    pool = load_or_build_pool("", "sample", "sample", depth=3)     # or a pool.yaml from `queryset pool`
    table = label_table(pool, limit=20)                            # edit table.grade (0, 1, 2)
    labels_from_table(table)                                       # {(query id, page): grade}

The notebook grades through ``grader.Grader`` (buttons, paging, saving as you go).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

SNIPPET = 200


def load_or_build_pool(pool: str, vault: str, queryset: str, *, strategies: list[str] | None = None,
                       depth: int = 3) -> dict[str, Any]:
    """A pool file as written by ``vaulteval queryset pool``, or (``pool`` empty) a fresh one, in memory."""
    from vaulteval.notebooks.support import resolve_inputs
    from vaulteval.workbench.pooling import pool_queryset, read_pool

    if pool:
        return read_pool(pool)
    v, qs = resolve_inputs(vault, queryset)
    return pool_queryset(v, qs, strategies or ["bm25"], depth=depth)


def label_table(pool: dict[str, Any], limit: int | None = None) -> "pd.DataFrame":
    """One row per pooled pair: query, page, best rank, strategies, snippet, and an empty ``grade`` to fill."""
    import pandas as pd

    rows = [{"query_id": p["query_id"], "query": p["query"], "page": p["page"], "best_rank": p["best_rank"],
             "strategies": ", ".join(p["strategies"]), "snippet": p["snippet"][:SNIPPET], "grade": pd.NA}
            for p in pool["pairs"][:limit]]
    table = pd.DataFrame(rows, columns=["query_id", "query", "page", "best_rank", "strategies", "snippet", "grade"])
    return table.astype({"grade": "Int64"})


def labels_from_table(table: "pd.DataFrame") -> dict[tuple[str, str], int]:
    """The graded rows as {(query id, page): grade}; rows left empty are not judged."""
    graded = table[table.grade.notna()]
    return {(r.query_id, r.page): int(r.grade) for r in graded.itertuples(index=False)}
