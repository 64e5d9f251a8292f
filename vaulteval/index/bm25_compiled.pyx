# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""One query's BM25 top k, compiled: the same sums as ``bm25`` and ``bm25_plain``, bit for bit.

Usage::

    scratch = Scratch(n_docs)      # one per searcher; reused by every query
    top_k_counts(scratch, docs, tfs, doc_len, avgdl, k1, b, [(start, end, qtf), ...], k)  # -> [(doc, score), ...]
    top_k_weighted(scratch, docs, weights, [(start, end, qtf), ...], k, row=Hit)  # weights known; Hit rows

``docs`` are read as unsigned 32-bit document numbers (a forged negative one is
too large), ``tfs`` and ``doc_len`` as 32-bit integers, ``weights`` as doubles:
the formats a build writes (``vaulteval.index.search`` checks them before it
chooses this module). Each query term is a span of the whole sections, so a
query converts each section once. A span or a document number outside its
array raises IndexError; a zero denominator (only a forged file has one)
raises ZeroDivisionError. ``row`` is a tuple type for the answers (``Hit``).

A weight is ``idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))) *
qtf``, the operations in that order, in doubles; every document's weights are
added in query-term order starting from 0, as ``np.bincount`` and
``bm25_plain`` add them. Only positive scores count; ties go to the lower
document number. The extension is built with floating-point contraction off
(setup.py), so no multiply-add is fused into one rounding.
"""

from libc.math cimport log
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memset


cdef class Scratch:
    """Per-document sums and marks for one query at a time (``n_docs`` doubles and bytes), and the list of the
    documents a query touched; the marks are cleared after each query, so nothing is scanned whole."""

    cdef double *sums
    cdef unsigned char *seen
    cdef unsigned int *touched
    cdef Py_ssize_t capacity  # of touched
    cdef readonly Py_ssize_t n_docs
    cdef bint busy

    def __cinit__(self, Py_ssize_t n_docs):
        if n_docs < 0:
            raise ValueError("n_docs must be >= 0")
        self.n_docs = n_docs
        self.sums = <double *> malloc(max(n_docs, 1) * sizeof(double))
        self.seen = <unsigned char *> malloc(max(n_docs, 1))
        self.capacity = 1024
        self.touched = <unsigned int *> malloc(self.capacity * sizeof(unsigned int))
        if self.sums == NULL or self.seen == NULL or self.touched == NULL:
            raise MemoryError()
        memset(self.seen, 0, max(n_docs, 1))

    def __dealloc__(self):
        free(self.sums)
        free(self.seen)
        free(self.touched)

    cdef int reserve(self, Py_ssize_t n) except -1:
        cdef unsigned int *grown
        if n <= self.capacity:
            return 0
        grown = <unsigned int *> realloc(self.touched, n * sizeof(unsigned int))
        if grown == NULL:
            raise MemoryError()
        self.touched = grown
        self.capacity = n
        return 0


cdef inline Py_ssize_t _mark(Scratch s, unsigned int d, Py_ssize_t n) except -1:
    """Start document ``d``'s sum at 0 the first time a query meets it; returns the touched count."""
    if d >= <size_t> s.n_docs:
        raise IndexError(f"document {d} is outside the index")
    if not s.seen[d]:
        s.seen[d] = 1
        s.sums[d] = 0.0
        s.touched[n] = d
        return n + 1
    return n


