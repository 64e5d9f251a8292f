"""Atomic replacement of one file: a reader sees the old file or the new one, never a part.

Usage::

    write_atomic(path, data)                                  # bytes to a temporary sibling, renamed over path
    write_atomic("index.vti", data, dir_fd=fd, durable=True)  # relative to an open directory, fsynced
    with temp_sibling(path) as tmp:                           # anything that writes a file by name (sqlite)
        build(tmp)
    write_output(out, text)                                   # a file the user named: OSError is one UsageError

The temporary file is a hidden sibling in the same directory (so the rename
stays on one file system), created without following a symlink, and removed
when anything fails before the rename.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@contextmanager
def temp_sibling(name: str | os.PathLike[str], *, dir_fd: int | None = None,
                 before_publish: Callable[[], None] | None = None) -> Iterator[str]:
    """Yield a temporary name beside ``name``; on a clean exit rename it over ``name``, else remove it.

    ``before_publish`` runs just before the rename; if it raises, the temporary file is removed instead.
    """
    head, tail = os.path.split(os.fspath(name))
    tmp = os.path.join(head, f".{tail}.{os.getpid()}.tmp")
    try:
        yield tmp
        if before_publish is not None:
            before_publish()
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise


def write_atomic(name: str | os.PathLike[str], data: bytes, *, dir_fd: int | None = None,
                 durable: bool = False, before_publish: Callable[[], None] | None = None) -> None:
    """Write ``data`` to a temporary sibling and rename it over ``name``.

    ``dir_fd``: ``name`` is relative to that open directory. ``durable``: the file and then the directory are
    fsynced, so the new content survives a power cut once this returns. ``before_publish``: a last check
    before the rename (as ``temp_sibling``).
    """
    with temp_sibling(name, dir_fd=dir_fd, before_publish=before_publish) as tmp:
        fd = os.open(tmp, _FLAGS, 0o644, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    if durable:
        _fsync_dir(os.path.dirname(os.fspath(name)), dir_fd)


def _fsync_dir(head: str, dir_fd: int | None) -> None:
    if dir_fd is not None and not head:
        os.fsync(dir_fd)
        return
    fd = os.open(head or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), dir_fd=dir_fd)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_output(out: str | os.PathLike[str], text: str) -> None:
    """Write a file the user named (an ``--out``) atomically, creating its folder; through a symlink to its target.

    A path that cannot take it (a folder, no permission, a full disk) is a UsageError, one line, not a crash.
    """
    from vaulteval.errors import UsageError

    target = os.path.realpath(out)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        write_atomic(target, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write {os.fspath(out)}: {exc.strerror or exc}; name a file in a folder you can "
                         "write") from None
