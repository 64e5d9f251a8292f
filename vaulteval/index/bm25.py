"""Okapi BM25 with numpy: the one array implementation, for one query or a block of queries.

Usage::

    scores = score_terms(n_docs, norm, [(docs, tfs, qtf), ...], k1)      # one query: every document's score
    matrix = score_rows(n_docs, norm, k1, [query_1_lists, query_2_lists])  # a block: one row per query
    matrix = score_postings(n_rows, n_docs, norm, k1, rows=..., docs=..., ...)  # the same from flat arrays
    docs, vals = top_k(scores, k)
    docs, vals = top_k_touched(n_docs, norm, [(docs, tfs, qtf), ...], k1, k)  # one query, touched documents only
    docs, vals = top_k_weighted(n_docs, [(docs, posting_weights(...), qtf), ...], k)  # weights known already

idf = ln(1 + (N - df + 0.5) / (df + 0.5)); a term adds
idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)) to each document it occurs in,
once per occurrence in the query (as claude-obsidian's retrieve does).

The only other scorer is ``bm25_plain``, the thin no-numpy path of a CLI
query; it uses the same ``idf`` and the same operations in the same order, so
its scores are bit-identical (tests/index/test_plain_scoring.py).
"""

from __future__ import annotations

import numpy as np

from vaulteval.index.bm25_plain import idf

K1 = 1.5
B = 0.75

# Cells (queries x documents) of one block's score matrix: bounds its memory to about 64 MB.
BLOCK_CELLS = 8_000_000


