"""BM25 for many queries at once, vectorised over the postings; the same hits as ``index.search``.

Usage::

    hits = batch_search(index, ["query one", "query two"], k=20)   # [[Hit, ...], [Hit, ...]]
    ranked = batch_top_k(index, [["descal", "machin"]], k=100)     # [(docs, scores)] as arrays

Every posting's BM25 weight is computed once per index (and k1, b). A block of
queries gathers the postings of all its terms with array arithmetic and sums
them into a query x document score matrix with one ``np.bincount``, which adds
in input order: term by term in the order ``score_tokens`` uses, each weight
times the query count as there. The scores, and so the rankings and ties, are
bit-identical to the one-query path. Evaluation (``eval run``, ``sweep``,
``tune``) scores its queries this way.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from vaulteval.index import bm25
from vaulteval.index.reader import Hit

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index

# Cells (queries x documents) of one block's dense score matrix: bounds memory to ~64 MB.
_BLOCK_CELLS = 8_000_000
_WEIGHTS: "weakref.WeakKeyDictionary[BM25Index, np.ndarray]" = weakref.WeakKeyDictionary()


def posting_weights(index: "BM25Index") -> np.ndarray:
    """Usage: ``posting_weights(index)[p]``: the BM25 weight of posting p (cached per index object)."""
    weights = _WEIGHTS.get(index)
    if weights is None:
        offsets = index.section("post_offsets")
        df = np.diff(offsets)
        idf = np.array([bm25.idf(index.n_docs, int(d)) for d in df.tolist()], dtype=np.float64)
        weights = bm25.posting_weights(np.repeat(idf, df), index.post_tfs, index.norm()[index.post_docs], index.k1)
        _WEIGHTS[index] = weights
    return weights


def _query_rows(index: "BM25Index", queries: list[list[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR parts of the query x term count matrix; each row keeps the order of first occurrence."""
    indptr, indices, counts = [0], [], []
    for tokens in queries:
        for tid, qtf in index.query_terms(tokens):  # the one-query path's terms, in the same order
            indices.append(tid)
            counts.append(float(qtf))
        indptr.append(len(indices))
    return (np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
            np.asarray(counts, dtype=np.float64))


def batch_search(index: "BM25Index", texts: list[str], k: int = 20) -> list[list[Hit]]:
    """Usage: ``batch_search(index, texts, k=100)`` -> one hit list per text, as ``index.search(text, k)``."""
    ranked = batch_top_k(index, [index.analyze(t) for t in texts], k)
    return [[Hit(d, v) for d, v in zip(docs.tolist(), vals.tolist())] for docs, vals in ranked]


def batch_top_k(index: "BM25Index", queries: list[list[str]], k: int = 20) -> list[tuple[np.ndarray, np.ndarray]]:
    """For analyzed queries: each one's best documents and scores (arrays), as ``index.search_tokens`` ranks them."""
    if not queries:
        return []
    weights, docs = posting_weights(index), index.post_docs
    offsets = index.section("post_offsets")
    indptr, terms, counts = _query_rows(index, queries)
    n_docs = index.n_docs
    rows = max(1, _BLOCK_CELLS // max(1, n_docs))
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, len(queries), rows):
        stop = min(len(queries), start + rows)
        lo, hi = indptr[start], indptr[stop]
        # One entry per (query, term) pair of the block, in query order then term order.
        row_of_pair = np.repeat(np.arange(stop - start), np.diff(indptr[start : stop + 1]))
        first = offsets[terms[lo:hi]]
        length = offsets[terms[lo:hi] + 1] - first
        ends = np.cumsum(length)
        postings = np.repeat(first - ends + length, length) + np.arange(int(ends[-1]) if ends.size else 0)
        cells = np.repeat(row_of_pair * n_docs, length) + docs[postings]
        values = weights[postings] * np.repeat(counts[lo:hi], length)
        scores = np.bincount(cells, weights=values, minlength=(stop - start) * n_docs)
        # Per row, top_k partitions only the positive scores: cheaper than partitioning whole rows of zeros.
        out.extend(bm25.top_k(row, k) for row in scores.reshape(stop - start, n_docs))
    return out
