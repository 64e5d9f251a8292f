"""One query's top k from an open index: its terms' ids, then scores in plain Python or with numpy, decided
when it opens.

Usage: ``Searcher(index, post_docs, post_tfs, warm=True).search(tokens, k)`` -> ``[Hit(doc, score), ...]``;
``BM25Index.search_tokens`` keeps one per open index. ``BM25Index`` is a ``Vocabulary``:
``index.term_id("espresso")`` (-1 when the index has no such term) searches the sorted vocabulary, or the
dict ``index.load_vocabulary()`` loads once for a searcher kept open.

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

Where the package was built with its compiled core (``bm25_compiled``, from
Cython), every query is scored there instead, warm or cold, with the same
arithmetic in the same order: the same hits and scores, bit for bit
(tests/index/test_compiled_scoring.py). ``VAULTEVAL_PURE_PYTHON=1`` (read when
a searcher is made) keeps the Python path above, as does a package installed
without a compiler.

With numpy, a term's BM25 weights (one per posting: idf, term frequency and
document length, ``bm25.posting_weights``) depend on the index alone, so the
searcher keeps them per term once computed (up to ``WEIGHT_CACHE_POSTINGS``
postings in all), and each thread keeps one scratch row for finding the
distinct documents: a query pays for adding its weights up, not for computing
them again. A searcher made ``warm`` by its caller (a ``Retriever`` kept open)
computes every posting's weight and loads the whole vocabulary when it is
made (``vaulteval.index.preload``), so a query over new terms pays for neither.
"""

from __future__ import annotations

import os
import sys
from bisect import bisect_left
from collections import namedtuple
from typing import TYPE_CHECKING

from vaulteval.index import bm25_plain
from vaulteval.index.file import BLOCK_SIZE

if TYPE_CHECKING:
    from typing import Any

NUMPY_LOADED_FROM = 64  # postings; fewer score faster in plain Python even with numpy loaded
NUMPY_IMPORT_POSTINGS = 150_000  # plain-Python postings that cost about as much as importing numpy
WEIGHT_CACHE_POSTINGS = 8_000_000  # postings whose weights a searcher keeps (8 bytes each); then it starts over

Hit = namedtuple("Hit", "doc score")  # a document number and its BM25 score


TERM_CACHE = 100_000  # terms whose binary-search answer an index remembers
PURE_PYTHON_ENV = "VAULTEVAL_PURE_PYTHON"  # set (not "0"): score in Python even where the compiled core is built


