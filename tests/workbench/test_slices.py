"""Slices: metrics by query kind, tag, script and folder, in long format with their own intervals.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_slices.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from vaulteval.querysets.queryset import Query, QuerySet
from vaulteval.workbench.slices import query_slices, slice_metrics


def _qs() -> QuerySet:
    queries = [
        Query("a", "espresso grinder", {"wiki/coffee/G.md": 2}, ("known",), fields={"kind": "title"}),
        Query("b", "研磨", {"wiki/coffee/G.md": 1, "wiki/tea/T.md": 2}, ("known", "cjk"), fields={"kind": "script"}),
        Query("c", "ファイル", {"wiki/Top.md": 1}),
        Query("n", "nothing", {}),
    ]
    return QuerySet("t", Path("t.yaml"), queries, "sha256:x", "yaml")


def test_each_query_lands_in_its_slices() -> None:
    member = query_slices(_qs())
    got = {(r.query_id, r.slice_by): set() for r in member.itertuples()}
    for r in member.itertuples():
        got[(r.query_id, r.slice_by)].add(r.slice)
    assert got[("a", "kind")] == {"title"} and got[("c", "kind")] == {"hand-written"}
    assert got[("a", "script")] == {"Latin"} and got[("b", "script")] == {"Han"} and got[("c", "script")] == {"Kana"}
    assert got[("b", "folder")] == {"tea"} and got[("c", "folder")] == {"(root)"}  # best grade decides
    assert got[("b", "tag")] == {"known", "cjk"}
    assert "n" not in set(member.query_id)  # negatives are never in a mean


def test_slice_means_by_hand() -> None:
    pq = pd.DataFrame([("bm25", "a", "RR", 1.0), ("bm25", "b", "RR", 0.5), ("bm25", "c", "RR", 0.0)],
                      columns=["run", "query_id", "measure", "value"])
    out = slice_metrics(pq, _qs()).set_index(["slice_by", "slice"])
    assert out.loc[("tag", "known"), "value"] == pytest.approx(0.75) and out.loc[("tag", "known"), "n"] == 2
    assert out.loc[("folder", "coffee"), "value"] == 1.0
    assert out.loc[("script", "Kana"), ["ci_low", "ci_high"]].tolist() == [0.0, 0.0]
    assert list(dict.fromkeys(out.reset_index().slice_by)) == ["kind", "tag", "script", "folder"]
