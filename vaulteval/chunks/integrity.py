"""Is an indexed chunk still current? Checked against its chunk record, the page bytes and the page text.

Usage: ``record = checker.current_record(doc)``; None means stale and must not be served.

Records are read through ``vaulteval.chunks.segments.StoreReader.record`` (the packed
store; ``store/<segment>@<block>#<n>``); a row naming anything else is never current.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from vaulteval.errors import PathEscape
from vaulteval.vault.digest import bytes_sha256, text_sha256
from vaulteval.vault.paths import cached_lexical_path, read_confined

if TYPE_CHECKING:
    from typing import Protocol

    from vaulteval.vault.vault import Vault

    class DocMeta(Protocol):
        """What an index says about one chunk (``vaulteval.index.docmeta.DocMeta`` has these fields)."""

        chunk_file: str
        chunk_index: int
        page_address: str
        page_path: str
        page_body_hash: str
        body_hash: str
        context_hash: str

# Racy-file rule (as git uses): a file modified this recently may change again
# within the same timestamp tick, so its verdict is not cached.
_RACY_SECONDS = 2.0
_stat = os.stat  # the one stat a remembered verdict costs (a name of its own, so tests can count the calls)


def stat_signature(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """A file's signature: the same device, inode, size, mtime and ctime mean the same bytes."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _doc_key(doc: "DocMeta") -> tuple:
    """What the index claims about a chunk: a record is accepted for exactly these values."""
    return (doc.chunk_file, doc.chunk_index, doc.page_address, doc.page_path, doc.body_hash, doc.page_body_hash,
            doc.context_hash)


class IntegrityChecker:
    """Verifies chunks against their records and pages; remembers verdicts per unchanged file.

    A verdict (a page's hash, a record accepted for an index row) is kept with the
    file's signature and reused while a ``stat`` of the file gives the same one;
    otherwise the file is read and checked again. ``query()`` gives a view for one
    query that stats each file at most once and reads it at most once.
    """

    def __init__(self, vault: "Vault", *, many_queries: bool = False):
        self.vault = vault
        # The store's blocks, held inflated before the first query: one item, popped by exactly one caller
        # (list.pop is atomic), so concurrent first queries of a server hold the store once.
        self._hold_pending = [True] if many_queries else []
        if many_queries:  # notes and chunks to hash ahead: hashlib's import (OpenSSL) pays for itself
            from vaulteval.vault.digest import prefer_openssl

            prefer_openssl()
        self._page_hash: dict[str, tuple[tuple, str]] = {}
        self._packed: dict[tuple, dict] = {}
        self._derived: dict[tuple[str, str], bool] = {}
        self._bulk_note: tuple | None = None
        # An index row whose three checks passed while its note's page-hash verdict was remembered: current again
        # while the note's stat signature is the one that verdict holds for (the record never changes).
        self._current: dict["DocMeta", tuple[str, tuple, dict]] = {}
        self._store = None

    def store(self):
        """The packed store's reader (segments opened once and kept: the generation this checker reads)."""
        if self._store is None:
            from vaulteval.chunks.segments import StoreReader

            self._store = StoreReader(self.vault.meta_dir)
        return self._store

    def hold_store(self) -> None:
        """A checker for many queries reads the store's pinned segments once and keeps their blocks inflated
        (``StoreReader.hold``); after the first call, or for a checker of one query, nothing."""
        if self._hold_pending:
            try:
                self._hold_pending.pop()
            except IndexError:
                return  # another thread took it
            from vaulteval.chunks.segments import HOLD_BYTES

            self.store().hold(HOLD_BYTES)

    def text_of_note(self, doc: "DocMeta", raw: str, data: bytes | None = None, *, bulk: bool = False) -> bool:
        """True when ``raw`` is text of the note as it is now (the page the index names, with its hash).

        A record forged with right checksums cannot serve words the note does not hold
        (``vaulteval.chunks.derived``). ``data``: the note's bytes when the caller just read them and found their hash right.
        ``bulk``: the caller checks every chunk of each note in turn (``doctor``); the last note's text forms are
        kept for its next chunk, and its visible text is tried early (``NoteText``).
        """
        key = (doc.page_body_hash, doc.body_hash)
        verdict = self._derived.get(key)
        if verdict is None:
            if data is None:  # given, they are the bytes whose hash this query just compared
                try:
                    data = read_confined(self.vault.notes_dir, doc.page_path, self.vault.notes_strip)[1]
                except (OSError, PathEscape):
                    return False
                if bytes_sha256(data) != doc.page_body_hash:
                    return False
            from vaulteval.chunks.derived import NoteText, chunk_in_note

            if bulk:
                held = self._bulk_note  # (page hash, its NoteText): one note, replaced whole (threads share it)
                if held is None or held[0] != doc.page_body_hash:
                    held = self._bulk_note = (doc.page_body_hash, NoteText(data))
                verdict = self._derived[key] = held[1].holds(raw, bulk=True)
            else:
                verdict = self._derived[key] = chunk_in_note(raw, data)
        return verdict

    def query(self) -> "QueryCheck":
        """Usage: ``check = checker.query()``, then ``check.current_record(doc)`` for each candidate of one query."""
        return QueryCheck(self)

    def page_hash(self, page_rel: str) -> str | None:
        """``sha256:<hex>`` of the page's exact bytes, or None when it is missing or outside the notes folder."""
        return QueryCheck(self).page_hash(page_rel)

    def record(self, doc: "DocMeta") -> dict | None:
        """The chunk record on disk if it is the one the index was built from, else None."""
        return QueryCheck(self).record(doc)

    def current_record(self, doc: "DocMeta") -> dict | None:
        return QueryCheck(self).current_record(doc)

    @staticmethod
    def _matches(doc: "DocMeta", rec: dict) -> bool:
        if not isinstance(rec, dict):
            return False
        raw = rec.get("raw_text")
        text = rec.get("contextualized_text")
        if not isinstance(raw, str):
            return False
        if not isinstance(text, str):
            text = raw
        idx = rec.get("chunk_index")
        if not isinstance(idx, int) or isinstance(idx, bool):
            return False
        return (
            idx == doc.chunk_index
            and rec.get("page_address") == doc.page_address
            and rec.get("page_path") == doc.page_path
            and rec.get("body_hash") == doc.body_hash
            and rec.get("page_body_hash") == doc.page_body_hash
            and text_sha256(raw) == doc.body_hash
            and text_sha256(text) == doc.context_hash
        )


