"""Path confinement: every read or write stays inside the area it belongs to.

Usage::

    page = confine(vault.notes_dir, "wiki/howto/Descaling.md", strip="wiki")
    with open_confined(vault.notes_dir, "wiki/howto/Descaling.md", strip=vault.notes_strip) as fh: ...
"""

from __future__ import annotations

import errno
import os
import stat
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import BinaryIO

from vaulteval.errors import PathEscape
from vaulteval.vault.metadir import NotRegularFile, read_flags

_PROC_FD = "/proc/self/fd"
_HAVE_PROC = os.path.isdir(_PROC_FD)
_FOLLOW_READ_FLAGS = read_flags(follow=True)


@lru_cache(maxsize=64)
def _real_base(base: str) -> str:
    return os.path.realpath(base)


def _under(real: str, real_base: str) -> bool:
    return real == real_base or real.startswith(real_base + os.sep)


def _plain(rel: object) -> bool:
    """Relative, "/"-separated, no empty component and none starting with "." (so no "." or ".."), no NUL."""
    return (isinstance(rel, str) and rel != "" and rel[0] not in "/." and not rel.endswith("/")
            and "//" not in rel and "/." not in rel and "\\" not in rel and "\x00" not in rel
            and (len(rel) < 2 or rel[1] != ":"))


def lexical_path(base: Path | str, relative: str, *, strip: str | None = None) -> str:
    """Join ``relative`` to ``base`` after refusing absolute paths and ``..`` (no filesystem access)."""
    if _plain(relative):  # the shape every index path has: the same answer as the general rules below
        if not strip:
            return os.path.join(str(base), relative)
        if relative.startswith(strip + "/") and len(relative) > len(strip) + 1:
            return os.path.join(str(base), relative[len(strip) + 1:])
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise PathEscape(f"empty or invalid path {relative!r}")
    rel = relative.replace("\\", "/")
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise PathEscape(f"absolute path {relative!r} is not allowed; paths must be vault-relative")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathEscape(f"path {relative!r} contains '..'; paths must stay inside the vault")
    if strip:
        lead = strip.split("/")
        if parts[: len(lead)] != lead:
            raise PathEscape(f"path {relative!r} must start with {strip}/")
        parts = parts[len(lead):]
    if not parts:
        raise PathEscape(f"path {relative!r} names no file")
    return os.path.join(str(base), *parts)


def home_path(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; a user with no home is left as written (pathlib's
    ``expanduser`` raises RuntimeError there, which would crash on a typo or a query set's ``vault: ~0``)."""
    return Path(os.path.expanduser(os.fspath(path)))


@lru_cache(maxsize=1 << 16)
def _lexical_cached(base: str, relative: str, strip: str | None) -> str:
    return lexical_path(base, relative, strip=strip)


def cached_lexical_path(base: Path | str, relative: str, strip: str | None) -> str:
    """``lexical_path`` memoised: the hot path joins the same few thousand index paths again and again."""
    return _lexical_cached(str(base), relative, strip)


def confine(base: Path, relative: str, *, strip: str | None = None) -> Path:
    """Resolve ``relative`` under ``base``, refusing absolute paths, ``..`` and symlink escapes.

    ``strip`` drops leading components (``wiki/x.md`` relative to the ``wiki`` dir); None or "" drops none.
    """
    candidate = lexical_path(base, relative, strip=strip)
    if not _under(os.path.realpath(candidate), _real_base(str(base))):
        raise PathEscape(f"path {relative!r} resolves outside {base.name}/ (symlink escape)")
    return Path(candidate)


def open_confined(base: Path, relative: str, *, strip: str | None = None) -> BinaryIO:
    """Open a file for reading only if the file actually opened lies under ``base``.

    Checking the opened descriptor (not the name) is both cheaper than resolving
    every component and immune to a symlink swapped in between check and open.
    A FIFO, device or socket raises ``NotRegularFile`` (an OSError) without blocking.
    """
    from vaulteval.vault.metadir import open_regular

    candidate = cached_lexical_path(base, relative, strip)
    # Non-blocking and regular files only: a FIFO planted as a page or chunk file cannot hang a reader.
    fh = open_regular(candidate, follow=True)
    try:
        real = os.readlink(f"{_PROC_FD}/{fh.fileno()}") if _HAVE_PROC else os.path.realpath(candidate)
        if not _under(real, _real_base(str(base))):
            raise PathEscape(f"path {relative!r} resolves outside {base.name}/ (symlink escape)")
    except BaseException:
        fh.close()
        raise
    return fh


def read_confined(base: Path | str, relative: str, strip: str | None = None) -> tuple[os.stat_result, bytes]:
    """Usage: ``st, data = read_confined(notes_dir, rel, strip)``: ``open_confined`` and a read, on the bare
    descriptor (the query hot path reads a few small files per query; file objects cost more than the read).

    Same refusals: ``..`` and absolute paths (PathEscape), a descriptor that resolves outside ``base``
    (PathEscape), a FIFO, device or socket (NotRegularFile, without blocking).
    """
    candidate = cached_lexical_path(base, relative, strip)
    fd = os.open(candidate, _FOLLOW_READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", candidate)
        real = os.readlink(f"{_PROC_FD}/{fd}") if _HAVE_PROC else os.path.realpath(candidate)
        if not _under(real, _real_base(str(base))):
            raise PathEscape(f"path {relative!r} resolves outside {Path(base).name}/ (symlink escape)")
        # No fcntl to clear O_NONBLOCK: it has no effect on a regular file, and only regular files get here.
        want = max(st.st_size + 1, 1 << 16)
        first = os.read(fd, want)
        if len(first) == st.st_size:  # the size fstat gave, one byte short of what was asked: the end
            return st, first
        parts = [first]
        while first and (chunk := os.read(fd, want)):  # a short read, or the file grew since the fstat
            parts.append(chunk)
        return st, b"".join(parts)
    finally:
        os.close(fd)


def is_inside(base: Path, target: Path) -> bool:
    """Usage: ``is_inside(notes_dir, path)``: true when the real target lies under the real base."""
    return _under(os.path.realpath(target), os.path.realpath(base))


MAX_PATH_BYTES = 4096  # PATH_MAX on Linux; longer names fail in the kernel with ENAMETOOLONG


def path_text_problem(value: str) -> str | None:
    """Why ``value`` (read from a file) cannot name a path, or None: a NUL byte, text that is not UTF-8, too long."""
    if "\0" in value:
        return "holds a NUL byte, which no path can contain"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return "holds bytes that are not UTF-8"
    if size > MAX_PATH_BYTES:
        return f"is {size} bytes long; a path holds at most {MAX_PATH_BYTES}"
    return None
