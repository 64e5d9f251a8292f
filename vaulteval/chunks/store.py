"""Chunk records: what a page's records hold, how notes are read for them, and the report of a ``prefix`` run.

Usage::

    records = build_records(parsed, address, page_hash, ChunkParams())
    data = read_note(page, note_signature(page))

Records have claude-obsidian's chunk schema and live packed in segment files
under ``<meta>/store/`` (``vaulteval.chunks.segments``); ``vaulteval.chunks.packing``
plans and writes them. A catalog (``chunk-catalog.vcc``) remembers each page's
hash, stat signature and record locations, so an unchanged page is skipped
without being read.
"""

from __future__ import annotations

import copy
import errno
import logging
import os
import stat
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from vaulteval.chunks import chunking, obsidian
from vaulteval.chunks.catalog import ChunkParams
from vaulteval.errors import DuplicateAddress
from vaulteval.vault.metadir import NotRegularFile, open_regular
from vaulteval.vault.notefiles import printable

if TYPE_CHECKING:
    from vaulteval.vault.vault import Page, Vault

log = logging.getLogger(__name__)

RECORD_SCHEMA = 1


@dataclass
class PrefixReport:
    pages_seen: int = 0
    pages_changed: int = 0
    pages_skipped: int = 0
    pages_empty: int = 0
    chunks_written: int = 0
    chunks_removed: int = 0
    pages_removed: int = 0
    tier: str = "synthetic"
    prefix_sources: dict[str, int] = field(default_factory=dict)
    peek: bool = False
    changed_pages: list[str] = field(default_factory=list)
    chunks_compacted: int = 0
    # Every record the new catalog names, (location, size, crc, chunk id): what the index build reads.
    chunk_listing: list[tuple[str, int, int, str]] | None = field(default=None, repr=False)
    # Each page's hash as this run saw it (the build's staleness check needs no second read).
    page_hashes: dict[str, str] = field(default_factory=dict, repr=False)
    addresses: dict[str, str] = field(default_factory=dict, repr=False)  # address -> page, as cataloged
    segments: set[str] = field(default_factory=set, repr=False)  # the segments the new catalog names
    page_bytes: dict[str, bytes] = field(default_factory=dict, repr=False)  # the notes this run read
    # The notes this run parsed whole (not cut at the size bound): page -> ParsedPage, for the field index.
    parsed: dict = field(default_factory=dict, repr=False)
    # The records this run appended, by location: (payload length, CRC, record), for the build that follows.
    written: dict[str, tuple[int, int, dict]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        # Not asdict(): it would deep-copy the chunk listing (a tuple per chunk) only to drop it.
        return {f.name: copy.copy(getattr(self, f.name)) for f in fields(self)
                if f.name not in ("chunk_listing", "page_hashes", "addresses", "segments", "page_bytes", "written",
                                 "parsed")}


def note_signature(page: "Page") -> tuple[int, int, int] | None:
    """(size, mtime_ns, inode) of a note, as git compares them; None when it cannot be stat'ed. A note that is
    a symlink (one the walk accepted, inside the notes folder) is described by its target."""
    try:
        st = os.lstat(page.abspath)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(page.abspath)
            return (st.st_size, st.st_mtime_ns, -st.st_ino - 1)  # negative: read through the link
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def read_note(page: "Page", signature: tuple[int, int, int] | None = None) -> bytes | None:
    """A note's bytes, or None (skipped with a warning). A note that was a plain file when it was stat'ed
    (``signature``) is opened without following a symlink and must still be that file (same inode), so one
    swapped for a link or another file meanwhile is skipped, never copied."""
    if signature is None:
        signature = note_signature(page)
    follow = signature is not None and signature[2] < 0
    try:
        with open_regular(page.abspath, follow=follow) as fh:
            if signature is not None and not follow and os.fstat(fh.fileno()).st_ino != signature[2]:
                log.warning("skipping %s: it was replaced while vaulteval was reading the vault", printable(page.rel))
                return None
            return fh.read()
    except NotRegularFile:
        log.warning("skipping %s: not a regular file", printable(page.rel))
    except OSError as exc:  # one unreadable note is skipped, not the vault (doctor lists it)
        if exc.errno == errno.ELOOP:
            log.warning("skipping %s: it became a symlink while vaulteval was reading the vault", printable(page.rel))
        else:
            log.warning("skipping %s: cannot read it: %s", printable(page.rel), exc.strerror or exc)
    return None


def _record_intact(rec: dict) -> bool:
    """A record whose text still agrees with its own hash and prefix (not edited by hand)."""
    raw, text = rec.get("raw_text"), rec.get("contextualized_text")
    return (
        isinstance(raw, str)
        and isinstance(text, str)
        and text.endswith(raw)
        and chunking.sha256_text(raw) == rec.get("body_hash")
    )


def build_records(
    parsed: chunking.ParsedPage,
    address: str,
    page_hash: str,
    params: ChunkParams,
    prefixer=None,
) -> list[dict]:
    """Chunk one parsed page into records of claude-obsidian's chunk schema (prefix from ``prefixer`` or synthetic).

    The text is what Obsidian shows (no %%comments%%, link labels, callout titles);
    the page's tags and aliases follow every prefix so a query can find them.
    """
    body = obsidian.visible_text(parsed.body)
    pieces = chunking.split_chunks(body, params.target, params.overlap, params.hard_max)
    terms = obsidian.page_terms(parsed.frontmatter, body)
    synthetic = chunking.synthetic_prefix(parsed.title, body)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    records = []
    for idx, raw in enumerate(pieces):
        prefix, source = synthetic, "synthetic"
        if prefixer is not None:
            generated, source = prefixer.prefix(parsed.title, body, raw)
            prefix = generated if generated else synthetic
        if terms:
            prefix = f"{prefix} {terms}"
        prefix = prefix[: chunking.MAX_PREFIX_CHARS]
        records.append(
            {
                "schema_version": RECORD_SCHEMA,
                "chunk_id": f"{address}:{idx}",
                "page_path": parsed.rel,
                "page_address": address,
                "chunk_index": idx,
                "raw_text": raw,
                "contextualized_text": chunking.contextualize(prefix, raw),
                "prefix": prefix,
                "prefix_source": source,
                "char_count": len(raw),
                "body_hash": chunking.sha256_text(raw),
                "page_body_hash": page_hash,
                "created_at": now,
            }
        )
    return records


def progress_bar(iterable, total: int | None, desc: str, unit: str = "page"):
    """Usage: ``for x in progress_bar(items, len(items), "index", "chunk")``: provisioning's progress."""
    import sys

    if not (sys.stderr is not None and sys.stderr.isatty()):
        return iterable  # what tqdm's disable=None does off a terminal, without importing it
    from tqdm import tqdm

    # Only runs longer than a couple of seconds show a bar, on stderr, and only on a terminal.
    return tqdm(iterable, total=total, desc=desc, unit=unit, delay=2.0, leave=False, disable=None)


def _duplicate(address: str, first: str, second: str) -> DuplicateAddress:
    return DuplicateAddress(f"address {address} is declared by both {first} and {second}; "
                            "give one of them a unique address (nothing was changed)")
