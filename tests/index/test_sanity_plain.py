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


class _Index:
    """What MeaningGuard reads of an index: two units of postings, one forged tf in the second half of unit 0."""

    def __init__(self, unit: int):
        n = 2 * unit
        self.n_docs, self.doc_len = n, [2] * n
        self.avgdl = 2.0
        self.docs, self.tfs = list(range(n)), [1] * n
        self.tfs[unit - 1] = 3  # above its document's length
        self.checked: list[tuple[str, int, int]] = []

    def raw(self, name: str) -> memoryview:
        return _view({"post_docs": self.docs, "post_tfs": self.tfs, "doc_len": self.doc_len}[name])

    def _check(self, name: str, start: int = 0, stop: int | None = None) -> None:
        self.checked.append((name, start, stop))

    def malformed(self, why: str) -> ValueError:
        return ValueError(why)


def test_the_plain_guard_checks_what_a_query_reads_and_remembers_only_whole_units(monkeypatch) -> None:
    from vaulteval.index import sanity

    monkeypatch.setattr(sanity, "SANE_UNIT", 8)
    monkeypatch.delitem(sys.modules, "numpy")  # a CLI call: plain Python
    index = _Index(8)
    guard = sanity.MeaningGuard(index, index.raw)
    guard.postings(0, 3)  # the first postings of unit 0 are fine: checked, the unit not remembered as done
    assert guard.done[0] == 0
    assert ("post_docs", 0, 8) in index.checked  # the checksums still cover the whole blocks
    guard.postings(8, 16)  # unit 1 wholly: remembered
    assert guard.done[1] == 1
    with pytest.raises(ValueError, match="term frequency"):
        guard.postings(2, 8)  # the forged tf, read later, is still refused
    with pytest.raises(ValueError, match="term frequency"):
        sanity.MeaningGuard(index, index.raw).postings(0, 16)


@pytest.mark.parametrize("fmt", ["b", "h", "i", "l", "q", "I"])
def test_the_sign_bit_test_agrees_with_min(fmt: str) -> None:
    from vaulteval.index.sanity import no_negative

    top = 2 ** (8 * array(fmt).itemsize - (1 if fmt.islower() else 0)) - 1
    low = -top - 1 if fmt.islower() else 0
    for values in ([], [0], [1, 2, 3], [top, 0], [low], [5, low, 7], [1, -1], [top, -2, top]):
        values = [v for v in values if low <= v <= top]
        view = memoryview(array(fmt, values))
        assert no_negative(view) == (min(values, default=0) >= 0), values
        assert no_negative(view[::2]) == (min(values[::2], default=0) >= 0), values  # not contiguous
