"""The BM25 index: open (checked, memory-mapped), query, stats (where it lives: ``index.location``).

Usage::

    index = open_index(vault)                 # raises NotProvisioned when unusable
    hits = index.search("descale espresso", k=20)
    index.doc(hits[0].doc).chunk_id
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.errors import NotProvisioned, UsageError
from vaulteval.index.docmeta import ROW_FORMAT, DocMeta, parse_rows, store_names
from vaulteval.index.file import BLOCK_SIZE, SMALL_SECTION, IndexCorrupt, IndexFileError, read_sections
from vaulteval.index.location import (  # noqa: F401 - the names build, provision and doctor import from here
    INDEX_DIR, INDEX_NAME, index_path, open_index_file, peek_header)
from vaulteval.index.sanity import MeaningGuard, semantic_problem
from vaulteval.index.search import Hit, Searcher, Vocabulary
from vaulteval.index.analysis import lookup
from vaulteval.index.tokenize import ANALYZER_VERSION
from vaulteval.vault.metadir import MetaDir

LANGS_SECTION = "doc_langs"  # auto indexes: each chunk's language code, newline-terminated

if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from vaulteval.vault.vault import Vault


class BM25Index(Vocabulary):
    """A memory-mapped index file. Cheap to open: the header, the block table and the small
    sections are checked; every other byte is checked when a query first reads its block.

    A block that fails its checksum, or offsets that point outside their arrays, raise
    NotProvisioned (exit 10) with ``rebuild``.
    """

    rebuild: str | None = None  # the command that rebuilds it, named when a row turns out malformed
    verified: dict | None = None  # ``verify``'s report, once every byte and what the numbers mean passed

    def __init__(self, path: Path, fh=None):
        self.path = path
        self.header, self._s = read_sections(path, fh)
        if self.header.get("analyzer_version") != ANALYZER_VERSION:
            # Terms from another tokenizer version would silently miss query terms.
            raise IndexFileError(f"index was built with analyzer version {self.header.get('analyzer_version', 1)}, "
                                 f"this vaulteval uses {ANALYZER_VERSION}")
        self.analyzer_name: str = self.header["analyzer"]
        self.k1: float = float(self.header["k1"])
        self.b: float = float(self.header["b"])
        self.n_docs: int = int(self.header["n_docs"])
        self.avgdl: float = float(self.header["avgdl"])
        self._terms: memoryview = self._s.raw("terms")
        self._term_off = self._s.raw("term_offsets")
        self._post_off = self._s.raw("post_offsets")
        self._docs_blob: memoryview = self._s.raw("docs")
        self._doc_off = self._s.raw("doc_offsets")
        self._norm: "np.ndarray | None" = None
        try:
            self._analyzer = lookup(self.analyzer_name).queries(self.header)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        self._store_names = store_names(self.header)  # compact rows name their segment by its place in it
        self._doc_cache: dict[int, DocMeta] = {}
        self.doc_langs: list[str] | None = None  # auto: each chunk's language, read on first use (doc_language)
        self._term_cache: dict[str, int] = {}
        self._whole_vocabulary = False
        self._all_terms: list[str] | None = None
        self._probes: dict[int, bytes] = {}
        self._searcher: Searcher | None = None
        self._docs_in_range = bytearray(-(-self._s.raw("post_docs").nbytes // BLOCK_SIZE))
        self._check_shape()
        self._guard = MeaningGuard(self, self._s.raw)
        if self._s.raw("doc_len").nbytes <= SMALL_SECTION:  # already read whole: its meaning is cheap to check
            self._guard.lengths()
        self._ok, self._term_off_block0 = self._s.block_map("term_offsets")
        self._terms_block0 = self._s.block_map("terms")[1]

    def _check_shape(self) -> None:
        """Sizes and end points of the arrays; ranges are checked where they are read (a forged but
        well-checksummed file must not crash a query), so opening stays independent of the index size."""
        from vaulteval.index.params import check_bm25_params

        try:
            check_bm25_params(self.k1, self.b)
        except UsageError as exc:
            raise ValueError(f"index header: {exc}") from None
        n, t = self.n_docs, self.n_terms
        raw = self._s.raw
        numbers = ("term_offsets", "post_offsets", "doc_offsets", "doc_len", "post_docs", "post_tfs")
        problems = [
            any(self._s.dtype(name)[1:2] not in ("i", "u") for name in numbers),
            len(self._term_off) < 1 or t < 0,
            len(self._post_off) != t + 1, len(raw("doc_len")) != n, len(self._doc_off) != n + 1,
            len(raw("post_docs")) != len(raw("post_tfs")), n < 0,
            not math.isfinite(self.avgdl) or self.avgdl < 0,
            self.header.get("row_format") != ROW_FORMAT,
        ]
        if not any(problems):
            ends = [(name, arr) for name, arr in (("term_offsets", self._term_off), ("post_offsets", self._post_off),
                                                  ("doc_offsets", self._doc_off))]
            for name, arr in ends:
                self._check(name, 0, 1)
                self._check(name, len(arr) - 1, len(arr))
            problems = [
                int(self._term_off[0]) != 0 or int(self._term_off[-1]) != len(self._terms),
                int(self._post_off[0]) != 0 or int(self._post_off[-1]) != len(raw("post_docs")),
                int(self._doc_off[0]) != 0 or int(self._doc_off[-1]) != len(self._docs_blob),
            ]
        if any(problems):
            raise ValueError("index arrays are inconsistent with each other")

    # -- checked access --------------------------------------------------------
    def _corrupt(self, exc: Exception) -> NotProvisioned:
        return _not_provisioned(f"{exc} ({self.path})", self.rebuild, exc)

    def malformed(self, why: str = "offsets outside their arrays") -> NotProvisioned:
        return NotProvisioned(f"index file is malformed: {why} ({self.path})", rebuild=self.rebuild)

    def _check(self, name: str, start: int = 0, stop: int | None = None) -> None:
        try:
            self._s.check(name, start, stop)
        except IndexFileError as exc:
            raise self._corrupt(exc) from None

    def _whole(self, name: str) -> Any:
        try:
            return self._s[name]
        except IndexFileError as exc:
            raise self._corrupt(exc) from None

    def section(self, name: str) -> Any:
        """Usage: ``index.section("doc_len")``: any section, whole, after its blocks pass their checksums."""
        return self._whole(name)

    def has_section(self, name: str) -> bool:
        return name in self._s

    def doc_language(self, i: int) -> str | None:
        """Chunk ``i``'s language code (None when the index records none), the codes read once."""
        codes = self.doc_langs
        if codes is None:
            codes = self.doc_langs = self.doc_languages()
        return codes[i] if 0 <= i < len(codes) else None

    def doc_languages(self) -> list[str]:
        """Each chunk's language code (``[]`` when the index records none: its analyzer is not ``per_chunk``)."""
        if not self.has_section(LANGS_SECTION):
            return []
        codes = bytes(self.section(LANGS_SECTION)).decode("ascii", "replace").split("\n")[:-1]
        if len(codes) != self.n_docs:
            raise self.malformed("doc_langs does not hold one code per chunk")
        return codes

    def verify(self) -> dict[str, Any]:
        """Check every byte (IndexCorrupt names the first bad section and block), then what the numbers mean
        (``index.sanity.semantic_problem``: offsets, document numbers, tf, lengths; NotProvisioned otherwise)."""
        report = self._s.verify_all()
        problem = semantic_problem(self._s, self.n_docs, self.avgdl)
        if problem is not None:
            raise self.malformed(problem)
        self.verified = {"path": str(self.path), "size_bytes": self._s.file_size, **report}
        return self.verified

    @property
    def post_docs(self) -> "np.ndarray":
        docs = self._whole("post_docs")
        if docs.size and (int(docs.min()) < 0 or int(docs.max()) >= self.n_docs):
            raise self.malformed()
        return docs

    @property
    def post_tfs(self) -> "np.ndarray":
        self._guard.postings(0, self._guard.n_postings)  # the batch scorer reads them all
        return self._whole("post_tfs")

    @property
    def doc_len(self) -> "np.ndarray":
        self._guard.lengths()
        return self._whole("doc_len")

    # -- vocabulary, postings, documents ----------------------------------------
    @property
    def n_terms(self) -> int:
        return len(self._term_off) - 1

    def _range(self, offsets_name: str, offsets: Any, i: int, limit: int) -> tuple[int, int]:
        """Entries i and i+1 of an offsets section, checked, and required to lie in 0..limit in order."""
        self._check(offsets_name, i, i + 2)
        start, end = int(offsets[i]), int(offsets[i + 1])
        if not 0 <= start <= end <= limit:
            raise self.malformed()
        return start, end

    def doc_line(self, i: int) -> bytes:
        start, end = self._range("doc_offsets", self._doc_off, i, len(self._docs_blob))
        self._check("docs", start, end)
        return bytes(self._docs_blob[start:end])

    def all_postings(self, *, limit: int) -> "tuple[np.ndarray, np.ndarray] | tuple[None, None]":
        """``postings_at`` of every posting, each block and number checked; (None, None) over ``limit``."""
        n = self._guard.n_postings
        if n > limit:
            return None, None
        self._guard.postings(0, n)
        return self.postings_at(0, n)

    def posting_range(self, term_id: int) -> tuple[int, int]:
        """Where term ``term_id``'s postings are, after their blocks pass their checksums."""
        start, end = self._range("post_offsets", self._post_off, term_id, len(self._s.raw("post_docs")))
        self._check("post_docs", start, end)
        self._check("post_tfs", start, end)
        self._guard.postings(start, end)
        return start, end

    def postings(self, term_id: int) -> "tuple[np.ndarray, np.ndarray]":
        """(document numbers, term frequencies) of a term as numpy arrays, every document number in range."""
        return self.postings_at(*self.posting_range(term_id))

    def postings_at(self, start: int, end: int) -> "tuple[np.ndarray, np.ndarray]":
        """``postings`` for a range ``posting_range`` returned (its blocks already checked)."""
        all_docs = self._s.raw_array("post_docs")
        if end > start:
            # Document numbers are range-checked a whole block at a time, once, right after its checksum.
            per_block = BLOCK_SIZE // all_docs.itemsize
            first, last = start // per_block, (end - 1) // per_block + 1
            if self._docs_in_range.find(0, first, last) >= 0:
                for b in range(first, last):
                    block = all_docs[b * per_block : (b + 1) * per_block]
                    if not self._docs_in_range[b] and block.size:
                        if int(block.min()) < 0 or int(block.max()) >= self.n_docs:
                            raise self.malformed()
                        self._docs_in_range[b] = 1
        return all_docs[start:end], self._s.raw_array("post_tfs")[start:end]

    def analyze(self, text: str) -> list[str]:
        return self._analyzer(text)

    def with_params(self, k1: float, b: float) -> "BM25Index":
        """Usage: ``index.with_params(1.2, 0.6)``: the same postings scored with other BM25 parameters."""
        other = object.__new__(BM25Index)
        other.__dict__.update(self.__dict__)
        other.k1, other.b, other._norm, other._searcher = float(k1), float(b), None, None
        return other

    def norm(self) -> "np.ndarray":
        if self._norm is None:
            from vaulteval.index import bm25

            self._norm = bm25.length_norm(self.doc_len, self.avgdl, self.k1, self.b)
        return self._norm

    def query_terms(self, tokens: list[str]) -> list[tuple[int, int]]:
        """(term id, query count) of each distinct query term in the index, in first-seen order."""
        counts: dict[str, int] = {}
        for t in tokens:
            counts[t] = counts.get(t, 0) + 1
        return [(tid, qtf) for tid, qtf in ((self.term_id(term), qtf) for term, qtf in counts.items()) if tid >= 0]

    def posting_lists(self, tokens: list[str]) -> "list[tuple[np.ndarray, np.ndarray, int]]":
        """(doc ids, term freqs, query count) of each distinct query term in the index, in first-seen order."""
        return [(*self.postings(tid), qtf) for tid, qtf in self.query_terms(tokens)]

    def score_tokens(self, tokens: list[str]) -> "np.ndarray":
        """BM25 score of every document for already-analyzed query tokens (a new array)."""
        from vaulteval.index import bm25

        return bm25.score_terms(self.n_docs, self.norm(), self.posting_lists(tokens), self.k1)

    def search(self, query: str, k: int = 20) -> list[Hit]:
        return self.search_tokens(self.analyze(query), k)

    def search_tokens(self, tokens: list[str], k: int = 20) -> list[Hit]:
        """``search`` for a query already analyzed with ``analyze`` (plain Python or numpy: ``index.search``)."""
        searcher = self._searcher or self.choose_scorer(warm=False)
        return searcher.search(tokens, k)

    def choose_scorer(self, *, warm: bool) -> Searcher:
        """Decide the scorer now (``index.search``): ``warm`` loads numpy up front for a long run of queries;
        otherwise plain Python, unless numpy is loaded already. Kept for the life of this open index."""
        if self._searcher is None or (warm and not self._searcher.warm):
            self._searcher = Searcher(self, self._s.raw("post_docs"), self._s.raw("post_tfs"), warm=warm)
        return self._searcher

    def doc_lengths(self) -> Any:
        """Every document's length as a memoryview (no numpy), its blocks and meaning checked."""
        self._guard.lengths()
        return self._s.raw("doc_len")

    def doc(self, i: int) -> DocMeta:
        meta = self._doc_cache.get(i)
        if meta is None:
            raw = self.doc_line(i)
            try:
                meta = self._doc_cache[i] = DocMeta.from_row(raw, self._store_names)
            except (ValueError, RecursionError) as exc:
                raise NotProvisioned(f"index file is malformed: {exc} ({self.path})",
                                     rebuild=self.rebuild) from None
        return meta

    def iter_docs(self):
        for i in range(self.n_docs):
            yield self.doc(i)

    def all_docs(self) -> list[DocMeta]:
        """Every document's metadata, parsed in one pass (for builds and diagnostics)."""
        return parse_rows(bytes(self._whole("docs")), self.section("doc_offsets").tolist(), self.header)

    def stats(self) -> dict[str, Any]:
        h = self.header
        return {"path": str(self.path), "schema_version": h["schema_version"], "analyzer": self.analyzer_name,
                "analyzer_version": h["analyzer_version"], "k1": self.k1, "b": self.b, "doc_count": self.n_docs,
                "page_count": h.get("n_pages"), "vocab_size": self.n_terms, "postings": len(self._s.raw("post_docs")),
                "avg_dl": round(self.avgdl, 3), "size_bytes": self.path.stat().st_size, "built_at": h.get("built_at"),
                "chunk_params": h.get("chunk_params")}


