"""Okapi BM25 scoring as small pure functions.

Usage: ``scores = score_terms(n_docs, doc_norm, [(docs, tfs, qtf), ...], k1)``;
``docs, vals = scratch.top_k(n_docs, doc_norm, lists, k1, k)`` for a one-query search.

idf = ln(1 + (N - df + 0.5) / (df + 0.5)); a term adds
idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)) to each document it occurs in,
once per occurrence in the query (as the seed does).
"""

from __future__ import annotations

import threading

import numpy as np

from vaulteval.index.bm25_plain import idf

K1 = 1.5
B = 0.75


def length_norm(doc_len: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """The per-document term k1 * (1 - b + b * dl / avgdl), computed once per index."""
    avg = avgdl if avgdl > 0 else 1.0
    return k1 * (1.0 - b + b * doc_len.astype(np.float64) / avg)


def score_terms(
    n_docs: int,
    norm: np.ndarray,
    postings: list[tuple[np.ndarray, np.ndarray, int]],
    k1: float,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Sum BM25 contributions of each (doc ids, term freqs, query count) posting list.

    Each posting's weight is ``idf * (tf * (k1 + 1) / (tf + norm))`` (``posting_weights``), times the
    query count, added term by term: the batch scorer of the workbench computes bit-identical sums.
    ``out`` (all zeros, ``n_docs`` long) receives the sums instead of a new array.
    """
    scores = np.zeros(n_docs, dtype=np.float64) if out is None else out
    for docs, tfs, qtf in postings:
        if docs.size == 0:
            continue
        scores[docs] += posting_weights(idf(n_docs, int(docs.size)), tfs, norm[docs], k1) * float(qtf)
    return scores


def posting_weights(idf_t: float | np.ndarray, tfs: np.ndarray, doc_norm: np.ndarray, k1: float) -> np.ndarray:
    """BM25 weight of each posting: idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))."""
    tf = tfs.astype(np.float64)
    return idf_t * (tf * (k1 + 1.0) / (tf + doc_norm))


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k best positive scores; ties broken by lower doc id."""
    hits = np.flatnonzero(scores > 0)
    return top_k_of(hits, scores[hits], k)


def top_k_of(docs: np.ndarray, vals: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``top_k`` for the scores ``vals`` of the documents ``docs`` (ascending, distinct); the rest score 0."""
    keep = vals > 0
    docs, vals = docs[keep], vals[keep]
    if docs.size == 0 or k <= 0:
        return docs[:0], vals[:0]
    if docs.size > 4 * k:
        part = np.argpartition(-vals, k - 1)[:k]
        chosen = vals >= vals[part].min()
        docs, vals = docs[chosen], vals[chosen]
    order = np.lexsort((docs, -vals))[:k]
    return docs[order], vals[order]


class Scratch:
    """One reusable scores array for one-query searches.

    A fresh array of 8 bytes per document for every query comes from new pages of memory each
    time (tens of page faults a query on the tldr vault). Here the array is kept, and after each
    query only the documents it touched are set back to zero. A second thread that finds it busy
    scores into a new array, so sharing one index between threads stays safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._array: np.ndarray | None = None

    def top_k(self, n_docs: int, norm: np.ndarray, postings: list[tuple[np.ndarray, np.ndarray, int]], k1: float,
              k: int) -> tuple[np.ndarray, np.ndarray]:
        """``top_k(score_terms(...), k)``, computed in the kept array."""
        if not self._lock.acquire(blocking=False):
            return top_k(score_terms(n_docs, norm, postings, k1), k)
        try:
            if self._array is None or self._array.size != n_docs:
                self._array = np.zeros(n_docs, dtype=np.float64)
            scores = self._array
            try:
                return top_k(score_terms(n_docs, norm, postings, k1, out=scores), k)
            finally:
                for docs, _tfs, _qtf in postings:
                    scores[docs] = 0.0
        finally:
            self._lock.release()
