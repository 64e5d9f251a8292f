"""A note's text as every reader sees it: decoded, newlines normalised, frontmatter split off (no YAML parse).

Usage::

    text = decode_page(raw_bytes)
    fm_text, body = split_frontmatter(text)      # fm_text is None without frontmatter

    part = indexed_part(raw, max_note_bytes())   # what is indexed of an over-long note

Kept apart from the chunker so the retrieve path can read a note without loading it.
"""

from __future__ import annotations

import os
import re

from vaulteval.errors import UsageError

# Notes larger than this are indexed up to it and reported (a pasted log, a dump), never refused.
DEFAULT_MAX_NOTE_BYTES = 8 << 20
MAX_NOTE_BYTES_ENV = "VAULTEVAL_MAX_NOTE_BYTES"


def decode_page(raw: bytes) -> str:
    """Bytes to text with newlines normalised; hashes are always taken of the raw bytes."""
    text = raw.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Usage: ``fm_text, body = split_frontmatter(text)``; fm_text is None without frontmatter."""
    if not text.startswith("---\n"):
        return None, text
    end = re.search(r"^(?:---|\.\.\.)[ \t]*$", text[4:], re.MULTILINE)
    if end is None:
        return None, text
    fm_text = text[4 : 4 + end.start()]
    body = text[4 + end.end() :]
    return fm_text, body.lstrip("\n")


def max_note_bytes() -> int:
    """The size bound for indexing one note: ``VAULTEVAL_MAX_NOTE_BYTES`` or 8 MiB (docs/cli.md, provision)."""
    value = os.environ.get(MAX_NOTE_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_NOTE_BYTES
    if not value.isdigit() or int(value) < 1024:
        raise UsageError(f"{MAX_NOTE_BYTES_ENV}={value!r} must be a whole number of bytes, at least 1024")
    return int(value)


def indexed_part(raw: bytes, limit: int) -> bytes:
    """The first ``limit`` bytes of an over-long note, cut at a character boundary (the whole note otherwise)."""
    if len(raw) <= limit:
        return raw
    cut = limit
    while cut > limit - 3 and raw[cut] & 0xC0 == 0x80:  # never split a UTF-8 sequence
        cut -= 1
    return raw[:cut]
