"""Build the BM25 index from the chunk records the catalog names in the packed store (``<meta>/store/``).

Usage: ``report = build_index(vault, analyzer="default")`` (the caller holds the vault lock).

Any record in claude-obsidian's chunk schema is accepted, whoever wrote it. A chunk file
whose size and mtime match the previous index reuses that index's postings,
so a rebuild re-tokenizes only the chunks that changed.
"""

from __future__ import annotations

import copy
import logging
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Container

import numpy as np

from vaulteval.index import bm25
from vaulteval.chunks import chunking
from vaulteval.chunks.store import progress_bar
from vaulteval.errors import NotProvisioned, PathEscape
from vaulteval.index.params import check_bm25_params, check_chunk_dict
from vaulteval.index.docmeta import ROW_FORMAT
from vaulteval.index.reader import INDEX_DIR, INDEX_NAME, LANGS_SECTION, BM25Index, DocMeta, open_index_file
from vaulteval.index.file import IndexFileError, write_sections
from vaulteval.index.notecap import cap_note_terms
from vaulteval.index.postings import Postings
from vaulteval.index.rowcopy import rows_section
from vaulteval.index.unchanged import same_as_previous
from vaulteval.chunks.catalog import catalog_listing
from vaulteval.chunks.integrity import IntegrityChecker
from vaulteval.chunks.segments import StoreReader, segment_of
from vaulteval.vault.metadir import MetaDir
from vaulteval.vault.testhooks import pause_point
from vaulteval.index.analysis import Analyzer, built_with_installed_libraries, lookup
from vaulteval.index.tokenize import MAX_INPUT_CHARS, over_limit

if TYPE_CHECKING:
    from vaulteval.index.fieldbuild import FieldCollector
    from vaulteval.vault.vault import Vault

log = logging.getLogger(__name__)


@dataclass
class BuildReport:
    docs: int = 0
    pages: int = 0
    terms: int = 0
    reused: int = 0
    tokenized: int = 0
    stale_skipped: int = 0
    # Chunks over the tokenizer's limit (only another tool writes them): indexed whole, listed here.
    oversized: list[str] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)
    size_bytes: int = 0
    analyzer: str = "default"
    path: str = ""
    # The rows just written, for the field index built next under the same lock (not reported).
    doc_rows: list[DocMeta] | None = field(default=None, repr=False)
    # Chunk ids of the packed records refused (provision re-chunks their pages; not reported).
    rejected_ids: list[str] = field(default_factory=list, repr=False)
    # Pages with records left out as stale (provision re-reads those it skipped by the catalog's word).
    stale_pages: set[str] = field(default_factory=set, repr=False)
    # The index in service was what this build would write (but for its time): kept, not written again.
    unchanged: bool = False

    def to_dict(self) -> dict:
        return {f.name: copy.copy(getattr(self, f.name)) for f in fields(self)
                if f.name not in ("doc_rows", "rejected_ids", "stale_pages")}


def _previous(meta: MetaDir, analyzer: str) -> tuple[BM25Index | None, list[DocMeta], bool]:
    """The index in service when it has the same analyzer, to reuse its postings; True when there is one."""
    try:
        old = BM25Index(meta.path / INDEX_DIR / INDEX_NAME, open_index_file(meta))
        if old.analyzer_name == analyzer and built_with_installed_libraries(old.header, analyzer):
            old.verify()  # reuse copies postings wholesale, so every byte must be sound
            docs = old.all_docs()
            if len(docs) == old.n_docs and len(old.all_terms()) == old.n_terms:
                return old, docs, True
    except (IndexFileError, NotProvisioned, KeyError, ValueError, TypeError, IndexError, OverflowError, RecursionError):
        pass
    return None, [], False


class RecordRejected(Exception):
    """A chunk record fails validation; the reason is a short slug."""