def compiled_core() -> "Any":
    """The compiled scorer (``vaulteval.index.bm25_compiled``), or None: not built here, or the Python path asked
    for with ``VAULTEVAL_PURE_PYTHON``."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        from vaulteval.index import bm25_compiled
    except ImportError:
        return None
    return bm25_compiled


class Vocabulary:
    """Term lookups of ``BM25Index``: its ``__init__`` sets the attributes read here, and its ``_check``,
    ``_whole`` and ``malformed`` check what they read."""

    _term_off: "Any"
    _terms: "Any"
    _ok: bytearray
    _term_off_block0: int
    _terms_block0: int
    _term_cache: dict[str, int]
    _whole_vocabulary: bool  # _term_cache holds every term (load_vocabulary): a miss is not a term
    _all_terms: list[str] | None
    _probes: dict[int, bytes]
    n_terms: int

    def _term_bytes(self, i: int) -> bytes:
        """Term ``i``, read only after the blocks of its two offsets and of its bytes pass their checksums.

        The binary search of ``term_id`` calls this about 17 times a term, so the usual case (blocks
        already checked) tests the block flags inline instead of going through ``check``.
        """
        if not 0 <= i < len(self._term_off) - 1:
            raise IndexError(f"term {i} is outside the vocabulary")
        ok, size = self._ok, self._term_off.itemsize
        b0 = self._term_off_block0 + i * size // BLOCK_SIZE
        b1 = self._term_off_block0 + ((i + 2) * size - 1) // BLOCK_SIZE
        if b1 - b0 > 1 or not (ok[b0] and ok[b1]):
            self._check("term_offsets", i, i + 2)
        start, end = int(self._term_off[i]), int(self._term_off[i + 1])
        if not 0 <= start < end <= len(self._terms):
            raise self.malformed()
        t0 = self._terms_block0 + start // BLOCK_SIZE
        t1 = self._terms_block0 + (end - 1) // BLOCK_SIZE
        if t1 - t0 > 1 or not (ok[t0] and ok[t1]):
            self._check("terms", start, end)
        if self._terms[end - 1] != 10:
            raise self.malformed()
        return bytes(self._terms[start : end - 1])

    def term_at(self, i: int) -> str:
        return self._term_bytes(i).decode("utf-8")

    def all_terms(self) -> list[str]:
        """The whole sorted vocabulary (stored newline-terminated), decoded once per open index: do not change it."""
        if self._all_terms is None:
            self._all_terms = bytes(self._whole("terms")).decode("utf-8").split("\n")[:-1]
        return self._all_terms

    def term_id(self, term: str) -> int:
        """The term's id (from the loaded vocabulary, else by binary search of the sorted one); -1 when absent."""
        tid = self._term_cache.get(term)
        if tid is not None or self._whole_vocabulary:
            return -1 if tid is None else tid
        key = term.encode("utf-8")
        lo, hi = 0, self.n_terms
        probes = self._probes
        while lo < hi:
            mid = (lo + hi) // 2
            # Every search starts down the same few midpoints: the upper levels of the tree are remembered.
            word = probes.get(mid) if hi - lo > 64 else None
            if word is None:
                word = self._term_bytes(mid)
                if hi - lo > 64:
                    probes[mid] = word
            if word < key:
                lo = mid + 1
            else:
                hi = mid
        tid = lo if lo < self.n_terms and self._term_bytes(lo) == key else -1
        if len(self._term_cache) < TERM_CACHE:
            self._term_cache[term] = tid
        return tid

    def load_vocabulary(self) -> None:
        """Every term's id in one dict, for a searcher kept open for many queries (``preload.vocabulary``)."""
        if self._whole_vocabulary:  # loaded already (an index ``with_params`` shares it)
            return
        from vaulteval.index.preload import vocabulary

        ids = vocabulary(self)
        if ids is not None:
            self._term_cache, self._whole_vocabulary = ids, True


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
        self._preloaded: "Any" = None  # a warm searcher's preload.Preloaded: every posting checked, with its weight
        self._scratch: "Any" = None  # per thread: a row of n_docs for bm25.top_k_weighted
        # The compiled core reads the formats a build writes: unsigned 32-bit documents, 32-bit frequencies.
        fits = self._docs is not None and self._docs.format == "I" and getattr(post_tfs, "format", "") == "i"
        self._core: "Any" = compiled_core() if fits else None
        self._core_scratch: "Any" = None  # the core's per-document sums, made on the first query
        if self.warm:
            self._load_numpy()
        if warm:  # asked for, not merely numpy already loaded: a one-query CLI call must not pay for it
            from vaulteval.index.preload import preload

            self._preloaded = preload(index)
            index.load_vocabulary()
        pre = self._preloaded
        views = None if pre is None else (memoryview(pre.docs), memoryview(pre.weights))
        self._pre_docs = None if views is None or views[0].format != "i" or views[1].format != "d" \
            else (bm25_plain.unsigned(views[0]), views[1])
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
        if self._preloaded is None:
            ranges = [index.posting_range(tid) for tid, _ in terms]  # every block read is checked first
        else:  # every posting block and offset was checked when this searcher was made
            offsets = self._preloaded.offsets
            ranges = [(offsets[tid], offsets[tid + 1]) for tid, _ in terms]
        if self._core is not None:
            return self._search_compiled(ranges, terms, k)
        return self._search_python(ranges, terms, k)

    def _search_python(self, ranges: "list[tuple[int, int]]", terms: "list[tuple[int, int]]", k: int) -> list[Hit]:
        index = self.index
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
        pre = self._preloaded
        for (start, end), (tid, qtf) in zip(ranges, terms):
            if pre is not None:
                lists.append((pre.docs[start:end], pre.weights[start:end], qtf))
                continue
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

    def _search_compiled(self, ranges: "list[tuple[int, int]]", terms: "list[tuple[int, int]]", k: int) -> list[Hit]:
        """``bm25_compiled`` over the preloaded weights, or over the postings and lengths as stored."""
        index, core = self.index, self._core
        scratch = self._core_scratch
        if scratch is None:
            scratch = self._core_scratch = core.Scratch(index.n_docs)
        spans = [(start, end, qtf) for (start, end), (_, qtf) in zip(ranges, terms)]
        try:
            if self._pre_docs is not None:
                return core.top_k_weighted(scratch, *self._pre_docs, spans, k, Hit)
            if self._doc_len is None:
                self._doc_len = index.doc_lengths()
            if self._doc_len.format != "i":  # lengths in a format the core does not read: Python scores them
                self._core = None
                return self._search_python(ranges, terms, k)
            return core.top_k_counts(scratch, self._docs, self._tfs, self._doc_len, index.avgdl, index.k1, index.b,
                                     spans, k, Hit)
        except (IndexError, ZeroDivisionError):  # a document number out of range, or a forged zero length
            raise index.malformed() from None
