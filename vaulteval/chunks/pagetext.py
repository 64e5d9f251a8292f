"""A note's text as every reader sees it: decoded, newlines normalised, frontmatter split off (no YAML parse).

Usage::

    text = decode_page(raw_bytes)
    fm_text, body = split_frontmatter(text)      # fm_text is None without frontmatter

Kept apart from the chunker so the retrieve path can read a note without loading it.
"""

from __future__ import annotations

import re


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
