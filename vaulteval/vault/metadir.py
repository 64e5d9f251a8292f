"""Derived state through directory descriptors: no symlink at any level, no special files.

Usage::

    with MetaDir.open(vault, create=True) as meta:      # .vault-meta, opened from the vault root
        meta.check_tree()                                # refuse symlinked folders before any change
        with meta.sub("bm25", create=True) as bm25:
            bm25.write_bytes("index.vti", data, durable=True)

Every folder is opened relative to its parent's descriptor with
``O_NOFOLLOW | O_DIRECTORY``, one level at a time, so a symlink planted at
``.vault-meta``, ``store`` or ``bm25`` cannot send a
write, rename or delete anywhere else: it is refused with exit 2 before
anything changes. Files are opened with ``O_NOFOLLOW | O_NONBLOCK`` and only
regular files are read, so a FIFO can neither hang nor be followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.errors import UnsafeMetaPath
from vaulteval.vault.atomic import write_atomic

META_NAME = ".vault-meta"  # the folder vaulteval shares with claude-obsidian (and other tools)
OWN_NAME = "vaulteval"  # vaulteval's namespace inside it: every file vaulteval writes lives below
META_REL = f"{META_NAME}/{OWN_NAME}"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
# Folders and files of derived state (relative to vaulteval's namespace) that must never be symlinks
# (checked before any change).
KNOWN_DIRS = ("bm25", "store")
KNOWN_FILES = (".lock", "chunk-catalog.vcc", "embeddings.sqlite", "embeddings.sqlite-wal", "embeddings.sqlite-shm",
               "bm25/index.vti")


class NotRegularFile(OSError):
    """A derived file or page is a FIFO, device, socket, folder or symlink, not a regular file."""


def _unsafe(where: str) -> UnsafeMetaPath:
    return UnsafeMetaPath(f"{where} is a symlink or not a real folder; derived state must stay inside the vault: "
                          "remove it and run provision (nothing was changed)")


def open_dir(parent_fd: int, name: str, where: str, *, create: bool = False) -> int:
    """One level down without following a symlink; ``create`` makes the folder when it is missing."""
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise _unsafe(where) from None
        raise


def read_regular(path_or_name: str | os.PathLike[str], *, dir_fd: int | None = None) -> bytes:
    """The bytes of a regular file (no FIFO, device or symlink); raises OSError/NotRegularFile otherwise."""
    fd = os.open(path_or_name, _READ_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path_or_name))
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    finally:
        os.close(fd)


def read_flags(*, follow: bool = False) -> int:
    """The flags every read of derived state or notes opens with (``follow``: a symlink as the last component)."""
    return _READ_FLAGS & ~os.O_NOFOLLOW if follow else _READ_FLAGS


def open_regular(path_or_name: str | os.PathLike[str], *, dir_fd: int | None = None, follow: bool = False):
    """A binary file object on a regular file (``follow`` allows a symlink as the last component)."""
    fd = os.open(path_or_name, read_flags(follow=follow), dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path_or_name))
        # Blocking again: a regular file never blocks, and later reads must not see EAGAIN.
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class TooLarge(OSError):
    """A file a user named is larger than the bound its reader sets."""


def read_capped(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a file a user names (a query set, pool, worksheet, manifest, log): a regular file (a symlink
    to one is followed) of at most ``limit`` bytes. Never blocks on a FIFO. Raises OSError, whose ``strerror``
    says what was wrong in a few words: "not a regular file", "larger than N MiB", or the system's reason."""
    with open_regular(path, follow=True) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"larger than {_size_text(limit)}", str(path))
    return data


def _size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


