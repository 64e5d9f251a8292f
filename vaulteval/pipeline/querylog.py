"""A log of real questions, kept only when the user names a file: ``retrieve --log FILE``.

Usage::

    log = QueryLog("~/vaulteval-questions.jsonl", vault)   # UsageError inside the vault or its .vault-meta
    log.append(result)                                      # one JSON line: time, vault, query, strategy, paths

Each line is ``{"time", "vault", "query", "strategy", "paths"}``; ``paths``
are the returned pages in rank order; ``query`` is as received, a byte that
was not UTF-8 written as ``\\xff`` text. Nothing is written without ``--log``,
and never into the vault (notes stay read-only; derived state belongs to
provisioning). The file is opened for appending without following a
symlink as its last component, so a line goes where the user said, or
nowhere. ``vaulteval queryset from-log FILE`` turns it into a pool to judge.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.vault.paths import home_path

if TYPE_CHECKING:
    from vaulteval.pipeline.retrieve import RetrievalResult
    from vaulteval.vault.vault import Vault


def escaped(text: str) -> str:
    """``text`` as received, each lone surrogate written as an escape: ``\\xff`` for a byte that was not UTF-8
    (Python reads it as a surrogate escape), ``\\ud800`` for any other; such text cannot be encoded as is."""
    if text.isascii():
        return text
    import re

    return re.sub("[\ud800-\udfff]", _escape, text)


def _escape(match: "re.Match") -> str:
    code = ord(match.group(0))
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


class QueryLog:
    """Where ``retrieve --log`` appends; checked when made, so a refused path costs no retrieval."""

    def __init__(self, path: str | os.PathLike[str], vault: "Vault"):
        from vaulteval.vault.paths import is_inside

        self.path = home_path(path)
        self.vault = vault
        for base in (vault.root, vault.meta_dir):
            if is_inside(base, self.path) or is_inside(base, self.path.parent):
                raise UsageError(f"--log {path} is inside the vault ({base}); name a file outside it")
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise UsageError(f"--log {path}: cannot check it ({exc.strerror or exc})") from None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UsageError(f"--log {path} is not a regular file; name a new or existing log file")
        if not self.path.parent.is_dir():
            raise UsageError(f"--log {path}: folder {self.path.parent} does not exist; create it first")

    def append(self, result: "RetrievalResult") -> None:
        """Append one line for ``result`` (a single write, so concurrent retrieves do not interleave lines)."""
        from datetime import datetime, timezone

        # A note or vault name can hold a byte that is not UTF-8 as well as the query: every text is escaped.
        record = {"time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "vault": escaped(str(self.vault.root)), "query": escaped(result.query),
                  "strategy": escaped(result.strategy), "paths": [escaped(c.page_path) for c in result.candidates]}
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise UsageError(f"--log {self.path}: cannot append to it ({exc.strerror or exc})") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UsageError(f"--log {self.path} is not a regular file; name a new or existing log file")
            os.write(fd, line)
        except OSError as exc:  # a full disk or a failing device: the same one line as a log that cannot open
            raise UsageError(f"--log {self.path}: cannot append to it ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
