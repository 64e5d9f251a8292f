"""The vocabulary a warm searcher loads as a dict only when it gives the ids the binary search gives."""

from __future__ import annotations

import numpy as np
import pytest

from vaulteval.index import preload


class _Index:
    """What ``preload.vocabulary`` reads of a ``BM25Index``: the terms as stored, newline-terminated."""

    def __init__(self, terms: list[str], offsets: list[int] | None = None):
        self.blob = "".join(t + "\n" for t in terms).encode("utf-8")
        self.n_terms = len(terms)
        ends = np.cumsum([len(t.encode("utf-8")) + 1 for t in terms]).tolist()
        self.offsets = np.array([0, *ends] if offsets is None else offsets, dtype=np.int64)

    def all_terms(self) -> list[str]:
        return self.blob.decode("utf-8").split("\n")[:-1]

    def section(self, name: str):
        return {"terms": memoryview(self.blob), "term_offsets": self.offsets}[name]


def test_a_sorted_vocabulary_becomes_a_dict_of_the_same_ids() -> None:
    assert preload.vocabulary(_Index(["apple", "bär", "zebra", "日本"])) == {"apple": 0, "bär": 1, "zebra": 2, "日本": 3}


@pytest.mark.parametrize("terms", [["b", "a"], ["a", "a", "b"], ["a", "c", "b"]])
def test_an_unsorted_or_repeated_vocabulary_keeps_the_binary_search(terms: list[str]) -> None:
    assert preload.vocabulary(_Index(terms)) is None


def test_offsets_that_do_not_end_where_the_terms_do_keep_the_binary_search() -> None:
    assert preload.vocabulary(_Index(["ab", "cd"], offsets=[0, 2, 6])) is None  # "a" then "b\ncd\n"


def test_a_vocabulary_that_is_not_utf8_keeps_the_binary_search() -> None:
    index = _Index(["a", "b"])
    index.blob = b"a\n\xff\n"
    assert preload.vocabulary(index) is None


def test_a_vocabulary_over_the_bound_is_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preload, "PRELOAD_TERMS", 2)
    assert preload.vocabulary(_Index(["a", "b", "c"])) is None
