"""The BM25 index: open (verified, memory-mapped), query, stats, invalidate.

Usage::

    index = open_index(vault)                 # raises NotProvisioned when unusable
    hits = index.search("descale espresso", k=20)
    index.doc(hits[0].doc).chunk_id
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from vaulteval.index import bm25
from vaulteval.errors import NotProvisioned, UsageError
from vaulteval.index.file import IndexFileError, read_header, read_sections
from vaulteval.index.tokenize import ANALYZER_VERSION, get_analyzer
from vaulteval.vault.metadir import MetaDir, NotRegularFile

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

INDEX_DIR = "bm25"
INDEX_NAME = "index.vti"
STALE_SUFFIX = ".stale"


def index_path(meta_dir: Path) -> Path:
    return meta_dir / INDEX_DIR / INDEX_NAME


def invalidate_index(meta: MetaDir) -> bool:
    """Move the index aside before the chunk set changes, so a mixed index is never served.

    The old file stays as ``index.vti.stale`` for the next build to reuse its postings.
    """
    if not meta.is_dir(INDEX_DIR):
        return False
    with meta.sub(INDEX_DIR) as folder:
        if not folder.exists(INDEX_NAME):
            return False
        folder.replace(INDEX_NAME, INDEX_NAME + STALE_SUFFIX)
        os.fsync(folder.fd)
    return True


def restore_index(meta: MetaDir) -> bool:
    """Put an index moved aside by ``invalidate_index`` back when no newer one was published."""
    try:
        if not meta.is_dir(INDEX_DIR):
            return False
        with meta.sub(INDEX_DIR) as folder:
            if folder.exists(INDEX_NAME) or not folder.exists(INDEX_NAME + STALE_SUFFIX):
                return False
            folder.replace(INDEX_NAME + STALE_SUFFIX, INDEX_NAME)
            return True
    except OSError:
        return False


def open_index_file(meta: MetaDir, name: str = INDEX_NAME):
    """The index file opened through the meta folder's descriptor (raises IndexFileError when unusable)."""
    try:
        with meta.sub(INDEX_DIR) as folder:
            return folder.open_read(name)
    except FileNotFoundError:
        raise IndexFileError("index file is missing") from None
    except NotRegularFile:
        raise IndexFileError("index file is not a regular file") from None
    except OSError as exc:
        raise IndexFileError(f"index file unreadable: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class DocMeta:
    """One indexed chunk, as recorded at build time."""

    chunk_id: str
    chunk_file: str  # relative to the meta dir: chunks/<address>/chunk-NNN.json
    page_path: str
    page_address: str
    chunk_index: int
    body_hash: str
    page_body_hash: str
    context_hash: str
    size: int
    mtime_ns: int

    @classmethod
    def from_json(cls, line: bytes) -> "DocMeta":
        return cls.from_dict(json.loads(line))

    @classmethod
    def from_dict(cls, d: Any) -> "DocMeta":
        """A checked row: strings where strings belong, whole numbers where numbers do (else ValueError)."""
        if not isinstance(d, dict):
            raise ValueError("index document row is not an object")
        strs = [d.get(k) for k in ("id", "file", "page", "addr", "bh", "ph", "ch")]
        ints = [d.get(k) for k in ("ci", "sz", "mt")]
        if not all(isinstance(v, str) for v in strs) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in ints):
            raise ValueError("index document row has fields of the wrong type")
        return cls(d["id"], d["file"], d["page"], d["addr"], d["ci"], d["bh"], d["ph"], d["ch"], d["sz"], d["mt"])

    def to_json(self) -> bytes:
        d = {"id": self.chunk_id, "file": self.chunk_file, "page": self.page_path, "addr": self.page_address,
             "ci": self.chunk_index, "bh": self.body_hash, "ph": self.page_body_hash, "ch": self.context_hash,
             "sz": self.size, "mt": self.mtime_ns}
        return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class Hit(NamedTuple):
    doc: int
    score: float


