"""Okapi BM25 scoring as small pure functions.

Usage: ``scores = score_terms(n_docs, doc_norm, [(docs, tfs, qtf), ...], k1)``

idf = ln(1 + (N - df + 0.5) / (df + 0.5)); a term adds
idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)) to each document it occurs in,
once per occurrence in the query (as the seed does).
"""

from __future__ import annotations

import math

import numpy as np

K1 = 1.5
B = 0.75


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def length_norm(doc_len: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """The per-document term k1 * (1 - b + b * dl / avgdl), computed once per index."""
    avg = avgdl if avgdl > 0 else 1.0
    return k1 * (1.0 - b + b * doc_len.astype(np.float64) / avg)


def score_terms(
    n_docs: int,
    norm: np.ndarray,
    postings: list[tuple[np.ndarray, np.ndarray, int]],
    k1: float,
) -> np.ndarray:
    """Sum BM25 contributions of each (doc ids, term freqs, query count) posting list.

    Each posting's weight is ``idf * (tf * (k1 + 1) / (tf + norm))`` (``posting_weights``), times the
    query count, added term by term: the batch scorer of the workbench computes bit-identical sums.
    """
    scores = np.zeros(n_docs, dtype=np.float64)
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
