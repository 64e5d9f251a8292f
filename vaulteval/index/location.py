"""Where the index file lives, and how it is opened.

Usage::

    path = index_path(vault.meta_dir)          # .vault-meta/vaulteval/bm25/index.vti
    fh = open_index_file(meta)                 # through the meta folder's descriptors
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.index.file import IndexFileError, checked_open, read_header
from vaulteval.vault.metadir import MetaDir

if TYPE_CHECKING:
    from typing import Any

INDEX_DIR = "bm25"
INDEX_NAME = "index.vti"


def index_path(meta_dir: Path) -> Path:
    return meta_dir / INDEX_DIR / INDEX_NAME


def open_index_file(meta: MetaDir, name: str = INDEX_NAME):
    """The index file opened through the meta folder's descriptor (raises IndexFileError when unusable)."""

    def opener():
        with meta.sub(INDEX_DIR) as folder:
            return folder.open_read(name)

    return checked_open(opener)


def peek_header(meta_dir: Path) -> dict[str, Any] | None:
    try:
        return read_header(index_path(meta_dir))
    except IndexFileError:
        return None
