"""One query's top k from an open index, scored in plain Python or with numpy, whichever costs less now.

Usage: ``Searcher(index, post_docs, post_tfs).search(tokens, k)`` -> ``[Hit(doc, score), ...]``;
``BM25Index.search_tokens`` keeps one per open index.

Plain Python (``bm25_plain``) needs no import but costs more per posting;
numpy (``bm25.score_terms``) costs a fixed amount per query plus less per
posting, once its import is paid. So with numpy loaded, plain Python is used
only for short lists; without it, a process scores in plain Python until it
has spent about numpy's import time there, then imports numpy (ski rental): a
CLI call imports it only for a query with more postings than that, a long loop
soon does. Both give the same hits with bit-identical scores. The two
thresholds below come from measurements in docs/benchmarks.md.
"""

from __future__ import annotations

import sys
from collections import namedtuple

from vaulteval.index import bm25_plain

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
if TYPE_CHECKING:
    from typing import Any

NUMPY_LOADED_FROM = 300  # postings; fewer score faster in plain Python even with numpy loaded
NUMPY_IMPORT_POSTINGS = 150_000  # plain-Python postings that cost about as much as importing numpy

Hit = namedtuple("Hit", "doc score")  # a document number and its BM25 score


class Searcher:
    """Scores queries against one open index; remembers how much plain-Python scoring it has done.

    ``index`` is the ``BM25Index`` that owns it (not imported here: the reader imports this module).
    """

    def __init__(self, index: "Any", post_docs: "Any", post_tfs: "Any"):
        self.index = index
        self._docs = bm25_plain.unsigned(post_docs)  # None: a section plain Python cannot read (other byte order)
        self._tfs = post_tfs
        self._doc_len: "Any" = None
        self._spent = 0  # postings scored in plain Python while numpy was not loaded
        self.numpy_queries = 0  # queries scored with numpy

    def search(self, tokens: list[str], k: int) -> list[Hit]:
        index = self.index
        terms = index.query_terms(tokens)
        ranges = [index.posting_range(tid) for tid, _ in terms]  # every block read is checked first
        total = sum(end - start for start, end in ranges)
        loaded = "numpy" in sys.modules
        if self._docs is None or total > (NUMPY_LOADED_FROM if loaded else NUMPY_IMPORT_POSTINGS - self._spent):
            return self._search_numpy([(*index.postings_at(*r), qtf) for r, (_, qtf) in zip(ranges, terms)], k)
        if not loaded:
            self._spent += total
        if self._doc_len is None:
            self._doc_len = index.doc_lengths()
        docs, tfs = self._docs, self._tfs
        lists = [(docs[start:end], tfs[start:end], qtf) for (start, end), (_, qtf) in zip(ranges, terms)]
        try:
            best = bm25_plain.top_k(index.n_docs, self._doc_len, index.avgdl, index.k1, index.b, lists, k)
        except (IndexError, ZeroDivisionError):  # a document number out of range, or a forged zero length
            raise index.malformed() from None
        return [Hit(d, v) for d, v in best]

    def _search_numpy(self, lists: "list[Any]", k: int) -> list[Hit]:
        from vaulteval.index import bm25

        index = self.index
        self.numpy_queries += 1
        docs, vals = bm25.top_k(bm25.score_terms(index.n_docs, index.norm(), lists, index.k1), k)
        return [Hit(d, v) for d, v in zip(docs.tolist(), vals.tolist())]
