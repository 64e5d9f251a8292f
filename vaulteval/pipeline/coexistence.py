"""What else shares the vault's ``.vault-meta/``: another tool's derived state beside vaulteval's namespace.

Usage::

    state = shared_state(vault)        # {"chunk_records": 54, "bm25_index_json": True, "mutation_lock": False}
    coexistence_line(state)            # one line for doctor, or None when vaulteval is alone there

claude-obsidian keeps its chunk records (``chunks/<address>/chunk-*.json``), its
``bm25/index.json`` and its ``mutation.lock`` directly in ``.vault-meta/``;
vaulteval keeps everything of its own in ``.vault-meta/vaulteval/``. This is
read only: neither tool reads or removes the other's files.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaulteval.vault.metadir import MetaDir


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
    """What else lives in the vault's ``.vault-meta/`` (read only): another tool's records and index, and a
    held mutation lock."""
    shared = _open_shared(vault)
    if shared is None:
        return {"chunk_records": 0, "bm25_index_json": False, "mutation_lock": False}
    with shared:
        st = shared.lstat("bm25/index.json") if shared.is_dir("bm25") else None
        return {"chunk_records": _count_records(shared),
                "bm25_index_json": st is not None and stat.S_ISREG(st.st_mode),
                "mutation_lock": shared.exists("mutation.lock")}


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
