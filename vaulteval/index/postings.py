"""Inverted lists for a build, assembled with numpy from every document's terms at once.

Usage::

    lists = Postings()
    lists.add(doc_number, ["descal", "machin", "descal"])          # a freshly tokenized document
    lists.reuse(old_index, [(old_doc, new_doc), ...])              # documents copied from the previous index
    words, post_off, post_docs, post_tfs = lists.finish(n_docs)

The result is the same whatever the order of ``add`` calls: a vocabulary
sorted by code point (the UTF-8 byte order a binary search needs), and per
term its documents ascending with their term frequencies.
"""

from __future__ import annotations

from itertools import islice
from operator import lt
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index


class Postings:
    """Terms of fresh documents kept as one flat list; reused documents' postings kept as arrays."""

    def __init__(self) -> None:
        self._flat: list[str] = []
        self._docs: list[int] = []
        self._lengths: list[int] = []
        self._old: tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, doc: int, terms: list[str]) -> None:
        self._flat += terms
        self._docs.append(doc)
        self._lengths.append(len(terms))

    def reuse(self, old: "BM25Index", pairs: list[tuple[int, int]]) -> None:
        """Postings of the previous index's documents ``old_doc``, renumbered ``new_doc``, pulled in bulk."""
        if not pairs:
            return
        remap = np.full(old.n_docs, -1, dtype=np.int64)
        pair = np.array(pairs, dtype=np.int64)
        remap[pair[:, 0]] = pair[:, 1]
        # The build verified the whole index (``BM25Index.verify``: every byte, and what its numbers mean) before
        # reusing it: its sections are read as they are, without the per-read checks of the properties.
        old_docs = old.section("post_docs") if getattr(old, "verified", None) else old.post_docs
        new_docs = remap[old_docs]
        keep = new_docs >= 0
        df_old = np.diff(old.section("post_offsets").astype(np.int64))
        term_of = np.repeat(np.arange(old.n_terms, dtype=np.int64), df_old)[keep]
        tfs = old.section("post_tfs") if getattr(old, "verified", None) else old.post_tfs
        self._old = (old.all_terms(), term_of, new_docs[keep], tfs[keep].astype(np.int64))

    def finish(self, n_docs: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """(sorted vocabulary, offsets into the lists, document numbers, term frequencies)."""
        fresh_vocab = set(self._flat)
        width = max(n_docs, 1)
        if self._old is None:
            words = sorted(fresh_vocab)
            ids = dict(zip(words, range(len(words))))
        elif ascending(self._old[0]):
            words, ids, lut = _merged_vocabulary(self._old[0], self._old[1], fresh_vocab)
        else:  # a previous vocabulary out of order (not as a build writes it): every term through a dict
            old_words, term_of = self._old[0], self._old[1]
            used = np.bincount(term_of, minlength=len(old_words)).astype(bool).tolist()
            words = sorted(fresh_vocab.union(w for w, u in zip(old_words, used) if u))
            ids = dict(zip(words, range(len(words))))
            lut = np.fromiter(map(ids.get, old_words, [-1] * len(old_words)), dtype=np.int64, count=len(old_words))
        # Fresh documents: one (term, document) key per token; its count is the term frequency.
        term_ids = np.fromiter(map(ids.__getitem__, self._flat), dtype=np.int64, count=len(self._flat))
        doc_ids = np.repeat(np.array(self._docs, dtype=np.int64), np.array(self._lengths, dtype=np.int64))
        keys, tfs = np.unique(term_ids * width + doc_ids, return_counts=True)
        terms, docs = keys // width, keys % width
        if self._old is not None:
            _, term_of, old_docs, old_tfs = self._old
            old_terms = lut[term_of]
            old_keys = old_terms * width + old_docs
            if old_keys.size < 2 or bool(np.all(old_keys[1:] > old_keys[:-1])):
                # Renumbering kept the old order (the usual case): each fresh key goes in at its place, one pass.
                at = np.searchsorted(old_keys, keys)
                terms, docs = np.insert(old_terms, at, terms), np.insert(old_docs, at, docs)
                tfs = np.insert(old_tfs, at, tfs)
            else:
                # Both parts are sorted runs of distinct keys (a document is fresh or reused, never both), so a
                # stable sort is one merge.
                order = np.argsort(np.concatenate([keys, old_keys]), kind="stable")
                terms = np.concatenate([terms, old_terms])[order]
                docs = np.concatenate([docs, old_docs])[order]
                tfs = np.concatenate([tfs, old_tfs])[order]
        df = np.bincount(terms, minlength=len(words)) if words else np.zeros(0, np.int64)
        post_off = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(df, out=post_off[1:])
        return words, post_off, docs, tfs.astype(np.int64)


def ascending(words: list[str]) -> bool:
    """Whether ``words`` are in strictly rising code point order, as a build writes its vocabulary."""
    return all(map(lt, words, islice(words, 1, None)))


def canonical(terms: list[str], offsets, docs) -> bool:
    """Whether a vocabulary and its postings (``offsets`` into ``docs``) are as a build writes them: the terms
    strictly rising, every term with at least one posting, each term's documents strictly ascending."""
    if not ascending(terms):
        return False
    off = np.asarray(offsets, dtype=np.int64)
    if off.size > 1 and int(np.diff(off).min()) < 1:
        return False
    docs = np.asarray(docs, dtype=np.int64)
    if docs.size < 2:
        return True
    rising = docs[1:] > docs[:-1]
    rising[off[1:-1] - 1] = True  # a term's first posting may be below its predecessor's last
    return bool(rising.all())


def _merged_vocabulary(old_words: list[str], term_of: np.ndarray, fresh: set[str]
                       ) -> tuple[list[str], dict[str, int], np.ndarray]:
    """(the new sorted vocabulary, the fresh terms' numbers in it, each old term's number in it or -1), for an
    old vocabulary in strictly rising order (``ascending``).

    Only the fresh terms are looked up (by bisection in the old sorted vocabulary), not every old term: an
    incremental build brings a few thousand terms to a vocabulary of a hundred thousand or more."""
    from bisect import bisect_left

    n_old = len(old_words)
    used = np.bincount(term_of, minlength=n_old).astype(bool) if n_old else np.zeros(0, bool)
    at = {w: bisect_left(old_words, w) for w in fresh}
    new = sorted(w for w, i in at.items() if i == n_old or old_words[i] != w)
    used[[at[w] for w in fresh if at[w] < n_old and old_words[at[w]] == w]] = True  # a fresh term keeps its word
    rank = np.cumsum(used) - 1  # an old term's number among the old terms kept
    inserted = np.array([at[w] for w in new], dtype=np.int64)  # sorted: new words come before old word at[w]
    shift = np.searchsorted(inserted, np.arange(n_old), side="right") if new else 0
    lut = np.where(used, rank + shift, -1)
    ids = {}
    for k, w in enumerate(new):
        i = at[w]
        ids[w] = (int(rank[i - 1]) + 1 if i else 0) + k
    for w, i in at.items():
        if w not in ids:
            ids[w] = int(lut[i])
    kept = [w for w, u in zip(old_words, used.tolist()) if u] if not used.all() else old_words
    words = sorted(kept + new) if new else list(kept)  # timsort: one sorted run and a short tail
    return words, ids, lut
