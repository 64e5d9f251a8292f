"""The vault-wide write lock and atomic file publication.

Usage::

    with vault_lock(meta_dir):
        atomic_write_bytes(meta_dir / "bm25" / "index.vti", data)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from vaulteval.errors import VaultBusy

LOCK_NAME = ".lock"


@contextlib.contextmanager
def vault_lock(meta_dir: Path) -> Iterator[None]:
    """Hold the exclusive writer lock; a busy vault fails closed at once."""
    meta_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(meta_dir / LOCK_NAME, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise VaultBusy(
                f"another vaulteval process is writing {meta_dir}; wait for it to finish and retry"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write to a temporary sibling, then rename over ``path`` so readers never see a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
