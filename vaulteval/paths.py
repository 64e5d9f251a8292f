"""Path confinement: every read or write stays inside the area it belongs to.

Usage: ``page = confine(vault.wiki_dir, "wiki/howto/Descaling.md", strip="wiki")``
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from .errors import PathEscape


def confine(base: Path, relative: str, *, strip: str | None = None) -> Path:
    """Resolve ``relative`` under ``base``, refusing absolute paths, ``..`` and symlink escapes.

    ``strip`` drops a leading component (``wiki/x.md`` relative to the ``wiki`` dir).
    """
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise PathEscape(f"empty or invalid path {relative!r}")
    posix = PurePosixPath(relative.replace("\\", "/"))
    if posix.is_absolute() or relative.startswith(("/", "\\")) or (len(relative) > 1 and relative[1] == ":"):
        raise PathEscape(f"absolute path {relative!r} is not allowed; paths must be vault-relative")
    parts = posix.parts
    if ".." in parts:
        raise PathEscape(f"path {relative!r} contains '..'; paths must stay inside the vault")
    if strip is not None:
        if not parts or parts[0] != strip:
            raise PathEscape(f"path {relative!r} must start with {strip}/")
        parts = parts[1:]
    if not parts:
        raise PathEscape(f"path {relative!r} names no file")
    candidate = base.joinpath(*parts)
    real_base = os.path.realpath(base)
    real = os.path.realpath(candidate)
    if real != real_base and not real.startswith(real_base + os.sep):
        raise PathEscape(f"path {relative!r} resolves outside {base.name}/ (symlink escape)")
    return candidate


def is_inside(base: Path, target: Path) -> bool:
    """Usage: ``is_inside(wiki_dir, path)``: true when the real target lies under the real base."""
    real_base = os.path.realpath(base)
    real = os.path.realpath(target)
    return real == real_base or real.startswith(real_base + os.sep)
