"""The vault-wide write locks (claude-obsidian's and vaulteval's own), taken through pinned descriptors.

Usage::

    with vault_lock(vault) as meta:                # meta: a MetaDir, symlink-checked
        with meta.sub("bm25", create=True) as bm25:
            bm25.write_bytes("index.vti", data, durable=True)
    with wait_lock(cache / "variant.build-lock", timeout=600):   # queue behind another builder
        ...
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vaulteval.errors import UnsafeMetaPath, VaultBusy
from vaulteval.vault.metadir import OWN_NAME, MetaDir
from vaulteval.vault.sharedlock import lock_wait, replaced, same_object, shared_lock
from vaulteval.vault.testhooks import pause_point

LOCK_NAME = ".lock"


@contextlib.contextmanager
def vault_lock(vault: Any) -> Iterator[MetaDir]:
    """Hold every writer lock on the vault; a busy vault fails closed (exit 11).

    Inside a vault that is claude-obsidian's lock first (a flock on the vault
    root, then ``.vault-meta/mutation.lock``; waited for up to
    ``VAULTEVAL_LOCK_WAIT`` seconds), then vaulteval's own ``.lock`` in its
    namespace, which never waits. vaulteval's folder is opened from the pinned
    root one level at a time and checked for planted symlinks before the
    caller may change anything. An evaluation cache outside the vault takes
    only its own lock: it writes nothing in the vault.
    """
    if vault.meta_is_external:
        with MetaDir.open(vault, create=True) as meta, _own_lock(meta):
            yield meta
        return
    with shared_lock(vault.root, wait=lock_wait()) as held:
        with held.meta.sub(OWN_NAME, create=True) as meta:
            def guard() -> None:
                held.check_root()
                if not same_object(OWN_NAME, held.meta.fd, meta.fd):
                    raise replaced(vault.root)

            meta.guard = guard
            with _own_lock(meta):
                yield meta


@contextlib.contextmanager
def _own_lock(meta: MetaDir) -> Iterator[None]:
    try:
        fd = os.open(LOCK_NAME, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644,
                     dir_fd=meta.fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a symlink, or a FIFO without a reader
            raise UnsafeMetaPath(f"{meta.path / LOCK_NAME} is a symlink or special file; remove it") from None
        raise
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise VaultBusy(
                f"another vaulteval process is writing {meta.path}; wait for it to finish and retry"
            ) from None
        try:
            meta.check_tree()
            pause_point("locked")
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def wait_lock(path: Path, timeout: float, poll: float = 0.2) -> Iterator[None]:
    """Hold an exclusive lock on ``path``, waiting up to ``timeout`` seconds for another holder.

    Used where a second process should queue rather than fail: two evaluation
    workers about to build the same index variant in a shared cache.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise VaultBusy(f"{path} stayed locked for {timeout:.0f} s; another build may be stuck") from None
                time.sleep(poll)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
