"""Build the field index (title, aliases, headings, code) for the documents of a freshly built main index.

Usage (under the vault lock, right after ``build_index``): ``build_fields(vault, index, meta)``.

Incremental like the main index: rows of the previous field file whose chunk is
unchanged (same page path, chunk id and hashes) are carried over, so editing a
few notes reads only those notes.

Title is the page's ``title:`` and its file name; aliases are the front
matter's ``aliases`` as Obsidian reads them (``chunks.obsidian.page_aliases``: any key case, ``alias``); headings are the chunk's Markdown
``#`` lines; code is the text inside the chunk's fenced code blocks (``` or
~~~; a fence left open at the end of a chunk runs to its end). Each field is
analyzed with the index's analyzer (``auto``: the chunk's language's, as the index records it).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from vaulteval.chunks.chunking import parse_page
from vaulteval.chunks.integrity import IntegrityChecker
from vaulteval.chunks.store import progress_bar
from vaulteval.errors import PathEscape, UnsafeMetaPath
from vaulteval.index.fields import FIELDS, FIELDS_KIND, FieldTable, fields_path, index_identity
from vaulteval.index.fieldtext import code_text, headings_text
from vaulteval.index.file import IndexFileError, checked_open, read_sections, write_sections
from vaulteval.index.postings import canonical
from vaulteval.index.analysis import lookup
from vaulteval.vault.paths import open_confined

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index
    from vaulteval.vault.metadir import MetaDir
    from vaulteval.vault.vault import Vault

EXTRACT_VERSION = 2  # bump when what goes into a field changes: a newer build must not reuse older rows
DIGEST_SIZE = 16  # bytes of BLAKE2b per row key in ``doc_digests``
def _aliases(frontmatter: dict[str, Any]) -> str:
    from vaulteval.chunks.obsidian import page_aliases  # a mapping or nested list is flattened into its text

    return "\n".join(page_aliases(frontmatter))


class FieldCollector:
    """Field terms of the chunks a build tokenizes, taken in the same pass over the records.

    Usage: ``fields = FieldCollector(vault, "default", page_bytes)``; the build calls
    ``fields.add(page_path, chunk_id, body_hash, page_hash, raw_text)`` for each chunk it reads, then
    ``build_fields(..., collected=fields)`` writes them without reading those records again. ``page_bytes``
    (page path -> the bytes just hashed) spares reading the notes again for their title and aliases, ``parsed``
    (page path -> ``ParsedPage`` of those whole bytes) parsing them again.
    ``auto`` knows a chunk's language only once the build has identified it, so its rows keep the field
    texts (``FieldTexts``) and ``build_fields`` analyzes them in the language the index records.
    """

    def __init__(self, vault: "Vault", analyzer: str, page_bytes: dict[str, bytes] | None = None,
                 parsed: dict | None = None):
        self.vault = vault
        self.analyzer = analyzer
        self.analysis = lookup(analyzer)
        self.analyze = self.analysis.terms
        self._page_bytes = page_bytes or {}
        self._parsed = parsed or {}
        self._pages: dict[str, tuple[Counter, Counter]] = {}
        self._texts: dict[str, tuple[str, str]] = {}
        self.rows: dict[tuple, tuple[Counter, Counter, Counter, Counter] | FieldTexts] = {}
        self.pre: Any = None  # the build's ``pre_analyze`` helper (auto: Korean), whose terms the fields take

    def texts(self):
        """Every field text of the ``auto`` rows (to be analyzed once their chunks' languages are known)."""
        for row in self.rows.values():
            if isinstance(row, FieldTexts):
                yield from row

    def page_terms(self, page_path: str) -> tuple[Counter, Counter]:
        """Title and alias terms of a page (read once per page)."""
        hit = self._pages.get(page_path)
        if hit is None:
            title, aliases = self.page_texts(page_path)
            hit = self._pages[page_path] = Counter(self.analyze(title)), Counter(self.analyze(aliases))
        return hit

    def page_texts(self, page_path: str) -> tuple[str, str]:
        """Title and alias text of a page (read once per page)."""
        hit = self._texts.get(page_path)
        if hit is None:
            hit = self._texts[page_path] = _page_texts(self.vault, page_path, self._page_bytes.get(page_path),
                                                       self._parsed.get(page_path))
        return hit

    def add(self, page_path: str, chunk_id: str, body_hash: str, page_hash: str, raw: str) -> None:
        key = (page_path, chunk_id, body_hash, page_hash)
        if self.analysis.per_chunk:
            self.rows[key] = FieldTexts(*self.page_texts(page_path), headings_text(raw), code_text(raw))
            return
        title, aliases = self.page_terms(page_path)
        self.rows[key] = (title, aliases, self._counts(headings_text(raw)), self._counts(code_text(raw)))

    def _counts(self, text: str) -> Counter:
        return Counter(self.analyze(text)) if text else Counter()


class FieldTexts(NamedTuple):
    """A chunk's field texts, collected by an ``auto`` build before its language is known."""

    title: str
    aliases: str
    headings: str
    code: str


def _page_texts(vault: "Vault", page_path: str, data: bytes | None = None, page: Any = None) -> tuple[str, str]:
    """A page's title (and file name, when they differ) and its aliases; empty when it cannot be read."""
    title, aliases = "", ""
    try:
        if page is None:
            if data is None:
                with open_confined(vault.notes_dir, page_path, strip=vault.notes_strip) as fh:
                    data = fh.read()
            page = parse_page(data, page_path)
        stem = page_path.rsplit("/", 1)[-1].removesuffix(".md")
        title = page.title if page.title == stem else f"{page.title}\n{stem}"
        aliases = _aliases(page.frontmatter)
    except (OSError, ValueError, PathEscape):
        pass
    return title, aliases


def _page_terms(vault: "Vault", analyze: Any, page_path: str, data: bytes | None = None) -> tuple[Counter, Counter]:
    title, aliases = _page_texts(vault, page_path, data)
    return Counter(analyze(title)), Counter(analyze(aliases))


def build_fields(vault: "Vault", index: "BM25Index", meta: "MetaDir", docs: list | None = None,
                 collected: FieldCollector | None = None) -> int:
    """Write ``bm25/fields.vti`` for ``index``'s documents (``docs``: its rows, when the caller has them);
    returns its size in bytes.

    A document whose page path, chunk id and hashes match a row of the previous field file keeps that
    file's terms (``doc_digests`` names each row by a digest of that key); the others take the terms ``collected`` while the index was
    built, and only a chunk missing from both reads its page and record.
    """
    analysis = lookup(index.analyzer_name)
    if docs is None or len(docs) != index.n_docs:
        docs = index.all_docs()
    keys = [row_digest(d.page_path, d.chunk_id, d.body_hash, d.page_body_hash) for d in docs]
    previous = previous_fields(meta, index.analyzer_name)
    old_of = np.full(len(docs), -1, dtype=np.int64)
    if previous is not None:
        old_keys = previous[0]
        old_of[:] = [old_keys.get(k, -1) for k in keys]
    if collected is not None and collected.analyzer != index.analyzer_name:
        collected = None
    ready = collected.pre.terms() if collected is not None and collected.pre is not None else {}
    fresh = _fresh_counts(vault, analysis.per_document(index.doc_languages(), ready),
                          [(i, docs[i]) for i in np.flatnonzero(old_of < 0).tolist()], collected)
    sections: dict[str, Any] = {}
    for name in FIELDS:
        old = (previous[1][name], old_of) if previous is not None else None
        sections.update(_postings(name, len(docs), fresh[name], old))
    sections["doc_digests"] = b"".join(keys)
    header = {"kind": FIELDS_KIND, "fields": list(FIELDS), "n_docs": index.n_docs, "extract_version": EXTRACT_VERSION,
              "index_identity": index_identity(index), "analyzer": index.analyzer_name}
    with meta.sub(fields_path(meta.path).parent.name, create=True) as folder:
        return write_sections(folder, fields_path(meta.path).name, header, sections)


def row_digest(page_path: str, chunk_id: str, body_hash: str, page_hash: str) -> bytes:
    """What names a row of the field file: BLAKE2b of the chunk's page path, id and hashes (the index row holds
    them in full; a 16-byte digest keeps the field file small)."""
    key = "\x00".join((page_path, chunk_id, body_hash, page_hash)).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(key, digest_size=DIGEST_SIZE).digest()


def _fresh_counts(vault: "Vault", analyze_for: Any, docs: list[tuple[int, Any]],
                  collected: FieldCollector | None = None) -> dict[str, list[tuple[int, Counter]]]:
    """Each field's terms for the given (document number, DocMeta) pairs: collected by the build, else read
    from their pages and records (``analyze_for(i)``: document i's analyzer)."""
    checker = IntegrityChecker(vault)
    rows = collected.rows if collected is not None else {}
    pages: dict[str, tuple[Counter, Counter]] = {}
    out: dict[str, list[tuple[int, Counter]]] = {name: [] for name in FIELDS}
    for i, doc in progress_bar(docs, len(docs), "fields", "chunk"):
        row = rows.get((doc.page_path, doc.chunk_id, doc.body_hash, doc.page_body_hash))
        if isinstance(row, FieldTexts):  # auto: analyzed here, in the chunk's language
            analyze = analyze_for(i)
            if doc.page_path not in pages:
                pages[doc.page_path] = Counter(analyze(row.title)), Counter(analyze(row.aliases))
            row = (*pages[doc.page_path], Counter(analyze(row.headings)), Counter(analyze(row.code)))
        elif row is None:
            analyze = analyze_for(i)
            if doc.page_path not in pages:
                pages[doc.page_path] = _page_terms(vault, analyze, doc.page_path)
            rec = checker.record(doc) or {}
            raw = rec.get("raw_text") if isinstance(rec.get("raw_text"), str) else ""
            row = (*pages[doc.page_path], Counter(analyze(headings_text(raw))), Counter(analyze(code_text(raw))))
        for name, counts in zip(FIELDS, row):
            out[name].append((i, counts))
    return out


def previous_fields(meta: "MetaDir", analyzer: str) -> tuple[dict[bytes, int], dict[str, FieldTable]] | None:
    """The last field file's row digests and tables when it can seed this build; None when absent or unusable
    (another analyzer or extraction version, an older file without row digests, or anything malformed).
    It is read through the opened meta folder, never by path."""
    found = _read_previous(meta, analyzer)
    if found is None:
        return None
    _, keys, tables = found
    return {key: i for i, key in enumerate(keys)}, tables


def fields_current(meta: "MetaDir", index: "BM25Index", docs: list) -> bool:
    """Whether ``bm25/fields.vti`` is what ``build_fields(vault, index, meta, docs)`` would write again: built
    for this very index file, one row per document with the same digests in the same order, and every table as
    a build writes it (sorted vocabulary, no term without postings, each term's documents ascending)."""
    found = _read_previous(meta, index.analyzer_name)
    if found is None:
        return False
    header, keys, tables = found
    if header.get("index_identity") != index_identity(index) or header.get("fields") != list(FIELDS) \
            or len(keys) != len(docs) or len(docs) != index.n_docs:
        return False
    if keys != [row_digest(d.page_path, d.chunk_id, d.body_hash, d.page_body_hash) for d in docs]:
        return False
    return all(canonical(table.terms, table.post_off, table.post_docs) for table in tables.values())


def _read_previous(meta: "MetaDir", analyzer: str) -> tuple[dict, list[bytes], dict[str, FieldTable]] | None:
    """(header, row digests, tables) of the last field file, checked as ``previous_fields`` says; else None."""
    try:
        path = fields_path(meta.path)
        with meta.sub(path.parent.name) as folder:
            fh = checked_open(lambda: folder.open_read(path.name))
        header, sections = read_sections(path, fh)
        if (header.get("kind") != FIELDS_KIND or header.get("analyzer") != analyzer
                or header.get("extract_version") != EXTRACT_VERSION or "doc_digests" not in sections
                or sections.dtype("doc_digests") != "bytes"):
            return None
        blob = bytes(sections["doc_digests"])
        n_docs = header.get("n_docs")
        if not isinstance(n_docs, int) or len(blob) != n_docs * DIGEST_SIZE:
            return None
        keys = [blob[i:i + DIGEST_SIZE] for i in range(0, len(blob), DIGEST_SIZE)]
        tables = {name: FieldTable(name, sections, len(keys)) for name in FIELDS}
        if not all(_well_formed(t, len(keys)) for t in tables.values()):
            return None
    except (IndexFileError, UnsafeMetaPath, OSError, KeyError, TypeError, ValueError, RecursionError):
        return None
    return header, keys, tables


def _well_formed(table: FieldTable, n_docs: int) -> bool:
    """Integer arrays whose offsets rise from 0 to the postings' length, with document numbers in range."""
    off, docs, tfs, lengths = table.post_off, table.post_docs, table.post_tfs, table.doc_len
    if any(a.dtype.kind not in "iu" for a in (off, docs, tfs, lengths)) or tfs.size != docs.size:
        return False
    return bool(off.size >= 1 and off[0] == 0 and off[-1] == docs.size and np.all(np.diff(off) >= 0)
                and (docs.size == 0 or (docs.min() >= 0 and docs.max() < n_docs and tfs.min() > 0))
                and (lengths.size == 0 or lengths.min() >= 0))


def _postings(name: str, n_docs: int, fresh: list[tuple[int, Counter]],
              old: tuple[FieldTable, np.ndarray] | None) -> dict[str, Any]:
    """One field's sections: the fresh documents' terms plus, for reused documents, the old file's postings."""
    doc_len = np.zeros(n_docs, dtype=np.int32)
    fresh_terms = [t for _, counts in fresh for t in counts]
    fresh_docs = np.array([d for d, counts in fresh for _ in counts], dtype=np.int64)
    fresh_tfs = np.array([n for _, counts in fresh for n in counts.values()], dtype=np.int64)
    for d, counts in fresh:
        doc_len[d] = sum(counts.values())
    vocab = set(fresh_terms)
    old_terms = old_docs = old_tfs = np.zeros(0, dtype=np.int64)
    old_words: list[str] = []
    if old is not None:
        table, old_of = old
        reused = np.flatnonzero(old_of >= 0)
        new_of_old = np.full(table.doc_len.size, -1, dtype=np.int64)
        new_of_old[old_of[reused]] = reused
        doc_len[reused] = table.doc_len[old_of[reused]]
        mapped = new_of_old[table.post_docs]
        keep = mapped >= 0
        old_terms = np.repeat(np.arange(len(table.terms), dtype=np.int64), np.diff(table.post_off))[keep]
        old_docs, old_tfs = mapped[keep], table.post_tfs[keep].astype(np.int64)
        old_words = table.terms
        vocab.update(old_words[t] for t in np.unique(old_terms).tolist())
    words = sorted(vocab)
    ids = {t: i for i, t in enumerate(words)}
    lut = np.array([ids.get(w, -1) for w in old_words], dtype=np.int64)
    terms = np.concatenate([np.array([ids[t] for t in fresh_terms], dtype=np.int64), lut[old_terms]])
    docs = np.concatenate([fresh_docs, old_docs])
    tfs = np.concatenate([fresh_tfs, old_tfs])
    order = np.lexsort((docs, terms))
    df = np.bincount(terms, minlength=len(words)) if len(words) else np.zeros(0, np.int64)
    post_off = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(df, out=post_off[1:])
    return {f"{name}.terms": "".join(t + "\n" for t in words).encode("utf-8"), f"{name}.post_offsets": post_off,
            f"{name}.post_docs": docs[order].astype(np.int32), f"{name}.post_tfs": tfs[order].astype(np.int32),
            f"{name}.doc_len": doc_len}