def validate_record(vault: "Vault", address: str, name: str, rec: dict,
                    walked: Container[str] = ()) -> tuple[str, int, str, str]:
    """Check one record; return (page_path, chunk_index, text, page_body_hash).

    ``walked``: page paths the caller's walk of the notes folder just listed (walked names hold no ``..`` and
    no symlink, see ``Vault.iter_pages``), whose confinement needs no path resolution; any other path is
    resolved component by component.
    """
    if not isinstance(rec, dict):
        raise RecordRejected("not-an-object")
    page_path, idx = rec.get("page_path"), rec.get("chunk_index")
    body_hash, page_hash = rec.get("body_hash"), rec.get("page_body_hash")
    if not isinstance(body_hash, str) or not isinstance(page_hash, str):
        raise RecordRejected("hashless")
    if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
        raise RecordRejected("bad-chunk-index")
    if rec.get("page_address") != address:
        raise RecordRejected("address-mismatch")
    try:
        if not (isinstance(page_path, str) and page_path in walked):
            vault.page_path(page_path)
    except PathEscape:
        raise RecordRejected("unsafe-page-path") from None
    raw = rec.get("raw_text")
    if not isinstance(raw, str) or chunking.sha256_text(raw) != body_hash:
        raise RecordRejected("body-hash-mismatch")
    text = rec.get("contextualized_text")
    if not isinstance(text, str):
        text = raw
    return page_path, idx, text, page_hash


def build_index(
    vault: "Vault",
    *,
    analyzer: str = "default",
    k1: float = bm25.K1,
    b: float = bm25.B,
    page_hashes: dict[str, str] | None = None,
    chunk_params: dict | None = None,
    listing: list[tuple[str, int, int, str]] | None = None,
    meta: MetaDir | None = None,
    fields: "FieldCollector | None" = None,
    written: dict[str, tuple[int, int, dict]] | None = None,
    keep_unchanged: bool = False,
    pre: Any = None,
) -> BuildReport:
    """Index every valid, current chunk record; publish atomically.

    ``listing`` (location, payload length, CRC, chunk id) replaces reading the
    catalog when the caller has just written it (provision).
    ``meta`` is the opened meta folder (``vault_lock`` yields it). ``fields`` collects the field terms
    (``index.fieldbuild``) of every chunk read, in the same pass. ``written`` (location -> payload length, CRC,
    record) holds the records the caller has just appended to a published segment under the same lock: a
    listed location with that size and CRC takes the record from there instead of reading it back (it is
    validated all the same). The keys of ``page_hashes`` must come from a walk of the notes folder
    (``Vault.iter_pages``): their confinement is not resolved again. ``keep_unchanged`` (provision): when the
    index in service is what this build would write, keep it (``report.unchanged``) instead of writing it again;
    ``index build`` always writes. ``pre``: the analyzer's ``pre_analyze`` helper the caller has been offering texts to (``auto``: Korean).
    """
    k1, b = check_bm25_params(k1, b)
    check_chunk_dict(chunk_params)
    analysis = lookup(analyzer)
    if meta is None:
        with MetaDir.open(vault, create=True) as own:
            own.check_tree()
            return build_index(vault, analyzer=analyzer, k1=k1, b=b, page_hashes=page_hashes,
                               chunk_params=chunk_params, listing=listing, meta=own, fields=fields, written=written,
                               keep_unchanged=keep_unchanged, pre=pre)
    report = BuildReport(analyzer=analyzer)
    old, old_docs_meta, in_service = _previous(meta, analyzer)
    old_by_file = {d.chunk_file: i for i, d in enumerate(old_docs_meta)}
    page_hashes = dict(page_hashes or {})
    walked = frozenset(page_hashes)  # the caller's walk (provision): confined when they were listed

    checker = IntegrityChecker(vault)

    def current_page_hash(rel: str) -> str | None:
        if rel not in page_hashes:
            # A note Obsidian's settings now exclude counts as gone: its chunks are not indexed.
            page_hashes[rel] = "" if vault.ignore and vault.ignore.excluded(rel) else checker.page_hash(rel) or ""
        return page_hashes[rel] or None

    def reject(reason: str, where: str) -> None:
        report.rejected[reason] = report.rejected.get(reason, 0) + 1
        log.warning("skipping chunk %s: %s", where, reason)

    if listing is None:
        listing = catalog_listing(meta) or []  # no catalog: nothing provisioned to index
    return _build(vault, meta, report, analysis, old, old_docs_meta, old_by_file, listing,
                  current_page_hash, reject, k1, b, analyzer, chunk_params, fields, walked, written or {},
                  in_service and keep_unchanged, pre)


