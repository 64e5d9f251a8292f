"""Notes that cannot be named, opened or read: found once, skipped, and shown safely.

Usage::

    printable("bad\\udcffname.md")           # -> 'bad\\\\xffname.md' (safe on any terminal)
    raw = read_note_file(page.abspath)        # OSError / NotRegularFile, never a hang on a FIFO
    problems = unreadable_notes(vault)        # [("wiki/x.md", "not a regular file"), ...]

A file name that is not valid UTF-8 reaches Python as text with surrogate
escapes; it cannot be written to the index or printed, so the note is skipped
(``Vault.iter_pages`` leaves it out and names it in ``Vault.skipped_names``).
Every read of a note opens it non-blocking and checks ``fstat`` first, so a FIFO
or device named ``*.md`` is refused instead of blocking the command.
"""

from __future__ import annotations

import os
import re
from vaulteval.vault.metadir import NotRegularFile, open_regular

BAD_NAME = "its file name is not valid UTF-8; rename it"
# C0/C1 controls, DEL, bidi overrides and isolates, and surrogates (undecodable bytes).
_UNSAFE = "[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"  # compiled on first use


def printable(name: str) -> str:
    """``name`` with control characters and undecodable bytes written as escapes (``\\x1b``, ``\\xff``)."""
    return re.sub(_UNSAFE, _escape, name)


def _escape(match: re.Match) -> str:
    ch = match.group(0)
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def name_is_text(rel: str) -> bool:
    """False when ``rel`` holds bytes that are not UTF-8 (it could not be stored or printed)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_note_file(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """A note's bytes (at most ``limit`` + 1 when given); OSError or NotRegularFile for anything but a file."""
    with open_regular(path, follow=True) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def read_problem(path: str | os.PathLike[str]) -> str | None:
    """Why a note cannot be opened for reading, or None when it can."""
    try:
        with open_regular(path, follow=True):
            return None
    except NotRegularFile:
        return "not a regular file"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def unreadable_notes(vault: object) -> list[tuple[str, str]]:
    """(printable vault path, reason) for every note of a ``Vault`` that is skipped: bad names, special files,
    no permission (typed ``object``: vault.py imports this module)."""
    pages = list(vault.iter_pages())  # type: ignore[attr-defined]
    found = [(printable(rel), BAD_NAME) for rel in vault.skipped_names]  # type: ignore[attr-defined]
    for page in pages:
        problem = read_problem(page.abspath)
        if problem is not None:
            found.append((printable(page.rel), problem))
    return sorted(found)
