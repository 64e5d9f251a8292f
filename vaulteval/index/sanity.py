"""What the numbers of an index must mean, beyond their checksums: a forged file with right checksums is refused.

Usage::

    lengths_ok(doc_len, n_docs, avgdl)           # every length >= 0 and avgdl their exact mean
    postings_ok(docs, tfs, doc_len, n_docs)      # documents in range, tf >= 1, tf <= the document's length
    semantic_problem(sections, n_docs, avgdl)    # all of it, plus every length equal to its postings' tf sum
                                                 # and offsets monotone (``index verify``, ``doctor --deep``)
    table_problem(post_off, docs, tfs, doc_len, n_docs)  # the same for one posting table (field index)

A document's length is its number of tokens, so it is the sum of its term
frequencies: >= 1 for every document with a posting (a chunk whose text has no
token at all has length 0 and no posting). ``avgdl`` is written as the mean of
the lengths, computed exactly (integer sum, one division), so it must equal
``sum / n`` bit for bit. The reader checks lengths when it first reads them
and postings a slice at a time as queries read them, in plain Python while
numpy is not loaded (a CLI call never imports it for this); ``index verify``
checks everything with numpy.
"""

from __future__ import annotations

import sys
from operator import le
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def lengths_ok(doc_len: "Any", n_docs: int, avgdl: float) -> bool:
    """Usage: ``lengths_ok(index.doc_lengths(), index.n_docs, index.avgdl)`` (memoryview or numpy array)."""
    if len(doc_len) != n_docs:
        return False
    if not n_docs:
        return avgdl == 0.0
    if "numpy" in sys.modules:  # a memoryview is read through the buffer protocol, without a copy
        import numpy as np

        lengths = np.asarray(doc_len)
        low, total = int(lengths.min()), int(lengths.sum(dtype=np.int64))
    else:
        # One pass for the sum; the sign test reads bytes (min() over a memoryview is slower than sum()).
        return no_negative(doc_len) and sum(doc_len) / n_docs == avgdl
    return low >= 0 and total / n_docs == avgdl


_SIGNED = frozenset("bhilq")


def no_negative(view: "Any") -> bool:
    """``min(view) >= 0`` for a memoryview of integers, tested on their sign bits at C speed: the most
    significant byte of every item (in native order) is below 0x80 exactly when no item is negative."""
    if not isinstance(view, memoryview) or view.format not in _SIGNED or not view.c_contiguous:
        return min(view, default=0) >= 0
    size = view.itemsize
    top = size - 1 if sys.byteorder == "little" else 0
    return view.tobytes()[top::size].isascii()


def postings_ok(docs: "Any", tfs: "Any", doc_len: "Any", n_docs: int) -> bool:
    """Usage: ``postings_ok(docs[a:b], tfs[a:b], doc_len, n)``: each document number in 0..n-1, each tf >= 1
    and no larger than its document's length (so that length is >= 1 too)."""
    if len(docs) != len(tfs):
        return False
    if not len(docs):
        return True
    if "numpy" in sys.modules:
        import numpy as np

        d = np.asarray(docs, dtype=np.int64)
        t = np.asarray(tfs, dtype=np.int64)
        if int(d.min()) < 0 or int(d.max()) >= n_docs or int(t.min()) < 1:
            return False
        return bool(np.all(t <= np.asarray(doc_len, dtype=np.int64)[d]))
    # The same conditions, each over the whole slice in C (sign bits, max, min, map) instead of a loop in Python.
    if not no_negative(docs) or max(docs) >= n_docs or min(tfs) < 1:
        return False
    return all(map(le, tfs, map(doc_len.__getitem__, docs)))


