"""Is an indexed chunk still current? Checked against the chunk file and the page bytes.

Usage: ``record = checker.current_record(doc)``; None means stale and must not be served.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import TYPE_CHECKING

from .errors import PathEscape
from .paths import cached_lexical_path, open_confined

if TYPE_CHECKING:
    from .index import DocMeta
    from .vault import Vault

# Racy-file rule (as git uses): a file modified this recently may change again
# within the same timestamp tick, so its verdict is not cached.
_RACY_SECONDS = 2.0


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _cached_verdict(cache: dict, name: str, path: str):
    """A remembered verdict when the file at ``path`` is still the very file it was given for.

    Same device, inode, size, mtime and ctime means the bytes already checked
    (and found inside the vault) are the bytes there now, so no open is needed.
    """
    hit = cache.get(name)
    if hit is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return hit[1] if hit[0] == _stat_key(st) else None


class IntegrityChecker:
    """Verifies chunks against their records and pages; remembers verdicts per unchanged file."""

    def __init__(self, vault: "Vault"):
        self.vault = vault
        self._page_hash: dict[str, tuple[tuple, str]] = {}
        self._records: dict[str, tuple[tuple, dict]] = {}

    def _cacheable(self, st: os.stat_result) -> bool:
        return time.time() - st.st_mtime > _RACY_SECONDS

    def page_hash(self, page_rel: str) -> str | None:
        try:
            hit = _cached_verdict(self._page_hash, page_rel, cached_lexical_path(self.vault.wiki_dir, page_rel, "wiki"))
            if hit is not None:
                return hit
            with open_confined(self.vault.wiki_dir, page_rel, strip="wiki") as fh:
                st = os.fstat(fh.fileno())
                key = _stat_key(st)
                hit = self._page_hash.get(page_rel)
                if hit is not None and hit[0] == key:
                    return hit[1]
                digest = "sha256:" + hashlib.sha256(fh.read()).hexdigest()
        except (OSError, PathEscape):
            return None
        if self._cacheable(st):
            self._page_hash[page_rel] = (key, digest)
        return digest

    def record(self, doc: "DocMeta") -> dict | None:
        """The chunk record on disk if it is the one the index was built from, else None."""
        try:
            if not doc.chunk_file.startswith("chunks/"):
                return None
            hit = _cached_verdict(self._records, doc.chunk_file,
                                  cached_lexical_path(self.vault.meta_dir, doc.chunk_file, None))
            if hit is not None:
                return hit
            with open_confined(self.vault.meta_dir, doc.chunk_file) as fh:
                st = os.fstat(fh.fileno())
                key = _stat_key(st)
                hit = self._records.get(doc.chunk_file)
                if hit is not None and hit[0] == key:
                    return hit[1]
                rec = json.loads(fh.read())
        except (OSError, ValueError, PathEscape):
            return None
        if not self._matches(doc, rec):
            return None
        if self._cacheable(st):
            self._records[doc.chunk_file] = (key, rec)
        return rec

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
        return (
            rec.get("chunk_index") == doc.chunk_index
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
        return rec
