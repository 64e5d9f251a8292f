"""The build's inverted lists from numpy against a term-by-term reading of the same documents.

Usage: ``.venv/bin/python -m pytest tests/index/test_postings.py -q``
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings, strategies as st

from vaulteval.index.postings import Postings

WORDS = st.sampled_from(["a", "ab", "b", "東", "東京", "é", "e\u0301", "z" * 40, "0", "_x"])


def _by_hand(docs: list[list[str]]) -> tuple[list[str], list[int], list[int], list[int]]:
    per_term: dict[str, list[tuple[int, int]]] = {}
    for d, terms in enumerate(docs):
        for term, tf in Counter(terms).items():
            per_term.setdefault(term, []).append((d, tf))
    words = sorted(per_term)
    offsets, post_docs, post_tfs = [0], [], []
    for w in words:
        for d, tf in sorted(per_term[w]):
            post_docs.append(d)
            post_tfs.append(tf)
        offsets.append(len(post_docs))
    return words, offsets, post_docs, post_tfs


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.lists(WORDS, max_size=12), max_size=15), st.randoms(use_true_random=False))
def test_postings_are_the_term_by_term_lists_in_any_order_of_adding(docs: list[list[str]], rng) -> None:
    order = list(range(len(docs)))
    rng.shuffle(order)  # documents may arrive in any order; their numbers decide the layout
    lists = Postings()
    for d in order:
        lists.add(d, docs[d])
    words, offsets, post_docs, post_tfs = lists.finish(len(docs))
    assert (words, offsets.tolist(), post_docs.tolist(), post_tfs.tolist()) == _by_hand(docs)
