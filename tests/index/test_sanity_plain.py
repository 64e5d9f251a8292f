"""The plain-Python meaning check of postings (a CLI query, numpy not loaded) agrees with the numpy one.

Usage: ``.venv/bin/python -m pytest tests/index/test_sanity_plain.py -q``
"""

from __future__ import annotations

import sys
from array import array

import pytest

from vaulteval.index.sanity import postings_ok

LENGTHS = [3, 1, 5, 2]
CASES = [
    ([0, 1, 2, 3], [1, 1, 5, 2], True),
    ([0, 2], [3, 4], True),
    ([], [], True),
    ([0, 4], [1, 1], False),  # a document past the end
    ([-1, 2], [1, 1], False),  # a negative document
    ([0, 2], [0, 1], False),  # tf below 1
    ([0, 2], [1, -2], False),
    ([0, 1], [1, 2], False),  # tf above its document's length
    ([2, 3], [5, 3], False),
    ([0, 1], [1], False),  # lengths differ
]


def _view(values: list[int]) -> memoryview:
    return memoryview(array("i", values)).cast("B").cast("i")


@pytest.mark.parametrize(("docs", "tfs", "ok"), CASES)
def test_plain_and_numpy_meaning_checks_agree(docs, tfs, ok, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "numpy" in sys.modules or pytest.importorskip("numpy")
    with_numpy = postings_ok(_view(docs), _view(tfs), _view(LENGTHS), len(LENGTHS))
    monkeypatch.delitem(sys.modules, "numpy")  # the branch a CLI call takes
    plain = postings_ok(_view(docs), _view(tfs), _view(LENGTHS), len(LENGTHS))
    assert plain == with_numpy == ok
