"""The two ways the workbench splits queries, one function per purpose.

Usage::

    parts = shard_queries(qs.queries, 4)                   # contiguous parts for parallel tasks; same results
    tune_ids, test_ids = holdout_split(ids, 0.5, seed=0)   # choose on one part, confirm on the other

``shard_queries`` only spreads work: the rows of all shards, concatenated, are
the rows of one serial run. ``holdout_split`` decides which queries a choice
is made on and which confirm it: each id goes to a side by a seeded sha256 of
the id alone, so the split is stable when queries are added, removed or
reordered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from vaulteval.errors import UsageError

T = TypeVar("T")


def shard_queries(queries: Sequence[T], n: int) -> list[list[T]]:
    """Usage: ``shard_queries(qs.queries, 3)`` -> up to 3 contiguous, near-equal parts in query-set order."""
    n = max(1, min(int(n), len(queries) or 1))
    size, extra = divmod(len(queries), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(list(queries[start:end]))
        start = end
    return out


def holdout_split(ids: Sequence[str], test_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Usage: ``tune_ids, test_ids = holdout_split(ids, 0.5, 0)``: stable per id, independent of order."""
    if not 0 < test_fraction < 1:
        raise UsageError(f"--test-fraction must be between 0 and 1, got {test_fraction}")
    tune_ids, test_ids = [], []
    for qid in ids:
        h = int(hashlib.sha256(f"{seed}:{qid}".encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
        (test_ids if h < test_fraction else tune_ids).append(qid)
    return tune_ids, test_ids
