"""BM25 for many queries at once: the same hits as ``index.search``, a block of queries per numpy call.

Usage::

    hits = batch_search(index, ["query one", "query two"], k=20)   # [[Hit, ...], [Hit, ...]]
    ranked = batch_top_k(index, [["descal", "machin"]], k=100)     # [(docs, scores)] as arrays

Each query's terms come from ``index.query_terms`` (the one-query path's own
counting, in its order); a block's postings are gathered from the index arrays
at once and summed by ``bm25.score_postings``, the index's one numpy scorer
(the one-query path goes through it too), so the scores, rankings and ties are
bit-identical to the one-query path. Evaluation (``eval run``,
``sweep``, ``tune``) scores its queries this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vaulteval.index import bm25
from vaulteval.index.reader import Hit

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index


def batch_search(index: "BM25Index", texts: list[str], k: int = 20) -> list[list[Hit]]:
    """Usage: ``batch_search(index, texts, k=100)`` -> one hit list per text, as ``index.search(text, k)``."""
    ranked = batch_top_k(index, [index.analyze(t) for t in texts], k)
    return [[Hit(d, v) for d, v in zip(docs.tolist(), vals.tolist())] for docs, vals in ranked]


def batch_top_k(index: "BM25Index", queries: list[list[str]], k: int = 20) -> list[tuple[np.ndarray, np.ndarray]]:
    """For analyzed queries: each one's best documents and scores (arrays), as ``index.search_tokens`` ranks them."""
    n_docs, norm = index.n_docs, index.norm()
    offsets, all_docs, all_tfs = index.section("post_offsets"), index.post_docs, index.post_tfs
    step = bm25.block_rows(n_docs)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, len(queries), step):
        block = queries[start : start + step]
        # One entry per (query, term) pair, in query order then term order, as the one-query path counts them.
        pairs = [(row, tid, qtf) for row, tokens in enumerate(block) for tid, qtf in index.query_terms(tokens)]
        row_of = np.array([p[0] for p in pairs], dtype=np.int64)
        terms = np.array([p[1] for p in pairs], dtype=np.int64)
        first = offsets[terms]
        length = offsets[terms + 1] - first
        ends = np.cumsum(length)
        postings = np.repeat(first - ends + length, length) + np.arange(int(ends[-1]) if ends.size else 0)
        idfs = np.array([bm25.idf(n_docs, int(n)) for n in length.tolist()], dtype=np.float64)
        scores = bm25.score_postings(
            len(block), n_docs, norm, index.k1, rows=np.repeat(row_of, length), docs=all_docs[postings].astype(np.int64),
            tfs=all_tfs[postings], idfs=np.repeat(idfs, length),
            counts=np.repeat(np.array([float(p[2]) for p in pairs], dtype=np.float64), length))
        # Per row, top_k partitions only the positive scores: cheaper than partitioning whole rows of zeros.
        out.extend(bm25.top_k(row, k) for row in scores)
    return out