class QueryCheck:
    """The checks of one query: each file is stat'ed at most once and read at most once, whatever the
    number of candidates that name it; verdicts go to (and come from) the checker's signature cache.
    Not shared between threads: each query makes its own."""

    def __init__(self, checker: IntegrityChecker):
        self.checker = checker
        self._stats: dict[str, tuple | None] = {}  # path -> signature (None: cannot be stat'ed)
        self._values: dict[tuple, object] = {}  # (kind, key) -> verdict already reached in this query
        self._notes: dict[str, bytes] = {}  # the notes this query read: the text check reads none again

    def _signature(self, path: str) -> tuple | None:
        if path in self._stats:
            return self._stats[path]
        try:
            sig = stat_signature(_stat(path))
        except OSError:
            sig = None
        self._stats[path] = sig
        return sig

    def _read(self, cache: dict, key, base, rel: str, strip: str | None, parse, accept=None):
        """Parse a confined file, or reuse the value remembered for this very file (same signature)."""
        memo = (id(cache), key)
        if memo in self._values:
            return self._values[memo]
        value = None
        try:
            path = cached_lexical_path(base, rel, strip)
            hit = cache.get(key)
            if hit is not None and hit[0] == self._signature(path):
                value = hit[1]
            else:
                st, data = read_confined(base, rel, strip)
                self._stats[path] = stat_signature(st)  # the descriptor's fstat is this query's stat of the file
                value = parse(data)
                if accept is not None and not accept(value):
                    value = None
                elif time.time() - st.st_mtime > _RACY_SECONDS:
                    cache[key] = (stat_signature(st), value)
        except (OSError, ValueError, RecursionError, PathEscape):
            value = None
        self._values[memo] = value
        return value

    def page_hash(self, page_rel: str) -> str | None:
        """``IntegrityChecker.page_hash`` within this query."""
        vault = self.checker.vault
        return self._read(self.checker._page_hash, page_rel, vault.notes_dir, page_rel, vault.notes_strip,
                          lambda data: self._hashed(page_rel, data))

    def note_signature(self, page_rel: str) -> tuple | None:
        """The stat signature of the note as this query saw it (stat'ed now if it has not been yet)."""
        vault = self.checker.vault
        return self._signature(cached_lexical_path(vault.notes_dir, page_rel, vault.notes_strip))

    def note_bytes(self, page_rel: str) -> bytes | None:
        """The note's bytes if this query read them (their signature is ``note_signature``), else None."""
        return self._notes.get(page_rel)

    def _hashed(self, page_rel: str, data: bytes) -> str:
        self._notes[page_rel] = data
        return bytes_sha256(data)

    def record(self, doc: "DocMeta") -> dict | None:
        """``IntegrityChecker.record`` within this query."""
        if doc.chunk_file.startswith("store/"):
            key = _doc_key(doc) + (doc.size, doc.mtime_ns)
            packed = self.checker._packed
            hit = packed.get(key)
            if hit is None:
                # A published segment never changes and its descriptor stays open: no stat, one check per record.
                hit = self.checker.store().record(doc.chunk_file, doc.size, doc.mtime_ns)
                if hit is None or not IntegrityChecker._matches(doc, hit):
                    return None
                packed[key] = hit
            return hit
        return None

    def current_record(self, doc: "DocMeta") -> dict | None:
        checker = self.checker
        known = checker._current.get(doc)
        if known is not None and self._signature(known[0]) == known[1]:
            return known[2]
        rec = self.record(doc)
        if rec is None or self.page_hash(doc.page_path) != doc.page_body_hash:
            return None
        if not checker.text_of_note(doc, rec["raw_text"], self._notes.get(doc.page_path)):
            return None
        vault = checker.vault
        path = cached_lexical_path(vault.notes_dir, doc.page_path, vault.notes_strip)
        remembered = checker._page_hash.get(doc.page_path)
        if remembered is not None and remembered == (self._stats.get(path), doc.page_body_hash):
            checker._current[doc] = (path, remembered[0], rec)
        return rec
