"""Embedding caches kept open by a process that answers many queries (the MCP server, a warm Retriever).

Usage::

    cache = kept_cache(query_embed_cache(vault))           # this process's open cache for the file
    found = cache.get(backend, model, scheme, [key])       # get and put take the cache's own lock
    cache.put(backend, model, scheme, {key: vector})
    cache.close()                                         # a no-op: the connection stays for the next query

Opening the SQLite file for one query and closing it again costs little CPU
but much waiting: the first write after an open recreates the write-ahead log,
and closing the last connection checkpoints it into the database with an
fsync. A kept connection writes a query's vector into the log and lets
SQLite checkpoint now and then. The file is re-opened when it was replaced
(another inode, e.g. a corrupt cache swapped for an empty one) or when the
connection gave up after an error, and in a forked child (SQLite connections
must not cross a fork). At most ``MAX_KEPT`` files stay open.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from vaulteval.embeddings.embedcache import EmbeddingCache

MAX_KEPT = 4
_KEPT: "OrderedDict[str, KeptCache]" = OrderedDict()
_LOCK = threading.Lock()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class KeptCache:
    """An open EmbeddingCache shared by threads, one call at a time."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.identity = _identity(self.path)
        self._cache = EmbeddingCache.open(self.path)
        self._lock = threading.Lock()
        self.pid = os.getpid()
        self._shut = False

    def current(self) -> bool:
        """Still the file at ``path``, and still usable?"""
        return self._cache.usable and _identity(self.path) == self.identity

    def get(self, backend: str, model: str, scheme: str, keys: list[str]) -> dict[str, np.ndarray]:
        with self._lock:
            return {} if self._shut else self._cache.get(backend, model, scheme, keys)

    def put(self, backend: str, model: str, scheme: str, vectors: dict[str, np.ndarray]) -> int:
        with self._lock:
            written = 0 if self._shut else self._cache.put(backend, model, scheme, vectors)
        if written and self.identity is None:
            self.identity = _identity(self.path)  # the first vector created the file
        return written

    def close(self) -> None:
        """Kept open for the next query (``shut`` closes it)."""

    def shut(self) -> None:
        """Close it; a thread still holding it then reads and writes nothing (the cache is an accelerator)."""
        with self._lock:
            self._shut = True
            self._cache.close()


def kept_cache(path: Path) -> KeptCache:
    """This process's open cache for ``path``, opened (or re-opened) when needed."""
    key = str(path)
    with _LOCK:
        if any(k.pid != os.getpid() for k in _KEPT.values()):
            _KEPT.clear()  # inherited through a fork: the parent's connections are left alone, never used here
        kept = _KEPT.get(key)
        if kept is None or not kept.current():
            if kept is not None:
                kept.shut()
            kept = _KEPT[key] = KeptCache(Path(path))
        _KEPT.move_to_end(key)
        while len(_KEPT) > MAX_KEPT:
            _KEPT.popitem(last=False)[1].shut()
        return kept