def semantic_problem(s: "Any", n_docs: int, avgdl: float) -> str | None:
    """Every check above over the whole main index (``s``: its opened sections; reading them checks their
    blocks), plus offsets monotone and each length equal to its document's tf sum; None when all hold."""
    import numpy as np

    if np.any(np.diff(s["term_offsets"]) < 1) or np.any(np.diff(s["doc_offsets"]) < 0):
        return "offsets are not in order"
    problem = table_problem(s["post_offsets"], s["post_docs"], s["post_tfs"], s["doc_len"], n_docs)
    if problem is None and not lengths_ok(s["doc_len"], n_docs, avgdl):
        return "document lengths do not average to the header's avgdl"
    return problem


def table_problem(post_off: "Any", docs: "Any", tfs: "Any", doc_len: "Any", n_docs: int) -> str | None:
    """One posting table (the main index's, or a field's): offsets monotone from 0 to the end, documents in
    range, tf >= 1, lengths >= 0 and each the sum of its document's term frequencies; None when all hold."""
    import numpy as np

    off = np.asarray(post_off, dtype=np.int64)
    if off.size < 1 or off[0] != 0 or off[-1] != len(docs) or np.any(np.diff(off) < 0):
        return "posting offsets are not in order"
    if len(tfs) != len(docs) or len(doc_len) != n_docs:
        return "posting arrays differ in length"
    docs, tfs, lengths = (np.asarray(a, dtype=np.int64) for a in (docs, tfs, doc_len))
    if docs.size and (int(docs.min()) < 0 or int(docs.max()) >= n_docs):
        return "a posting names a document outside the index"
    if tfs.size and int(tfs.min()) < 1:
        return "a term frequency is below 1"
    if lengths.size and int(lengths.min()) < 0:
        return "a document length is negative"
    if not np.array_equal(np.bincount(docs, weights=tfs, minlength=n_docs), lengths.astype(np.float64)):
        return "document lengths differ from their term frequencies' sums"
    return None


SANE_UNIT = 4096  # postings whose meaning is checked together, on first read


class MeaningGuard:
    """For one open index: lengths checked once, postings a unit at a time, once each; a failure is the
    index's ``malformed`` error (exit 10). ``index`` is the ``BM25Index`` (not imported: it imports this)."""

    def __init__(self, index: "Any", raw: "Any"):
        self.index = index
        self.raw = raw  # the sections' unchecked views: read only after index._check
        self.n_postings = len(raw("post_docs"))
        self.done = bytearray(-(-self.n_postings // SANE_UNIT))
        self.lengths_done = False
        self.ranges: set[tuple[int, int]] = set()  # lists checked apart from whole units (plain Python)

    def lengths(self) -> None:
        if not self.lengths_done:
            index = self.index
            index._check("doc_len")
            if not lengths_ok(self.raw("doc_len"), index.n_docs, index.avgdl):
                raise index.malformed("document lengths are negative or do not average to the header's avgdl")
            self.lengths_done = True

    def postings(self, start: int, end: int) -> None:
        """Check postings ``start..end-1`` before they are read. A unit is remembered as done once wholly
        checked; of a unit not done only the part asked for is checked (a one-query CLI call checks what it
        reads, in plain Python, not the whole unit around a short list)."""
        if (start, end) in self.ranges:  # a query reads its lists twice: to score, then for snippet weights
            return
        index, raw = self.index, self.raw
        for unit in range(start // SANE_UNIT, -(-end // SANE_UNIT)):
            if not self.done[unit]:
                a, b = unit * SANE_UNIT, min(self.n_postings, (unit + 1) * SANE_UNIT)
                index._check("post_docs", a, b)
                index._check("post_tfs", a, b)
                self.lengths()
                if "numpy" not in sys.modules:  # plain Python pays per posting: only the ones asked for
                    a, b = max(a, start), min(b, end)
                if not postings_ok(raw("post_docs")[a:b], raw("post_tfs")[a:b], raw("doc_len"), index.n_docs):
                    raise index.malformed("a term frequency is below 1 or above its document's length")
                if b - a == min(self.n_postings, (unit + 1) * SANE_UNIT) - unit * SANE_UNIT:
                    self.done[unit] = 1
        if len(self.ranges) < 100_000:
            self.ranges.add((start, end))
