"""The CLI's rules for opening a vault, applied to the server's vault before every call.

Usage::

    opening = Opening(vault)
    fresh = opening.check()     # None while nothing changed; the vault as the CLI opens it now; or its error

Opening a vault chooses its notes folder (``--notes-dir``, the folder
provision recorded, ``.vaulteval.json``, ``wiki/``, ``.obsidian/``) and reads
Obsidian's excluded files (``.obsidian/app.json``, failing closed). The CLI
does this for every command; a server did it once, at start-up, and these
files can change while it runs. So before each call one stat of each path
opening reads (``Vault.open_inputs``) is compared with the last one; when one
differs the vault is opened again with the same selection. A new exclusion
then holds from the next call on, and settings the CLI would refuse refuse
every call with the CLI's message and exit code until they are fixed. A path
modified within the last 2 seconds may change again within one timestamp tick
without changing its stat, so it is read again on every call until it settles.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from typing import TYPE_CHECKING

from vaulteval.errors import VaultevalError

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

_RACY_SECONDS = 2.0


def _stat(path: str) -> tuple:
    """What a change to ``path`` changes: the entry, and for a symlink the file it leads to too (one ``lstat``
    for a file, a folder or nothing there; a second ``stat`` only for a link)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return ("missing", exc.errno)
    own = (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if not stat.S_ISLNK(st.st_mode):
        return own
    try:
        st = os.stat(path)
    except OSError as exc:
        return ("link", own, exc.errno)
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, own)


def _racy(signature: tuple[tuple, ...]) -> bool:
    recent = (time.time() - _RACY_SECONDS) * 1e9
    return any(len(sig) >= 6 and sig[4] >= recent for sig in signature)


class Opening:
    """The stat signature of what opening the vault read, and the error opening it again gave (thread-safe)."""

    def __init__(self, vault: "Vault"):
        self.vault = vault
        self._inputs = vault.open_inputs()
        self._signature = tuple(_stat(p) for p in self._inputs)
        self._settled = not _racy(self._signature)
        self._error: VaultevalError | None = None
        self._lock = threading.Lock()

    def check(self) -> "Vault | None":
        """None when the vault would open as before; else the vault opened again now (callers swap it in).
        Raises the error opening it gives, as the CLI would end with it."""
        now = tuple(_stat(p) for p in self._inputs)
        if now == self._signature and self._settled:
            if self._error is not None:
                raise self._error.with_traceback(None)
            return None
        with self._lock:
            if now == self._signature and self._settled:  # another call opened it again meanwhile
                if self._error is not None:
                    raise self._error.with_traceback(None)
                return None
            try:
                fresh = self.vault.reopen()
            except VaultevalError as exc:
                self._error = exc
                raise exc.with_traceback(None) from None
            finally:
                self._signature, self._settled = now, not _racy(now)
            self._error = None
            self.vault = fresh
            if fresh.open_inputs() != self._inputs:  # another notes folder: stat it before it is read again
                self._inputs, self._settled = fresh.open_inputs(), False
            return fresh