def _build(vault, meta: MetaDir, report: BuildReport, analysis: Analyzer, old, old_docs_meta,
           old_by_file, listing, current_page_hash, reject, k1, b, analyzer, chunk_params,
           fields: "FieldCollector | None" = None, walked: Container[str] = (),
           written: dict[str, tuple[int, int, dict]] | None = None, keep: bool = False,
           pre: Any = None) -> BuildReport:
    pause_point("build-started")
    docs: list[DocMeta] = []
    lengths: list[int] = []
    reuse_pairs: list[tuple[int, int]] = []  # (old doc, new doc)
    lists = Postings()
    pending: list[tuple[int, str, str]] = []  # (document number, page, text) of every chunk to analyze
    old_by_id = {d.chunk_id: i for i, d in enumerate(old_docs_meta)}
    old_lengths = old.doc_len.tolist() if old is not None else []  # once: the property checks them on each call
    store = StoreReader(meta.fd_path())
    for rel_file, size, mtime_ns, chunk_id in progress_bar(listing, len(listing), "index", "chunk"):
        prev = old_by_file.get(rel_file)
        if prev is not None and old_docs_meta[prev].chunk_id != chunk_id:
            prev = None  # the catalog names this record under another chunk: read it (its address must agree)
        if prev is None:
            prev = old_by_id.get(chunk_id)  # the same record moved to another segment by compaction
        if prev is not None:
            pm = old_docs_meta[prev]
            if pm.size == size and pm.mtime_ns == mtime_ns:
                if current_page_hash(pm.page_path) != pm.page_body_hash:
                    report.stale_skipped += 1
                    report.stale_pages.add(pm.page_path)
                    continue
                reuse_pairs.append((prev, len(docs)))
                docs.append(pm if pm.chunk_file == rel_file else pm._replace(chunk_file=rel_file))
                lengths.append(old_lengths[prev])
                continue
        address = chunk_id.partition(":")[0]
        try:
            fresh = written.get(rel_file) if written else None
            if fresh is not None and fresh[0] == size and fresh[1] == mtime_ns:
                rec = fresh[2]  # appended by this run's prefix stage: the bytes read back would be these
            else:
                rec = store.record(rel_file, size, mtime_ns)
                if rec is None:
                    raise RecordRejected("bad-frame")
            page_path, idx, text, page_hash = validate_record(vault, address, rel_file, rec, walked)
        except (OSError, ValueError, RecursionError):
            reject("unreadable", rel_file)
            report.rejected_ids.append(chunk_id)
            continue
        except RecordRejected as exc:
            reject(str(exc), rel_file)
            report.rejected_ids.append(chunk_id)
            continue
        if current_page_hash(page_path) != page_hash:
            report.stale_skipped += 1
            report.stale_pages.add(page_path)
            continue
        if over_limit(text) is not None:
            report.oversized.append(f"{address}:{idx}")
            log.warning("chunk %s is longer than %d characters; indexed whole (not written by vaulteval's chunker)",
                        rel_file, MAX_INPUT_CHARS)
        pending.append((len(docs), page_path, text))  # analyzed below, a note's chunks together (auto)
        if fields is not None:  # the field index's terms (auto: its texts), while the record is at hand
            fields.add(page_path, f"{address}:{idx}", rec["body_hash"], page_hash, rec["raw_text"])
        docs.append(DocMeta(f"{address}:{idx}", rel_file, page_path, address, idx, rec["body_hash"], page_hash,
                            chunking.sha256_text(text), size, mtime_ns))
        lengths.append(0)  # set once the text is analyzed, below
        report.tokenized += 1
    store.close()
    if walked and old_docs_meta:
        # A current record of a walked page that the listing no longer names (a catalog that lost it): read the page.
        indexed = {d.page_path for d in docs}
        report.stale_pages.update(pm.page_path for pm in old_docs_meta if pm.page_path not in indexed
                                  and pm.page_path in walked and current_page_hash(pm.page_path) == pm.page_body_hash)
    report.reused = len(reuse_pairs)
    doc_langs = [""] * len(docs)
    if old is not None and reuse_pairs and old.has_section(LANGS_SECTION):
        old_langs = old.doc_languages()
        for prev, new in reuse_pairs:
            doc_langs[new] = old_langs[prev]
    own = None
    if pre is None:  # index build: the analyzer's helper (if it has one) is offered the texts as analysis starts
        pre = own = analysis.pre_analyze()
    try:
        if pre is not None:  # what this build analyzes that the caller has not offered: records read, field texts
            for text in (*(text for _, _, text in pending), *(fields.texts() if fields is not None else ())):
                pre.offer(text)
            if fields is not None:
                fields.pre = pre
        analyzed = analysis.documents([(page, text) for _, page, text in pending], pre)
    finally:
        if own is not None:  # the fields take its terms later: closed, it keeps what it gave back
            own.close()
    dropped = cap_note_terms([page for _, page, _ in pending], [docs[n].chunk_index for n, _, _ in pending],
                             [terms for _, terms in analyzed])  # the chunks of a note past its budget
    for position, ((doc_number, _, _), (code, terms)) in enumerate(zip(pending, analyzed)):
        terms = [] if position in dropped else terms
        lists.add(doc_number, terms)
        lengths[doc_number] = len(terms)
        doc_langs[doc_number] = code
    del pending, analyzed

    # The segments this index reads, named from their records' distinct prefixes (not one parse per record).
    store = sorted({name for where in {d.chunk_file.partition("@")[0] + "@8#0" for d in docs}
                    if (name := segment_of(where)) is not None})
    identity = analysis.identity(set(doc_langs))
    header = {
        "analyzer": identity["analyzer"],
        "analyzer_version": identity["analyzer_version"],
        "k1": k1,
        "b": b,
        "n_docs": len(docs),
        "n_pages": len({d.page_path for d in docs}),
        "chunk_params": chunk_params,
        "exclusions": list(vault.ignore.filters),  # Obsidian's filters in force: doctor compares them
        # The segments this index reads: a writer keeps them while this index (or the one before it) is served.
        "store": store,
        "row_format": ROW_FORMAT,
    }
    if identity["analyzer_libraries"]:  # an index of other library versions is rebuilt, never reused (see _previous)
        header["analyzer_libraries"] = identity["analyzer_libraries"]
    if analysis.per_chunk:
        header["languages"] = dict(sorted(Counter(code for code in doc_langs).items()))
    if keep and not report.tokenized and same_as_previous(old, old_docs_meta, docs, reuse_pairs, lengths,
                                                       analysis.per_chunk, header):
        # Nothing to write: the index in service is what this build would write, but for its build time.
        report.docs, report.pages, report.terms = len(docs), header["n_pages"], old.n_terms
        report.size_bytes, report.path, report.doc_rows = old.verified["size_bytes"], str(old.path), docs
        report.unchanged = True
        return report
    if old is not None:
        lists.reuse(old, reuse_pairs)
    words, post_off, doc_ids, tfs = lists.finish(len(docs))
    # Newline-terminated terms: binary search by offsets, bulk decode by split.
    terms_blob = "".join([w + "\n" for w in words]).encode("utf-8")  # no term holds a newline: it ends each one
    term_off = np.zeros(len(words) + 1, dtype=np.int64)
    term_off[1:] = np.flatnonzero(np.frombuffer(terms_blob, dtype=np.uint8) == 10) + 1
    doc_rows, doc_off = rows_section(old, old_docs_meta, docs, reuse_pairs,
                                     {name: i for i, name in enumerate(store)})
    doc_len = np.array(lengths, dtype=np.int32)
    n_pages = header["n_pages"]
    header["n_terms"] = len(words)
    header["avgdl"] = float(doc_len.mean()) if len(docs) else 0.0
    header["built_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    sections = {
        "terms": terms_blob,
        "term_offsets": term_off,
        "post_offsets": post_off,
        "post_docs": doc_ids.astype(np.int32),
        "post_tfs": tfs.astype(np.int32),
        "doc_len": doc_len,
        "docs": doc_rows,
        "doc_offsets": doc_off,
    }
    if analysis.per_chunk:  # each chunk's language code, one line per chunk
        sections[LANGS_SECTION] = "".join(code + "\n" for code in doc_langs).encode("ascii")
    with meta.sub(INDEX_DIR, create=True) as folder:
        report.size_bytes = write_sections(folder, INDEX_NAME, header, sections)
    path = meta.path / INDEX_DIR / INDEX_NAME
    report.docs, report.pages, report.terms, report.path = len(docs), n_pages, len(words), str(path)
    report.doc_rows = docs
    return report