class MetaDir:
    """One opened folder of derived state; every operation is relative to its descriptor."""

    def __init__(self, fd: int, path: Path):
        self.fd = fd
        self.path = path
        # Called before every change (write, rename, delete): raises when the vault was replaced meanwhile.
        self.guard: Callable[[], None] | None = None

    @classmethod
    def open(cls, vault: Any, *, create: bool = False) -> "MetaDir":
        """The vault's meta folder, walked from the vault root (or from its own parent when external).

        Raises ``UnsafeMetaPath`` (exit 2) on a symlink, ``FileNotFoundError`` when
        it is missing and ``create`` is false.
        """
        meta = Path(vault.meta_dir)
        root = Path(vault.root)
        try:
            parts = meta.relative_to(root).parts
            anchor = root
        except ValueError:
            # An evaluation cache outside the vault: its location is the user's choice.
            anchor, parts = meta.parent, (meta.name,)
            if create:
                anchor.mkdir(parents=True, exist_ok=True)
        fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        where = anchor
        try:
            for part in parts:
                where = where / part
                nxt = open_dir(fd, part, str(where), create=create)
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, meta)

    def sub(self, name: str, *, create: bool = False) -> "MetaDir":
        """A child folder (``a/b`` walks two levels), never through a symlink."""
        fd, path, opened = self.fd, self.path, []
        try:
            for part in name.split("/"):
                path = path / part
                fd = open_dir(fd, part, str(path), create=create)
                opened.append(fd)
        except BaseException:
            for f in opened:
                os.close(f)
            raise
        for f in opened[:-1]:
            os.close(f)
        child = MetaDir(fd, path)
        child.guard = self.guard
        return child

    def _check(self) -> None:
        if self.guard is not None:
            self.guard()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "MetaDir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inspection -----------------------------------------------------------
    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return self.lstat(name) is not None

    def is_dir(self, name: str) -> bool:
        st = self.lstat(name)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def scandir(self) -> Iterator[os.DirEntry]:
        with os.scandir(self.fd) as it:
            yield from it

    def check_tree(self) -> None:
        """Refuse (exit 2) a symlink or non-folder where derived state keeps folders or files.

        Runs before provisioning changes anything, so a planted link stops the run
        while the vault and the link's target are still untouched.
        """
        for name in KNOWN_DIRS:
            st = self.lstat(name)
            if st is not None and not stat.S_ISDIR(st.st_mode):
                raise _unsafe(str(self.path / name))
        for name in KNOWN_FILES:
            parent, _, leaf = name.rpartition("/")
            if parent and not self.is_dir(parent):
                continue
            st = self.lstat(name)
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise UnsafeMetaPath(f"{self.path / name} is not a regular file (a symlink, FIFO or folder?); "
                                     "remove it and run provision (nothing was changed)")
        if self.is_dir("store"):
            with self.sub("store") as folder:
                for entry in folder.scandir():
                    # Segments are opened without following links; links are refused.
                    if entry.is_symlink():
                        raise _unsafe(str(folder.path / entry.name))

    # -- reading --------------------------------------------------------------
    def read_bytes(self, name: str) -> bytes:
        return read_regular(name, dir_fd=self.fd)

    def open_read(self, name: str):
        return open_regular(name, dir_fd=self.fd)

    # -- writing --------------------------------------------------------------
    def write_bytes(self, name: str, data: bytes, *, durable: bool = False, staged: str | None = None) -> None:
        """Write a temporary sibling, then rename it over ``name``: readers never see a partial file.
        ``staged``: a test pause point between the two (``vaulteval.vault.testhooks``)."""
        self._check()

        def before_publish() -> None:
            if staged is not None:
                from vaulteval.vault.testhooks import pause_point

                pause_point(staged)
            self._check()  # the publishing rename, too, goes only into the vault the run started in

        write_atomic(name, data, dir_fd=self.fd, durable=durable, before_publish=before_publish)

    def replace(self, src: str, dst: str) -> None:
        self._check()
        os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink(self, name: str) -> bool:
        """Remove a file (a symlink itself, never its target); False when it was not there."""
        self._check()
        try:
            os.unlink(name, dir_fd=self.fd)
            return True
        except FileNotFoundError:
            return False

    def fd_path(self, name: str = "") -> str:
        """A path through this descriptor (``/proc/self/fd/N/name``) for libraries that take only paths."""
        base = f"/proc/self/fd/{self.fd}"
        return f"{base}/{name}" if name else base
