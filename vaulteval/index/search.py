"""One query's top k from an open index, scored in plain Python or with numpy, decided when it opens.

Usage: ``Searcher(index, post_docs, post_tfs, warm=True).search(tokens, k)`` -> ``[Hit(doc, score), ...]``;
``BM25Index.search_tokens`` keeps one per open index.

Plain Python (``bm25_plain``) needs no import but costs more per posting;
numpy (``bm25.top_k_touched``) costs a fixed amount per query plus less per
posting, once its import is paid. The choice is made once, when the searcher
is made, never in the middle of a loop:

- ``warm`` (a ``Retriever`` kept open for many queries, or any process that
  already loaded numpy): numpy is imported up front, and a query whose lists
  hold ``NUMPY_LOADED_FROM`` postings or fewer is still scored in plain Python,
  which is faster there.
- cold (one CLI query): plain Python, unless this one query's lists hold more
  than ``NUMPY_IMPORT_POSTINGS`` postings, which cost more than numpy's import.

Both give the same hits with bit-identical scores, and both score only the
documents the query's terms touch. The thresholds come from measurements in
docs/benchmarks.md.

With numpy, a term's BM25 weights (one per posting: idf, term frequency and
document length, ``bm25.posting_weights``) depend on the index alone, so the
searcher keeps them per term once computed (up to ``WEIGHT_CACHE_POSTINGS``
postings in all), and each thread keeps one scratch row for finding the
distinct documents: a query pays for adding its weights up, not for computing
them again.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections import namedtuple

from vaulteval.index import bm25_plain

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
if TYPE_CHECKING:
    from typing import Any

NUMPY_LOADED_FROM = 64  # postings; fewer score faster in plain Python even with numpy loaded
NUMPY_IMPORT_POSTINGS = 150_000  # plain-Python postings that cost about as much as importing numpy
WEIGHT_CACHE_POSTINGS = 8_000_000  # postings whose weights a searcher keeps (8 bytes each); then it starts over

Hit = namedtuple("Hit", "doc score")  # a document number and its BM25 score


class Searcher:
    """Scores queries against one open index with the scorer chosen when it was made.

    ``index`` is the ``BM25Index`` that owns it (not imported here: the reader imports this module).
    """

    def __init__(self, index: "Any", post_docs: "Any", post_tfs: "Any", *, warm: bool = False):
        self.index = index
        self._docs = bm25_plain.unsigned(post_docs)  # None: a section plain Python cannot read (other byte order)
        self._tfs = post_tfs
        self._doc_len: "Any" = None
        self.warm = warm or "numpy" in sys.modules
        self._bm25: "Any" = None
        self._weights: dict[int, "Any"] = {}  # term id -> its postings' BM25 weights (numpy path only)
        self._cached_postings = 0
        self._scratch: "Any" = None  # per thread: a row of n_docs for bm25.top_k_weighted
        if self.warm:
            self._load_numpy()
        self.numpy_queries = 0  # queries scored with numpy

    def _load_numpy(self) -> None:
        import threading

        from vaulteval.index import bm25

        self._bm25 = bm25
        self._scratch = threading.local()
        self.index.norm()  # the per-document length term, once per open index

    def search(self, tokens: list[str], k: int) -> list[Hit]:
        index = self.index
        terms = index.query_terms(tokens)
        ranges = [index.posting_range(tid) for tid, _ in terms]  # every block read is checked first
        total = 0
        for start, end in ranges:
            total += end - start
        if self._docs is None or total > (NUMPY_LOADED_FROM if self.warm else NUMPY_IMPORT_POSTINGS):
            return self._search_numpy(ranges, terms, k)
        if self._doc_len is None:
            self._doc_len = index.doc_lengths()
        docs, tfs = self._docs, self._tfs
        lists = [(docs[start:end], tfs[start:end], qtf) for (start, end), (_, qtf) in zip(ranges, terms)]
        try:
            best = bm25_plain.top_k(index.n_docs, self._doc_len, index.avgdl, index.k1, index.b, lists, k)
        except (IndexError, ZeroDivisionError):  # a document number out of range, or a forged zero length
            raise index.malformed() from None
        return [Hit(d, v) for d, v in best]

    def holds(self, start: int, end: int, doc: int) -> bool:
        """Whether the postings at ``start:end`` (a range ``posting_range`` returned) hold document ``doc``."""
        docs = self._docs
        if docs is None:
            docs = self.index.postings_at(start, end)[0].tolist()
            start, end = 0, len(docs)
        i = bisect_left(docs, doc, start, end)
        return i < end and docs[i] == doc

    def _search_numpy(self, ranges: "list[tuple[int, int]]", terms: "list[tuple[int, int]]", k: int) -> list[Hit]:
        if self._bm25 is None:  # a cold searcher given one query too long for plain Python
            self._load_numpy()
        index, bm25 = self.index, self._bm25
        self.numpy_queries += 1
        lists = []
        for (start, end), (tid, qtf) in zip(ranges, terms):
            docs, tfs = index.postings_at(start, end)  # document numbers range-checked here, before any lookup
            weights = self._weights.get(tid)
            if weights is None:
                weights = bm25.posting_weights(bm25_plain.idf(index.n_docs, end - start), tfs, index.norm()[docs],
                                               index.k1)
                if self._cached_postings + weights.size > WEIGHT_CACHE_POSTINGS:
                    self._weights, self._cached_postings = {}, 0
                self._weights[tid] = weights
                self._cached_postings += weights.size
            lists.append((docs, weights, qtf))
        scratch = getattr(self._scratch, "row", None)
        if scratch is None:
            scratch = self._scratch.row = bm25.scratch_row(index.n_docs)
        docs, vals = bm25.top_k_weighted(index.n_docs, lists, k, scratch)
        return [Hit(d, v) for d, v in zip(docs.tolist(), vals.tolist())]
