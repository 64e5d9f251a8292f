"""One query's BM25 top k in plain Python: what a CLI ``retrieve`` scores without importing numpy.

Usage: ``top_k(n_docs, doc_len, avgdl, k1, b, [(docs, tfs, qtf), ...], k)`` -> ``[(doc, score), ...]``.

numpy's import takes about 0.13 s, most of a CLI call, while a typical query
touches a few thousand postings (about 1 ms here). Every weight is computed
with the same operations in the same order as ``bm25.score_terms``
(``idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))) * qtf``,
summed term by term), so both give bit-identical scores and the same ranking;
ties go to the lower document number, and only positive scores count.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def unsigned(view: object) -> memoryview | None:
    """Document numbers read as unsigned: a forged negative one becomes too large and fails the length lookup
    (IndexError) instead of counting from the end. None when ``view`` is not a memoryview of integers."""
    if not isinstance(view, memoryview) or view.format not in ("b", "h", "i", "q", "B", "H", "I", "Q"):
        return None
    return view.cast("B").cast(view.format.upper())


def top_k(n_docs: int, doc_len: Sequence[int], avgdl: float, k1: float, b: float,
          postings: list[tuple[Sequence[int], Sequence[int], int]], k: int) -> list[tuple[int, float]]:
    """The k best (doc, score) pairs, best first. A document number outside ``doc_len`` raises IndexError;
    a zero denominator (only a forged file has one) raises ZeroDivisionError."""
    if k <= 0:
        return []
    avg = avgdl if avgdl > 0 else 1.0
    rest = 1.0 - b
    k1p1 = k1 + 1.0
    scores: dict[int, float] = {}
    get = scores.get
    for docs, tfs, qtf in postings:
        if not len(docs):
            continue
        w = idf(n_docs, len(docs))
        q = float(qtf)
        weights = [w * (tf * k1p1 / (tf + k1 * (rest + b * dl / avg))) * q
                   for tf, dl in zip(tfs, map(doc_len.__getitem__, docs))]
        if not scores:
            scores = dict(zip(docs, weights))
            get = scores.get
        else:
            for d, x in zip(docs, weights):
                scores[d] = get(d, 0.0) + x
    hits = [(s, d) for d, s in scores.items() if s > 0]
    if len(hits) > 4 * k:
        floor = heapq.nlargest(k, [s for s, _ in hits])[-1]
        hits = [h for h in hits if h[0] >= floor]
    hits.sort(key=lambda h: (-h[0], h[1]))
    return [(d, s) for s, d in hits[:k]]
