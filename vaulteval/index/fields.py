"""The field index: BM25 postings for a chunk's page title, aliases, headings and code blocks.

Usage::

    fields = open_fields(meta_dir, index)           # None when absent or built for another index
    scores = fields.score_tokens("title", index.analyze("descaling"))

The body field is the main index itself (``index.vti``); this file adds the
other fields, one posting table per field over the same document numbers, in
the index container format (``vaulteval.index.file``) as a separate file,
``.vault-meta/bm25/fields.vti``. Its header records the main index's body
checksum, build time and sizes, so a field file left over from another build is never used. Each field
is scored as Okapi BM25 with its own average length and the index's k1 and b;
``vaulteval.pipeline.firststage`` adds them up with the strategy's weights.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vaulteval.index import bm25
from vaulteval.index.file import IndexFileError, read_sections
from vaulteval.index.sanity import table_problem

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index

log = logging.getLogger(__name__)

FIELDS = ("title", "aliases", "headings", "code")
FIELDS_NAME = "fields.vti"
FIELDS_KIND = "vaulteval-fields"


def fields_path(meta_dir: Path) -> Path:
    return Path(meta_dir) / "bm25" / FIELDS_NAME


def index_identity(index: "BM25Index") -> list:
    """What ties a field file to one build of the main index (the CRC of its block table, time and sizes)."""
    h = index.header
    return [h.get("blocks_crc32"), h.get("built_at"), h.get("n_docs"), h.get("n_terms"), h.get("avgdl")]


class FieldTable:
    """One field's sorted vocabulary and postings (same layout as the main index)."""

    def __init__(self, name: str, sections: dict, n_docs: int):
        self.name = name
        self.terms: list[str] = bytes(sections[f"{name}.terms"]).decode("utf-8").split("\n")[:-1]
        self.term_id = {t: i for i, t in enumerate(self.terms)}
        self.post_off = sections[f"{name}.post_offsets"]
        self.post_docs = sections[f"{name}.post_docs"]
        self.post_tfs = sections[f"{name}.post_tfs"]
        self.doc_len = sections[f"{name}.doc_len"]
        if self.doc_len.size != n_docs or self.post_off.size != len(self.terms) + 1:
            raise ValueError(f"field {name} does not match the index")
        problem = table_problem(self.post_off, self.post_docs, self.post_tfs, self.doc_len, n_docs)
        if problem is not None:  # right checksums, wrong meaning: refused like a corrupt file
            raise ValueError(f"field {name}: {problem}")
        self.avgdl = float(self.doc_len.mean()) if n_docs else 0.0


class FieldIndex:
    """Every field of one build; ``score_tokens`` gives a BM25 score per document."""

    def __init__(self, path: Path, header: dict, sections: dict, index: "BM25Index"):
        self.path = path
        self.n_docs = index.n_docs
        self.k1, self.b = index.k1, index.b
        self.tables = {name: FieldTable(name, sections, index.n_docs) for name in header["fields"]}
        self._norms: dict[str, np.ndarray] = {}

    def score_tokens(self, name: str, tokens: list[str]) -> np.ndarray:
        table = self.tables.get(name)
        if table is None or table.avgdl == 0:
            return np.zeros(self.n_docs)
        norm = self._norms.get(name)
        if norm is None:
            norm = self._norms[name] = bm25.length_norm(table.doc_len, table.avgdl, self.k1, self.b)
        counts: dict[str, int] = {}
        for t in tokens:
            counts[t] = counts.get(t, 0) + 1
        lists = []
        for term, qtf in counts.items():
            tid = table.term_id.get(term)
            if tid is not None:
                start, end = int(table.post_off[tid]), int(table.post_off[tid + 1])
                lists.append((table.post_docs[start:end], table.post_tfs[start:end], qtf))
        return bm25.score_terms(self.n_docs, norm, lists, self.k1)


def open_fields(meta_dir: Path, index: "BM25Index") -> FieldIndex | None:
    """The verified field index built for ``index``, or None (logged) when absent, corrupt or stale."""
    path = fields_path(meta_dir)
    if not path.is_file():
        return None
    try:
        header, sections = read_sections(path)
        if header.get("kind") != FIELDS_KIND or header.get("index_identity") != index_identity(index):
            log.warning("field index %s was built for another index; rebuild with provision", path)
            return None
        return FieldIndex(path, header, sections, index)
    except (IndexFileError, KeyError, TypeError, ValueError) as exc:
        log.warning("field index %s unusable (%s); field weights are not applied", path, exc)
        return None
