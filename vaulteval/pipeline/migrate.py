"""Moving a vault from the old layout (vaulteval's files directly in ``.vault-meta/``) to its own namespace.

Usage (under the vault lock, which ``provision`` holds)::

    note = migrate_old_layout(shared_meta)       # shared_meta: the opened .vault-meta folder
    if note: print(note.line())

Before its namespace, vaulteval kept its lock, catalog, index, field index and
embedding files directly in ``.vault-meta/``, where claude-obsidian keeps its
own. Only files that are provably vaulteval's are removed: each is recognised
by its name and its content (the index format's magic bytes, the catalog's
fields, SQLite's header) or by vaulteval's temporary-file names. Never removed:
anything under ``chunks/`` (the two tools used the same record schema and, for
pages with an ``address:``, the same file names, so a record cannot be proved
vaulteval's), ``bm25/index.json``, ``mutation.lock`` and every other name.
Old vaulteval chunk records are left in place: they are valid seed-schema
records that nothing of vaulteval reads any more, and claude-obsidian's own
``contextual-prefix.py --all`` prunes them as it prunes any record it did not
write.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vaulteval.index.file import MAGIC

if TYPE_CHECKING:
    from vaulteval.vault.metadir import MetaDir

_SQLITE_MAGIC = b"SQLite format 3\x00"
_INDEX_FILES = {"bm25": ("index.vti", "index.vti.stale", "fields.vti"), "embeddings": ("vectors.vtv",)}
_TMP_NAME = re.compile(r"^\.(index\.vti|fields\.vti|vectors\.vtv|chunk-catalog\.json)\.\d+\.tmp$")
_CACHE_TMP = re.compile(r"^\.embeddings-[A-Za-z0-9_]+\.tmp$")  # the embedding cache's own temporary names


@dataclass
class Migration:
    """What moving to the namespace removed from the old layout, and the chunk records it left."""

    removed: list[str] = field(default_factory=list)
    chunk_records_left: int = 0

    def to_dict(self) -> dict:
        return {"removed": self.removed, "chunk_records_left": self.chunk_records_left}

    def line(self) -> str:
        left = (f"; {self.chunk_records_left} chunk record(s) in .vault-meta/chunks/ were left "
                "(they may be claude-obsidian's)" if self.chunk_records_left else "")
        return (f"migrated to .vault-meta/vaulteval/: removed {len(self.removed)} file(s) of vaulteval's old "
                f"layout from .vault-meta/{left}")


def _head(folder: "MetaDir", name: str, size: int) -> bytes | None:
    """The first ``size`` bytes of a regular file, or None (missing, not regular, unreadable)."""
    st = folder.lstat(name)
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    try:
        with folder.open_read(name) as fh:
            return fh.read(size)
    except OSError:
        return None


def _is_catalog(folder: "MetaDir", name: str) -> bool:
    st = folder.lstat(name)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 30:
        return False
    try:
        data = json.loads(folder.read_bytes(name))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and {"schema", "params", "pages"} <= set(data)


def _own_files(shared: "MetaDir") -> list[str]:
    """Paths (relative to ``.vault-meta``) that are vaulteval's old files."""
    found: list[str] = []
    st = shared.lstat(".lock")
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0:
        found.append(".lock")
    if _is_catalog(shared, "chunk-catalog.json"):
        found.append("chunk-catalog.json")
    if _head(shared, "embeddings.sqlite", len(_SQLITE_MAGIC)) == _SQLITE_MAGIC:
        found += ["embeddings.sqlite"] + [f"embeddings.sqlite{s}" for s in ("-wal", "-shm")
                                          if shared.exists(f"embeddings.sqlite{s}")]
    for entry in shared.scandir():
        if entry.is_file(follow_symlinks=False) and (_TMP_NAME.match(entry.name) or _CACHE_TMP.match(entry.name)):
            found.append(entry.name)
    for sub, names in _INDEX_FILES.items():
        if not shared.is_dir(sub):
            continue
        with shared.sub(sub) as folder:
            for name in names:
                head = _head(folder, name, len(MAGIC))
                if head is not None and head[:6] == MAGIC[:6]:  # any format version of vaulteval's files
                    found.append(f"{sub}/{name}")
            found += [f"{sub}/{e.name}" for e in folder.scandir()
                      if e.is_file(follow_symlinks=False) and _TMP_NAME.match(e.name)]
    return found


def _count_records(shared: "MetaDir") -> int:
    if not shared.is_dir("chunks"):
        return 0
    total = 0
    with shared.sub("chunks") as chunks:
        for entry in chunks.scandir():
            if entry.is_dir(follow_symlinks=False):
                with chunks.sub(entry.name) as folder:
                    total += sum(1 for e in folder.scandir()
                                 if e.name.startswith("chunk-") and e.name.endswith(".json"))
    return total


def migrate_old_layout(shared: "MetaDir") -> Migration | None:
    """Remove vaulteval's own files from the old layout; None when there were none (nothing to say)."""
    removed = _own_files(shared)
    if not removed:
        return None
    for rel in removed:
        sub, _, name = rel.rpartition("/")
        if sub:
            with shared.sub(sub) as folder:
                folder.unlink(name)
        else:
            shared.unlink(name)
    if shared.is_dir("embeddings"):
        try:
            with shared.sub("embeddings") as folder:
                empty = not any(True for _ in folder.scandir())
            if empty:
                os.rmdir("embeddings", dir_fd=shared.fd)  # vaulteval's old store folder, now empty
        except OSError:
            pass
    return Migration(removed=removed, chunk_records_left=_count_records(shared))


def _open_shared(vault) -> "MetaDir | None":
    """The vault's ``.vault-meta`` opened read-only without following a symlink; None when absent or unsafe."""
    from vaulteval.errors import UnsafeMetaPath
    from vaulteval.vault.metadir import META_NAME, MetaDir, open_dir

    try:
        root_fd = os.open(vault.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return MetaDir(open_dir(root_fd, META_NAME, str(vault.shared_meta_dir)), vault.shared_meta_dir)
    except (OSError, UnsafeMetaPath):
        return None
    finally:
        os.close(root_fd)


def shared_state(vault) -> dict:
    """What else lives in the vault's ``.vault-meta/`` (read only): another tool's records and index, a held
    mutation lock, and vaulteval files of the old layout that ``provision`` would remove."""
    shared = _open_shared(vault)
    if shared is None:
        return {"chunk_records": 0, "bm25_index_json": False, "mutation_lock": False, "old_layout_files": []}
    with shared:
        st = shared.lstat("bm25/index.json") if shared.is_dir("bm25") else None
        return {"chunk_records": _count_records(shared),
                "bm25_index_json": st is not None and stat.S_ISREG(st.st_mode),
                "mutation_lock": shared.exists("mutation.lock"),
                "old_layout_files": _own_files(shared)}


def coexistence_line(state: dict) -> str | None:
    """One line when another tool's derived state (claude-obsidian's layout) shares ``.vault-meta/``."""
    parts = []
    if state["chunk_records"]:
        parts.append(f"{state['chunk_records']} chunk record(s) in .vault-meta/chunks/")
    if state["bm25_index_json"]:
        parts.append(".vault-meta/bm25/index.json")
    if not parts:
        return None
    return (f"claude-obsidian's derived state is here too ({', '.join(parts)}); vaulteval keeps its own in "
            ".vault-meta/vaulteval/ and neither tool reads or removes the other's")
