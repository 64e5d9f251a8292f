"""Removing what no generation needs: old segments and a writer's leftover temporary files.

Usage (a writer, under the vault lock, after it published)::

    before = segments_in_service(meta)          # at the start of the run: the generation readers may hold
    ...                                         # prefix, build, publish
    removed = collect(meta, keep=before | segments_in_service(meta) | segments_named(meta))

A segment stays while the index in service, the index that was in service when
the run started (readers may still be opening it) or the catalog names it; a
reader that opened a segment keeps reading it after it is removed (its
descriptor pins the bytes). Temporary files are only ever a writer's, and the
caller holds the lock, so any left are a killed writer's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from vaulteval.chunks.segments import SEGMENT_RE, STORE_DIR

if TYPE_CHECKING:
    from vaulteval.vault.metadir import MetaDir

# Temporary names of vaulteval's writers: segments, index, field index, stored vectors, catalog.
_TMP_RE = re.compile(r"^\.(seg-[0-9a-f]{16}\.vcs|index\.vti|fields\.vti|vectors\.vtv|chunk-catalog\.vcc)\.\d+\.tmp$")


def segments_in_service(meta: "MetaDir") -> set[str]:
    """The segments the published index reads."""
    from vaulteval.index.file import IndexFileError, _read_header
    from vaulteval.index.location import open_index_file

    try:
        with open_index_file(meta) as fh:
            header = _read_header(fh)[0]
    except (IndexFileError, OSError, ValueError):
        return set()
    store = header.get("store")
    return {s for s in store if isinstance(s, str) and SEGMENT_RE.match(s)} if isinstance(store, list) else set()


def collect(meta: "MetaDir", keep: set[str]) -> dict[str, int]:
    """Remove unneeded segments and leftover temporary files."""
    out = {"segments": 0, "temporary": 0}
    for sub in ("", STORE_DIR, "bm25", "embeddings"):
        if sub and not meta.is_dir(sub):
            continue
        folder = meta.sub(sub) if sub else meta
        try:
            for entry in list(folder.scandir()):
                if entry.is_dir(follow_symlinks=False):
                    continue
                if _TMP_RE.match(entry.name):
                    out["temporary"] += folder.unlink(entry.name)
                elif sub == STORE_DIR and SEGMENT_RE.match(entry.name) and entry.name not in keep:
                    out["segments"] += folder.unlink(entry.name)
        finally:
            if sub:
                folder.close()
    return out
