"""Is an indexed chunk still current? Checked against its chunk record, the page bytes and the page text.

Usage: ``record = checker.current_record(doc)``; None means stale and must not be served.

Records are read through ``vaulteval.chunks.segments.StoreReader.record`` (the packed
store; ``store/<segment>@<offset>``), or as one JSON file each (``chunks/...``) for an
index built before the packed store.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

from vaulteval.errors import PathEscape
from vaulteval.vault.paths import cached_lexical_path, read_confined

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
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


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _cached_verdict(cache: dict, name: str, base, strip: str | None):
    """A remembered verdict when the file ``name`` (under ``base``) is still the very file it was given for.

    Same device, inode, size, mtime and ctime means the bytes already checked
    (and found inside the vault) are the bytes there now, so no open is needed.
    """
    hit = cache.get(name)
    if hit is None:
        return None
    try:
        st = os.stat(cached_lexical_path(base, name, strip))
    except OSError:
        return None
    return hit[1] if hit[0] == _stat_key(st) else None


class IntegrityChecker:
    """Verifies chunks against their records and pages; remembers verdicts per unchanged file."""

    def __init__(self, vault: "Vault"):
        self.vault = vault
        self._page_hash: dict[str, tuple[tuple, str]] = {}
        self._records: dict[str, tuple[tuple, dict]] = {}
        self._packed: dict[str, dict] = {}
        self._derived: dict[tuple[str, str], bool] = {}
        self._last_page: tuple[str, str, bytes] | None = None
        self._store = None

    def store(self):
        """The packed store's reader (segments opened once and kept: the generation this checker reads)."""
        if self._store is None:
            from vaulteval.chunks.segments import StoreReader

            self._store = StoreReader(self.vault.meta_dir)
        return self._store

    def _cacheable(self, st: os.stat_result) -> bool:
        return time.time() - st.st_mtime > _RACY_SECONDS

    def _read(self, cache: dict, base, rel: str, strip: str | None, parse, accept=None):
        """Parse a confined file, or reuse the value remembered for this very file (same stat)."""
        try:
            hit = _cached_verdict(cache, rel, base, strip)
            if hit is not None:
                return hit
            st, data = read_confined(base, rel, strip)
            value = parse(data)
        except (OSError, ValueError, RecursionError, PathEscape):
            return None
        if accept is not None and not accept(value):
            return None
        if self._cacheable(st):
            cache[rel] = (_stat_key(st), value)
        return value

    def page_hash(self, page_rel: str) -> str | None:
        """``sha256:<hex>`` of the page's exact bytes, or None when it is missing or outside the notes folder."""
        return self._read(self._page_hash, self.vault.notes_dir, page_rel, self.vault.notes_strip,
                          lambda data: self._hashed(page_rel, data))

    def _hashed(self, page_rel: str, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self._last_page = (page_rel, digest, data)  # the text check that follows needs no second read
        return digest

    def record(self, doc: "DocMeta") -> dict | None:
        """The chunk record on disk if it is the one the index was built from, else None."""
        if doc.chunk_file.startswith("store/"):
            hit = self._packed.get(doc.chunk_file)
            if hit is None:
                # A published segment never changes and its descriptor stays open: one check per record.
                hit = self.store().record(doc.chunk_file, doc.size, doc.mtime_ns)
                if hit is None or not self._matches(doc, hit):
                    return None
                self._packed[doc.chunk_file] = hit
            return hit
        if not doc.chunk_file.startswith("chunks/"):
            return None
        return self._read(self._records, self.vault.meta_dir, doc.chunk_file, None, json.loads,
                          lambda rec: self._matches(doc, rec))

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
            and "sha256:" + hashlib.sha256(raw.encode("utf-8")).hexdigest() == doc.body_hash
            and "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest() == doc.context_hash
        )

    def current_record(self, doc: "DocMeta") -> dict | None:
        rec = self.record(doc)
        if rec is None or self.page_hash(doc.page_path) != doc.page_body_hash:
            return None
        return rec if self.text_of_note(doc, rec["raw_text"]) else None

    def text_of_note(self, doc: "DocMeta", raw: str) -> bool:
        """True when ``raw`` is text of the note as it is now (the page the index names, with its hash).

        A record forged with right checksums cannot serve words the note does not hold
        (``vaulteval.chunks.derived``).
        """
        key = (doc.page_body_hash, doc.body_hash)
        verdict = self._derived.get(key)
        if verdict is None:
            last = self._last_page
            if last is not None and last[0] == doc.page_path and last[1] == doc.page_body_hash:
                data = last[2]
            else:
                try:
                    data = read_confined(self.vault.notes_dir, doc.page_path, self.vault.notes_strip)[1]
                except (OSError, PathEscape):
                    return False
                if "sha256:" + hashlib.sha256(data).hexdigest() != doc.page_body_hash:
                    return False
            from vaulteval.chunks.derived import chunk_in_note

            verdict = self._derived[key] = chunk_in_note(raw, data)
        return verdict