def open_index(vault: "Vault") -> BM25Index:
    """Open and verify the vault's index, or raise NotProvisioned with the rebuild command."""
    path = index_path(vault.meta_dir)
    try:
        with MetaDir.open(vault) as meta:
            fh = open_index_file(meta)
    except FileNotFoundError:
        raise NotProvisioned(f"index file is missing ({path})", rebuild=vault.rebuild_command()) from None
    except IndexFileError as exc:
        raise NotProvisioned(f"{exc} ({path})", rebuild=vault.rebuild_command()) from None
    try:
        index = BM25Index(path, fh)
    except NotProvisioned as exc:  # a block checked while opening failed, or offsets were forged
        err = NotProvisioned(str(exc).split("; rebuild with:")[0], rebuild=vault.rebuild_command())
        err.where = exc.where
        raise err from None
    except IndexFileError as exc:
        raise _not_provisioned(f"{exc} ({path})", vault.rebuild_command(), exc) from None
    except (KeyError, ValueError, TypeError, IndexError, OverflowError, RecursionError) as exc:
        raise NotProvisioned(f"index file is malformed: {exc} ({path})", rebuild=vault.rebuild_command()) from None
    index.rebuild = vault.rebuild_command()
    return index


def _not_provisioned(message: str, rebuild: str | None, exc: Exception) -> NotProvisioned:
    err = NotProvisioned(message, rebuild=rebuild)
    if isinstance(exc, IndexCorrupt):
        err.where = (exc.section, exc.block)
    return err
