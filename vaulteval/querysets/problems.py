"""What a broken query set reports: problems located by file and line, and file checksums.

Usage: ``raise QuerySetInvalid([Problem("q.yaml", 3, "query q1 has no text")])``
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple

from vaulteval.errors import UsageError

QUERY_FIELDS = ("id", "query", "relevant", "tags", "kind", "variant", "split", "source", "status", "judged",
                "overlap", "overlap_band", "bm25_rank", "writer", "note_hash", "flags")
OVERLAP_BANDS = ("low", "mid", "high")
SPLITS = ("tune", "test")
MAX_MESSAGE_CHARS = 500  # a message quoting a value from the file stays one readable line


class Problem(NamedTuple):
    """One validation problem, located in a file."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        message = self.message if len(self.message) <= MAX_MESSAGE_CHARS else self.message[:MAX_MESSAGE_CHARS] + "…"
        return f"{self.path}:{self.line}: {message}"


class QuerySetInvalid(UsageError):
    """The query set has problems; each names its file and line."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        more = f" (and {len(problems) - 1} more; see: vaulteval queryset check)" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}")


# A query set larger than this is refused before it is parsed: cost stays proportionate to what a set can hold.
MAX_QUERYSET_BYTES = 64 << 20


def read_set_file(path: Path) -> bytes:
    """The bytes of one file of a query set (regular, at most ``MAX_QUERYSET_BYTES``), else a problem at line 1."""
    from vaulteval.vault.metadir import read_capped

    try:
        return read_capped(path, MAX_QUERYSET_BYTES)
    except OSError as exc:
        raise QuerySetInvalid([Problem(str(path), 1, f"cannot read: {exc.strerror or exc}; "
                                                     "name a query-set file")]) from None


def set_text(path: Path, data: bytes) -> str:
    """``data`` of ``path`` as text; non-UTF-8 bytes are a problem at their line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise QuerySetInvalid([Problem(str(path), line, "not UTF-8 text; save the file as UTF-8")]) from None


def file_sha256(*files: tuple[Path, bytes]) -> str:
    """sha256 of one file's bytes, or of several (name-separated) for multi-file formats: ``(path, bytes)`` each."""
    h = hashlib.sha256()
    for path, data in files:
        if len(files) > 1:
            h.update(path.name.encode() + b"\0")
        h.update(data)
    return "sha256:" + h.hexdigest()
