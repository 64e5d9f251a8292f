"""Where the index file lives, and how it is moved aside and back around a chunk change.

Usage::

    path = index_path(vault.meta_dir)          # .vault-meta/vaulteval/bm25/index.vti
    invalidate_index(meta)                     # before prefix changes a chunk
    fh = open_index_file(meta)                 # through the meta folder's descriptors
"""

from __future__ import annotations

import os
from pathlib import Path

from vaulteval.index.file import IndexFileError, checked_open, read_header
from vaulteval.vault.metadir import MetaDir

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the start-up budget test keeps typing off the served retrieve
if TYPE_CHECKING:
    from typing import Any

    from vaulteval.vault.vault import Vault

INDEX_DIR = "bm25"
INDEX_NAME = "index.vti"
STALE_SUFFIX = ".stale"


def index_path(meta_dir: Path) -> Path:
    return meta_dir / INDEX_DIR / INDEX_NAME


def invalidate_index(meta: MetaDir) -> bool:
    """Move the index aside before the chunk set changes, so a mixed index is never served.

    The old file stays as ``index.vti.stale`` for the next build to reuse its postings.
    """
    if not meta.is_dir(INDEX_DIR):
        return False
    with meta.sub(INDEX_DIR) as folder:
        if not folder.exists(INDEX_NAME):
            return False
        folder.replace(INDEX_NAME, INDEX_NAME + STALE_SUFFIX)
        os.fsync(folder.fd)
    return True


def restore_index(meta: MetaDir) -> bool:
    """Put an index moved aside by ``invalidate_index`` back when no newer one was published."""
    try:
        if not meta.is_dir(INDEX_DIR):
            return False
        with meta.sub(INDEX_DIR) as folder:
            if folder.exists(INDEX_NAME) or not folder.exists(INDEX_NAME + STALE_SUFFIX):
                return False
            folder.replace(INDEX_NAME + STALE_SUFFIX, INDEX_NAME)
            return True
    except OSError:
        return False


def open_index_file(meta: MetaDir, name: str = INDEX_NAME):
    """The index file opened through the meta folder's descriptor (raises IndexFileError when unusable)."""

    def opener():
        with meta.sub(INDEX_DIR) as folder:
            return folder.open_read(name)

    return checked_open(opener)


def stale_index_present(vault: "Vault") -> bool:
    try:
        with MetaDir.open(vault) as meta:
            return meta.is_dir(INDEX_DIR) and meta.exists(f"{INDEX_DIR}/{INDEX_NAME}{STALE_SUFFIX}")
    except OSError:
        return False


def peek_header(meta_dir: Path) -> dict[str, Any] | None:
    try:
        return read_header(index_path(meta_dir))
    except IndexFileError:
        return None