def length_norm(doc_len: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """The per-document term k1 * (1 - b + b * dl / avgdl), computed once per index."""
    avg = avgdl if avgdl > 0 else 1.0
    return k1 * (1.0 - b + b * doc_len.astype(np.float64) / avg)


def posting_weights(idf_t: float | np.ndarray, tfs: np.ndarray, doc_norm: np.ndarray, k1: float) -> np.ndarray:
    """BM25 weight of each posting: idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))."""
    tf = tfs.astype(np.float64)
    return idf_t * (tf * (k1 + 1.0) / (tf + doc_norm))


def score_rows(n_docs: int, norm: np.ndarray, k1: float,
               rows: list[list[tuple[np.ndarray, np.ndarray, int]]]) -> np.ndarray:
    """One row of document scores per query; each query is its (doc ids, term freqs, query count) lists."""
    pairs = [(r, docs, tfs, qtf) for r, lists in enumerate(rows) for docs, tfs, qtf in lists if len(docs)]
    if not pairs:
        return np.zeros((len(rows), n_docs), dtype=np.float64)
    length = np.array([len(docs) for _, docs, _, _ in pairs], dtype=np.int64)
    return score_postings(
        len(rows), n_docs, norm, k1,
        rows=np.repeat(np.array([r for r, _, _, _ in pairs], dtype=np.int64), length),
        docs=np.concatenate([d for _, d, _, _ in pairs]).astype(np.int64, copy=False),
        tfs=np.concatenate([t for _, _, t, _ in pairs]),
        idfs=np.repeat(np.array([idf(n_docs, len(d)) for _, d, _, _ in pairs], dtype=np.float64), length),
        counts=np.repeat(np.array([float(q) for _, _, _, q in pairs], dtype=np.float64), length))


def score_postings(n_rows: int, n_docs: int, norm: np.ndarray, k1: float, *, rows: np.ndarray, docs: np.ndarray,
                   tfs: np.ndarray, idfs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The sum itself, over flat arrays with one entry per posting: its query row, document, term frequency,
    term idf and query count, postings in query-term order within a row.

    Every posting's weight (``posting_weights``) times its query count goes into one ``np.bincount``, which
    adds in input order: for each document, its terms' weights in query order starting from 0, as
    ``bm25_plain`` adds them.
    """
    values = posting_weights(idfs, tfs, norm[docs], k1) * counts
    return np.bincount(rows * n_docs + docs, weights=values, minlength=n_rows * n_docs).reshape(n_rows, n_docs)


def score_terms(n_docs: int, norm: np.ndarray, postings: list[tuple[np.ndarray, np.ndarray, int]],
                k1: float) -> np.ndarray:
    """Every document's score for one query: ``score_rows`` of a block of one."""
    return score_rows(n_docs, norm, k1, [postings])[0]


def block_rows(n_docs: int) -> int:
    """How many queries ``score_rows`` may take at once within ``BLOCK_CELLS``."""
    return max(1, BLOCK_CELLS // max(1, n_docs))


def top_k_touched(n_docs: int, norm: np.ndarray, postings: list[tuple[np.ndarray, np.ndarray, int]], k1: float,
                  k: int) -> tuple[np.ndarray, np.ndarray]:
    """One query's best k (documents, scores), summing only over the documents its postings name.

    ``top_k_weighted`` of each list's ``posting_weights``: the same sum, bit for bit, as ``score_postings``
    and ``bm25_plain``.
    """
    lists = [(d, posting_weights(idf(n_docs, len(d)), t, norm[d], k1), q) for d, t, q in postings if len(d)]
    return top_k_weighted(n_docs, lists, k)


_POSITIONS = np.arange(1 << 16, dtype=np.int64)
_POSITIONS.flags.writeable = False


def _positions(n: int) -> np.ndarray:
    """0, 1, ..., n-1 as a view of one array kept for every query (read only; grown when a query needs more)."""
    global _POSITIONS
    if n > _POSITIONS.size:
        grown = np.arange(max(n, 2 * _POSITIONS.size), dtype=np.int64)
        grown.flags.writeable = False
        _POSITIONS = grown
    return _POSITIONS[:n]


def scratch_row(n_docs: int) -> np.ndarray:
    """A scratch row for ``top_k_weighted`` to reuse across queries (one per thread)."""
    return np.empty(n_docs, dtype=np.int64)


def top_k_weighted(n_docs: int, lists: list[tuple[np.ndarray, np.ndarray, int]], k: int,
                   scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``top_k_touched`` for lists whose ``posting_weights`` are already known: ``(docs, weights, qtf)``.

    Cost grows with the postings, not with the index: the distinct documents are found without sorting
    (each posting writes its position into a scratch row; the position that stuck is one per document),
    given compact numbers, and one ``np.bincount`` adds each document's weights in query-term order from 0,
    exactly as ``score_postings`` and ``bm25_plain`` add them. The scratch row (``n_docs`` int64, any
    contents; the caller's own, or a new one) is written and read only where the postings point, never scanned.
    A weight times a query count of 1 is the weight itself, so such a list is used as it is.
    """
    lists = [(d, w, q) for d, w, q in lists if len(d)]
    if not lists or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    if len(lists) == 1:  # one term: its documents are distinct already
        docs, weights, q = lists[0]
        return top_k_of(docs.astype(np.int64), weights if q == 1 else weights * float(q), k)
    docs = np.concatenate([d for d, _, _ in lists], dtype=np.int64)
    values = np.concatenate([w if q == 1 else w * float(q) for _, w, q in lists])
    where = np.empty(n_docs, dtype=np.int64) if scratch is None else scratch
    position = _positions(docs.size)
    where[docs] = position
    touched = docs[where[docs] == position]
    where[touched] = position[: touched.size]
    sums = np.bincount(where[docs], weights=values, minlength=touched.size)
    return top_k_of(touched, sums, k)


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k best positive scores; ties broken by lower doc id."""
    hits = np.flatnonzero(scores > 0)
    return top_k_of(hits, scores[hits], k)


def top_k_of(docs: np.ndarray, vals: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``top_k`` for the scores ``vals`` of the distinct documents ``docs`` (any order); the rest score 0.

    Many scores: only those at least the k-th largest (ties included) are sorted, found by one partition of
    the values; when that one is not positive, fewer than k are, and all the positive ones are kept."""
    if vals.size == 0 or k <= 0:
        return docs[:0], vals[:0]
    if vals.size > 4 * k:
        kth = np.partition(vals, vals.size - k)[vals.size - k]
        chosen = vals >= kth if kth > 0 else vals > 0
    else:
        chosen = vals > 0
    docs, vals = docs[chosen], vals[chosen]
    order = np.lexsort((docs, -vals))[:k]
    return docs[order], vals[order]
