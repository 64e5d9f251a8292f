"""BM25 for many queries at once: the same hits as ``index.search``, a block of queries per numpy call.

Usage::

    hits = batch_search(index, ["query one", "query two"], k=20)   # [[Hit, ...], [Hit, ...]]
    ranked = batch_top_k(index, [["descal", "machin"]], k=100)     # [(docs, scores)] as arrays

Each query's terms come from ``index.query_terms`` (the one-query path's own
counting, in its order) and a block of queries is scored by
``bm25.score_rows``, the index's one numpy scorer, so the scores, rankings and
ties are bit-identical to the one-query path. Evaluation (``eval run``,
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
    rows = bm25.block_rows(index.n_docs)
    norm = index.norm()
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, len(queries), rows):
        lists = [index.posting_lists(tokens) for tokens in queries[start : start + rows]]
        # Per row, top_k partitions only the positive scores: cheaper than partitioning whole rows of zeros.
        out.extend(bm25.top_k(row, k) for row in bm25.score_rows(index.n_docs, norm, index.k1, lists))
    return out
