"""What a warm searcher computes once, when it opens, so that no query pays for it: every posting's BM25
weight and every term's id.

Usage::

    pre = preload(index)                 # every posting's weight, in posting order; None for a large index
    pre.weights[pre.offsets[tid]:pre.offsets[tid + 1]]   # term tid's weights
    ids = vocabulary(index)              # {term: id}; None when the vocabulary cannot be trusted as a dict

A query over new terms otherwise computes its lists' weights (``bm25.posting_weights``) and finds each
term by binary search of the vocabulary; for a searcher kept open for many queries (``Retriever``, the
MCP server) both are cheaper done once for the whole index. The weights are the same numbers, bit for
bit, as a term's own computation: the same idf (``bm25_plain.idf``, once per distinct document
frequency) and the same elementwise operations.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from vaulteval.index import bm25
from vaulteval.index.bm25_plain import idf

PRELOAD_POSTINGS = 8_000_000  # 64 MB of weights; a larger index keeps computing them per term
PRELOAD_TERMS = 1_000_000  # about 130 MB of dict and strings; a larger vocabulary keeps its binary search
SLICE = 1 << 18  # postings weighed at a time


Preloaded = namedtuple("Preloaded", "offsets docs weights")  # offsets: a memoryview (a term's index gives an int)


def preload(index: "Any") -> Preloaded | None:
    """Every posting's document and BM25 weight, and the posting offsets, after every posting block passed
    its checksum and meaning checks and the offsets were found in order; None over ``PRELOAD_POSTINGS``."""
    docs, tfs = index.all_postings(limit=PRELOAD_POSTINGS)
    if docs is None:
        return None
    offsets = np.ascontiguousarray(index.section("post_offsets"), dtype=np.int64)
    counts = np.diff(offsets)
    if counts.size and int(counts.min()) < 0:
        raise index.malformed("posting offsets are not in order")
    distinct, which = np.unique(counts, return_inverse=True)
    term_idf = np.array([idf(index.n_docs, int(df)) for df in distinct.tolist()], dtype=np.float64)[which]
    norm, weights = index.norm(), np.empty(len(docs), dtype=np.float64)
    for start in range(0, len(docs), SLICE):  # a slice at a time: temporaries stay small beside the result
        end = min(start + SLICE, len(docs))
        terms = np.searchsorted(offsets, np.arange(start, end), side="right") - 1  # each posting's term
        weights[start:end] = bm25.posting_weights(term_idf[terms], tfs[start:end], norm[docs[start:end]], index.k1)
    return Preloaded(memoryview(offsets), docs, weights)


def vocabulary(index: "Any") -> dict[str, int] | None:
    """Every term's id, when the stored terms are sorted, distinct and end exactly where their offsets say
    (the binary search finds the same ids then); None otherwise, or for a vocabulary over ``PRELOAD_TERMS``."""
    if index.n_terms > PRELOAD_TERMS:
        return None
    try:
        terms = index.all_terms()
    except UnicodeDecodeError:
        return None
    blob = np.frombuffer(index.section("terms"), dtype=np.uint8)
    ends = np.flatnonzero(blob == 10) + 1
    offsets = np.asarray(index.section("term_offsets"), dtype=np.int64)
    if len(terms) != index.n_terms or not np.array_equal(ends, offsets[1:]):
        return None
    if any(later <= earlier for earlier, later in zip(terms, terms[1:])):
        return None
    return {term: i for i, term in enumerate(terms)}
