"""What a broken query set reports: problems located by file and line, and file checksums.

Usage: ``raise QuerySetInvalid([Problem("q.yaml", 3, "query q1 has no text")])``
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple

from vaulteval.errors import UsageError

QUERY_FIELDS = ("id", "query", "relevant", "tags", "kind", "variant", "split", "source", "status", "judged",
                "overlap", "overlap_band", "bm25_rank")
OVERLAP_BANDS = ("low", "mid", "high")
SPLITS = ("tune", "test")


class Problem(NamedTuple):
    """One validation problem, located in a file."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class QuerySetInvalid(UsageError):
    """The query set has problems; each names its file and line."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        more = f" (and {len(problems) - 1} more; see: vaulteval queryset check)" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}")


def file_sha256(*paths: Path) -> str:
    """sha256 of the bytes of one file, or of several (name-separated) for multi-file formats."""
    h = hashlib.sha256()
    for p in paths:
        if len(paths) > 1:
            h.update(p.name.encode() + b"\0")
        h.update(p.read_bytes())
    return "sha256:" + h.hexdigest()
