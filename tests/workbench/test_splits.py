"""The workbench's two query splits: shards for parallel work, and a held-out split for decisions.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_splits.py -q``
"""

from __future__ import annotations

import pytest

from vaulteval.errors import UsageError
from vaulteval.workbench.splits import holdout_split, shard_queries


def test_shards_are_contiguous_and_cover_every_query() -> None:
    items = list(range(10))
    assert shard_queries(items, 3) == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert shard_queries(items, 50) == [[i] for i in items]
    assert shard_queries([], 4) == [[]]


def test_holdout_split_is_stable_per_id_and_free_of_order() -> None:
    ids = [f"q{i:03d}" for i in range(200)]
    tune_ids, test_ids = holdout_split(ids, 0.3, 0)
    assert sorted(tune_ids + test_ids) == ids and not set(tune_ids) & set(test_ids)
    assert 30 <= len(test_ids) <= 90  # about 30% of 200
    assert holdout_split(list(reversed(ids)), 0.3, 0)[1] == list(reversed(test_ids))
    assert holdout_split(ids[:100], 0.3, 0)[1] == [q for q in test_ids if q < "q100"]  # adding ids moves none
    assert holdout_split(ids, 0.3, 1)[1] != test_ids
    with pytest.raises(UsageError, match="between 0 and 1"):
        holdout_split(ids, 1.0, 0)