cdef inline double _idf(Py_ssize_t n_docs, Py_ssize_t df) noexcept:
    return log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def idf(Py_ssize_t n_docs, Py_ssize_t df):
    """``bm25_plain.idf``: ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return _idf(n_docs, df)


def top_k_counts(Scratch scratch, const unsigned int[:] docs, const int[:] tfs, const int[:] doc_len,
                 double avgdl, double k1, double b, list spans, Py_ssize_t k, row=tuple):
    """The k best ``row(doc, score)`` of one query, best first, from its terms' postings as stored: each term is
    a span ``(start, end, qtf)`` of ``docs`` and ``tfs``, the terms in query order; the weights are computed
    here (``bm25_plain.top_k``'s arithmetic)."""
    cdef Py_ssize_t n = 0, j, start, end
    cdef double avg = avgdl if avgdl > 0 else 1.0
    cdef double rest = 1.0 - b, k1p1 = k1 + 1.0, w, q, tf, denom
    cdef unsigned int d
    cdef Scratch s = _claim(scratch, _reserve(spans, docs.shape[0]))
    if tfs.shape[0] != docs.shape[0]:
        raise ValueError("postings and frequencies differ in length")
    try:
        for start, end, qtf in spans:
            if end == start:
                continue
            w = _idf(s.n_docs, end - start)
            q = <double> qtf
            for j in range(start, end):
                d = docs[j]
                if d >= <size_t> doc_len.shape[0]:
                    raise IndexError(f"document {d} is outside the index")
                n = _mark(s, d, n)
                tf = <double> tfs[j]
                denom = tf + k1 * (rest + b * <double> doc_len[d] / avg)
                if denom == 0.0:
                    raise ZeroDivisionError("float division by zero")
                s.sums[d] = s.sums[d] + w * (tf * k1p1 / denom) * q
        return _best(s, n, k, row)
    finally:
        _release(s, n, scratch)


def top_k_weighted(Scratch scratch, const unsigned int[:] docs, const double[:] weights, list spans,
                   Py_ssize_t k, row=tuple):
    """``top_k_counts`` for postings whose weights are known (``bm25.posting_weights``), ``weights`` beside
    ``docs``; a weight times a query count of 1 is the weight itself."""
    cdef Py_ssize_t n = 0, j, start, end
    cdef double q
    cdef unsigned int d
    cdef Scratch s = _claim(scratch, _reserve(spans, docs.shape[0]))
    if weights.shape[0] != docs.shape[0]:
        raise ValueError("postings and weights differ in length")
    try:
        for start, end, qtf in spans:
            if qtf == 1:
                for j in range(start, end):
                    d = docs[j]
                    n = _mark(s, d, n)
                    s.sums[d] = s.sums[d] + weights[j]
            else:
                q = <double> qtf
                for j in range(start, end):
                    d = docs[j]
                    n = _mark(s, d, n)
                    s.sums[d] = s.sums[d] + weights[j] * q
        return _best(s, n, k, row)
    finally:
        _release(s, n, scratch)


cdef Py_ssize_t _reserve(list spans, Py_ssize_t size) except -1:
    """How many postings the spans hold, each span checked to lie within ``0..size`` in order."""
    cdef Py_ssize_t total = 0, start, end
    for start, end, _ in spans:
        if not 0 <= start <= end <= size:
            raise IndexError(f"postings {start}..{end} are outside 0..{size}")
        total += end - start
    return total


cdef Scratch _claim(Scratch scratch, Py_ssize_t postings):
    """The caller's scratch, or a fresh one while it is in use (another thread, without the GIL's ordering),
    with room to list ``postings`` touched documents."""
    cdef Scratch s = Scratch(scratch.n_docs) if scratch.busy else scratch
    s.reserve(postings)
    s.busy = True
    return s


cdef void _release(Scratch s, Py_ssize_t n, Scratch owner):
    cdef Py_ssize_t i
    for i in range(n):
        s.seen[s.touched[i]] = 0
    s.busy = False


cdef struct Scored:
    double score
    unsigned int doc


cdef inline bint _worse(Scored a, Scored b):
    """Whether ``a`` ranks below ``b``: a lower score, or the same score and a higher document number."""
    return a.score < b.score or (a.score == b.score and a.doc > b.doc)


cdef void _sift_down(Scored *heap, Py_ssize_t size, Scored item):
    """Put ``item`` at the root of a heap of ``size`` (worst at the root) and move it down to its place."""
    cdef Py_ssize_t at = 0, child
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and _worse(heap[child + 1], heap[child]):
            child += 1
        if not _worse(heap[child], item):
            break
        heap[at] = heap[child]
        at = child
    heap[at] = item


cdef list _best(Scratch s, Py_ssize_t n, Py_ssize_t k, row):
    """The k best positive sums among the ``n`` touched documents, best first, as ``row(doc, score)``: a heap
    of the k best so far, its worst at the root."""
    cdef Py_ssize_t size = 0, i, at, m
    cdef Scored item
    cdef Scored *heap
    if k <= 0 or n == 0:
        return []
    m = k if k < n else n
    heap = <Scored *> malloc(m * sizeof(Scored))
    if heap == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            item.doc = s.touched[i]
            item.score = s.sums[item.doc]
            if not item.score > 0:
                continue
            if size < m:  # sift up
                at = size
                size += 1
                while at > 0 and _worse(item, heap[(at - 1) // 2]):
                    heap[at] = heap[(at - 1) // 2]
                    at = (at - 1) // 2
                heap[at] = item
            elif _worse(heap[0], item):  # better than the worst kept: it takes the root's place
                _sift_down(heap, size, item)
        result = [None] * size
        make = tuple.__new__
        while size > 0:  # the worst goes to the last free place: best first
            size -= 1
            item = heap[0]
            result[size] = make(row, (item.doc, item.score))
            _sift_down(heap, size, heap[size])
        return result
    finally:
        free(heap)
