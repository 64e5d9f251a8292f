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
    """Sum BM25 contributions of each (doc ids, term freqs, query count) posting list."""
    scores = np.zeros(n_docs, dtype=np.float64)
    for docs, tfs, qtf in postings:
        if docs.size == 0:
            continue
        tf = tfs.astype(np.float64)
        weight = idf(n_docs, int(docs.size)) * qtf
        scores[docs] += weight * tf * (k1 + 1.0) / (tf + norm[docs])
    return scores


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k best positive scores; ties broken by lower doc id."""
    hits = np.flatnonzero(scores > 0)
    if hits.size == 0 or k <= 0:
        return hits[:0], scores[:0]
    if hits.size > 4 * k:
        part = np.argpartition(-scores[hits], k - 1)[:k]
        threshold = scores[hits[part]].min()
        hits = hits[scores[hits] >= threshold]
    order = np.lexsort((hits, -scores[hits]))[:k]
    chosen = hits[order]
    return chosen, scores[chosen]
