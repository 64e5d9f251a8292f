"""One query's BM25 top k in plain Python: what a CLI ``retrieve`` scores without importing numpy.

Usage: ``top_k(n_docs, doc_len, avgdl, k1, b, [(docs, tfs, qtf), ...], k)`` -> ``[(doc, score), ...]``.

Importing numpy costs more than the rest of a CLI call, while a typical query
touches a few thousand postings (docs/benchmarks.md has the figures). This is
the thin fast path beside ``bm25``, the one numpy implementation; scores are
bit-identical to ``bm25.score_terms``: each weight is ``idf * (tf * (k1 + 1) / (tf + k1 * (1 -
b + b * dl / avgdl))) * qtf``, computed with the same operations, and a
document's weights are added in query-term order starting from 0. Ties go to
the lower document number; only positive scores count.

Terms are visited rarest first (highest bound first; a weight never exceeds
``idf * (k1 + 1) * qtf``). Once the k-th best partial score is above what all
the remaining terms could add, a document not seen yet cannot reach the top k,
so a remaining term's postings are only looked up (binary search) for the
documents still in the running: on a large vault the long list of a common
word is probed, not walked (MaxScore pruning). The survivors' scores are then
summed again in query order, so pruning never changes a ranking or a bit.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

_SLACK = 1e-9  # relative margin on every pruning test, far above the rounding of a few additions


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def unsigned(view: object) -> memoryview | None:
    """Document numbers read as unsigned: a forged negative one becomes too large and fails the length lookup
    (IndexError) instead of counting from the end. None when ``view`` is not a memoryview of integers."""
    if not isinstance(view, memoryview) or view.format not in ("b", "h", "i", "q", "B", "H", "I", "Q"):
        return None
    return view.cast("B").cast(view.format.upper())


def top_k(n_docs: int, doc_len: "Sequence[int]", avgdl: float, k1: float, b: float,
          postings: "list[tuple[Sequence[int], Sequence[int], int]]", k: int,
          trace: dict | None = None) -> list[tuple[int, float]]:
    """The k best (doc, score) pairs, best first. Each term's documents must be ascending and distinct (as
    the index stores them). A document number outside ``doc_len`` raises IndexError; a zero denominator
    (only a forged file has one) raises ZeroDivisionError. ``trace`` receives how many terms were probed."""
    if k <= 0:
        return []
    avg = avgdl if avgdl > 0 else 1.0
    rest = 1.0 - b
    k1p1 = k1 + 1.0

    def weight(w: float, tf: int, dl: int, q: float) -> float:
        return w * (tf * k1p1 / (tf + k1 * (rest + b * dl / avg))) * q

    terms = [(docs, tfs, idf(n_docs, len(docs)), float(qtf)) for docs, tfs, qtf in postings if len(docs)]
    order = sorted(range(len(terms)), key=lambda i: -terms[i][2] * terms[i][3])  # stable: ties keep query order
    bounds = [terms[i][2] * k1p1 * terms[i][3] for i in order]
    remaining = [sum(bounds[j:]) for j in range(len(bounds))]
    partial: dict[int, float] = {}
    get = partial.get
    probed = 0
    total = remaining[0] if remaining else 0.0
    for step, i in enumerate(order):
        docs, tfs, w, q = terms[i]
        # The k-th best partial score is at most what the terms so far could add: only worth finding out
        # (a pass over the partial scores) once that exceeds what the remaining terms could add.
        hopeful = len(partial) >= k and total - remaining[step] > remaining[step]
        floor = heapq.nlargest(k, partial.values())[-1] if hopeful else 0.0
        if floor > 0 and remaining[step] * (1 + _SLACK) < floor * (1 - _SLACK):
            # No unseen document can reach the top k; drop the ones that cannot either, probe for the rest.
            probed += 1
            cut = floor * (1 - _SLACK) - remaining[step] * (1 + _SLACK)
            partial = {d: s for d, s in partial.items() if s >= cut}
            get = partial.get
            n = len(docs)
            for d in list(partial):
                j = bisect_left(docs, d)
                if j < n and docs[j] == d:
                    partial[d] += weight(w, tfs[j], doc_len[d], q)
            continue
        # weight(), inlined: a function call per posting is a measurable share of the time here.
        weights = [w * (tf * k1p1 / (tf + k1 * (rest + b * dl / avg))) * q
                   for tf, dl in zip(tfs, map(doc_len.__getitem__, docs))]
        if not partial:
            partial = dict(zip(docs, weights))
            get = partial.get
        else:
            for d, x in zip(docs, weights):
                partial[d] = get(d, 0.0) + x
    if trace is not None:
        trace["probed_terms"] = probed
    if len(partial) > k:
        floor = heapq.nlargest(k, partial.values())[-1] * (1 - _SLACK)
        partial = {d: s for d, s in partial.items() if s >= floor}
    hits = []
    for d in partial:  # exact scores: weights added in query order from 0, as numpy adds them
        score = 0.0
        for docs, tfs, w, q in terms:
            j = bisect_left(docs, d)
            if j < len(docs) and docs[j] == d:
                score = score + weight(w, tfs[j], doc_len[d], q)
        if score > 0:
            hits.append((score, d))
    hits.sort(key=lambda h: (-h[0], h[1]))
    return [(d, s) for s, d in hits[:k]]