class BM25Index:
    """A verified, memory-mapped index file. Cheap to open; nothing is parsed up front."""

    rebuild: str | None = None  # the command that rebuilds it, named when a row turns out malformed

    def __init__(self, path: Path, fh=None):
        self.path = path
        self.header, s = read_sections(path, fh)
        if self.header.get("analyzer_version") != ANALYZER_VERSION:
            # Terms from another tokenizer version would silently miss query terms.
            raise IndexFileError(f"index was built with analyzer version {self.header.get('analyzer_version', 1)}, "
                                 f"this vaulteval uses {ANALYZER_VERSION}")
        self.analyzer_name: str = self.header["analyzer"]
        self.k1: float = float(self.header["k1"])
        self.b: float = float(self.header["b"])
        self.n_docs: int = int(self.header["n_docs"])
        self.avgdl: float = float(self.header["avgdl"])
        self._terms: memoryview = s["terms"]
        self._term_off = s["term_offsets"]
        self._post_off = s["post_offsets"]
        self.post_docs = s["post_docs"]
        self.post_tfs = s["post_tfs"]
        self.doc_len = s["doc_len"]
        self._docs_blob: memoryview = s["docs"]
        self._doc_off = s["doc_offsets"]
        self._norm: np.ndarray | None = None
        try:
            self._analyzer = get_analyzer(self.analyzer_name)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        self._doc_cache: dict[int, DocMeta] = {}
        self._check_shape()

    def _check_shape(self) -> None:
        """Offsets and ids must stay inside their arrays: a well-checksummed file can still be forged."""
        from vaulteval.index.params import check_bm25_params

        try:
            check_bm25_params(self.k1, self.b)
        except UsageError as exc:
            raise ValueError(f"index header: {exc}") from None
        n, t = self.n_docs, self.n_terms
        problems = [
            self._term_off.size < 1 or self.n_terms < 0,
            self._post_off.size != t + 1, self.doc_len.size != n, self._doc_off.size != n + 1,
            self.post_docs.size != self.post_tfs.size, n < 0,
            not np.isfinite(self.avgdl) or self.avgdl < 0,
        ]
        if not any(problems):
            problems = [
                int(self._term_off[0]) != 0 or int(self._term_off[-1]) != len(self._terms),
                int(self._post_off[0]) != 0 or int(self._post_off[-1]) != self.post_docs.size,
                int(self._doc_off[0]) != 0 or int(self._doc_off[-1]) != len(self._docs_blob),
                bool(np.any(np.diff(self._term_off) < 1)), bool(np.any(np.diff(self._post_off) < 0)),
                bool(np.any(np.diff(self._doc_off) < 0)),
                self.post_docs.size > 0 and (int(self.post_docs.min()) < 0 or int(self.post_docs.max()) >= n),
            ]
        if any(problems):
            raise ValueError("index arrays are inconsistent with each other")

    @property
    def n_terms(self) -> int:
        return int(self._term_off.size - 1)

    def term_at(self, i: int) -> str:
        return bytes(self._terms[int(self._term_off[i]) : int(self._term_off[i + 1]) - 1]).decode("utf-8")

    def all_terms(self) -> list[str]:
        """The whole sorted vocabulary (terms are stored newline-terminated)."""
        return bytes(self._terms).decode("utf-8").split("\n")[:-1]

    def doc_line(self, i: int) -> bytes:
        return bytes(self._docs_blob[int(self._doc_off[i]) : int(self._doc_off[i + 1])])

    def term_id(self, term: str) -> int:
        """Binary search of the sorted vocabulary; -1 when absent."""
        key = term.encode("utf-8")
        lo, hi = 0, self.n_terms
        terms, off = self._terms, self._term_off
        while lo < hi:
            mid = (lo + hi) // 2
            probe = bytes(terms[int(off[mid]) : int(off[mid + 1]) - 1])
            if probe < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.n_terms and bytes(terms[int(off[lo]) : int(off[lo + 1]) - 1]) == key:
            return lo
        return -1

    def postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = int(self._post_off[term_id]), int(self._post_off[term_id + 1])
        return self.post_docs[start:end], self.post_tfs[start:end]

    def analyze(self, text: str) -> list[str]:
        return self._analyzer(text)

    def with_params(self, k1: float, b: float) -> "BM25Index":
        """Usage: ``index.with_params(1.2, 0.6)``: the same postings scored with other BM25 parameters."""
        other = object.__new__(BM25Index)
        other.__dict__.update(self.__dict__)
        other.k1, other.b, other._norm = float(k1), float(b), None
        return other

    def norm(self) -> np.ndarray:
        if self._norm is None:
            self._norm = bm25.length_norm(self.doc_len, self.avgdl, self.k1, self.b)
        return self._norm

    def score_tokens(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every document for already-analyzed query tokens."""
        counts: dict[str, int] = {}
        for t in tokens:
            counts[t] = counts.get(t, 0) + 1
        lists = []
        for term, qtf in counts.items():
            tid = self.term_id(term)
            if tid >= 0:
                docs, tfs = self.postings(tid)
                lists.append((docs, tfs, qtf))
        return bm25.score_terms(self.n_docs, self.norm(), lists, self.k1)

    def search(self, query: str, k: int = 20) -> list[Hit]:
        scores = self.score_tokens(self.analyze(query))
        docs, vals = bm25.top_k(scores, k)
        return [Hit(int(d), float(v)) for d, v in zip(docs, vals)]

    def doc(self, i: int) -> DocMeta:
        meta = self._doc_cache.get(i)
        if meta is None:
            raw = bytes(self._docs_blob[int(self._doc_off[i]) : int(self._doc_off[i + 1])])
            try:
                meta = self._doc_cache[i] = DocMeta.from_json(raw)
            except (ValueError, RecursionError) as exc:
                raise NotProvisioned(f"index file is malformed: {exc} ({self.path})",
                                     rebuild=self.rebuild) from None
        return meta

    def iter_docs(self):
        for i in range(self.n_docs):
            yield self.doc(i)

    def all_docs(self) -> list[DocMeta]:
        """Every document's metadata, parsed in one pass (for builds and diagnostics)."""
        blob = bytes(self._docs_blob)
        if not blob:
            return []
        rows = json.loads(b"[" + blob[:-1].replace(b"\n", b",") + b"]")
        return [DocMeta.from_dict(d) for d in rows]

    def stats(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "schema_version": self.header["schema_version"],
            "analyzer": self.analyzer_name,
            "analyzer_version": self.header["analyzer_version"],
            "k1": self.k1,
            "b": self.b,
            "doc_count": self.n_docs,
            "page_count": self.header.get("n_pages"),
            "vocab_size": self.n_terms,
            "postings": int(self.post_docs.size),
            "avg_dl": round(self.avgdl, 3),
            "size_bytes": self.path.stat().st_size,
            "built_at": self.header.get("built_at"),
            "chunk_params": self.header.get("chunk_params"),
        }


def open_index(vault: "Vault") -> BM25Index:
    """Open and verify the vault's index, or raise NotProvisioned with the rebuild command."""
    path = index_path(vault.meta_dir)
    try:
        with MetaDir.open(vault) as meta:
            fh = open_index_file(meta)
    except FileNotFoundError:
        raise NotProvisioned(f"index file is missing ({path})", rebuild=vault.rebuild_command()) from None
    except IndexFileError as exc:
        reason = "index is being rebuilt or was invalidated" if "missing" in str(exc) and _stale(vault) else str(exc)
        raise NotProvisioned(f"{reason} ({path})", rebuild=vault.rebuild_command()) from None
    try:
        index = BM25Index(path, fh)
    except IndexFileError as exc:
        raise NotProvisioned(f"{exc} ({path})", rebuild=vault.rebuild_command()) from None
    except (KeyError, ValueError, TypeError, IndexError, OverflowError, RecursionError) as exc:
        raise NotProvisioned(f"index file is malformed: {exc} ({path})", rebuild=vault.rebuild_command()) from None
    index.rebuild = vault.rebuild_command()
    return index


def _stale(vault: "Vault") -> bool:
    try:
        with MetaDir.open(vault) as meta:
            return meta.is_dir(INDEX_DIR) and meta.exists(f"{INDEX_DIR}/{INDEX_NAME}{STALE_SUFFIX}")
    except OSError:
        return False


def peek_header(meta_dir: Path) -> dict[str, Any] | None:
    try:
        return read_header(index_path(meta_dir))
    except IndexFileError:
        return None
