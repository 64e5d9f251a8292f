"""Embedding cache: float32 vectors in SQLite, keyed by backend, model, input scheme and input hash.

Usage::

    with EmbeddingCache.open(vault_meta / "embeddings.sqlite") as cache:
        found = cache.get("ollama", "all-minilm:latest@sha256:..", "plain", [input_key(text)])
        cache.put("ollama", "all-minilm:latest@sha256:..", "plain", {input_key(text): vector})

The cache is an accelerator, never a source of truth: every failure to open,
read or write it is logged and swallowed (the caller just sees misses), a
file that is not a database or is malformed is replaced atomically by an
empty one, and a row whose blob does not match its dimension is ignored.
Concurrent readers and writers are safe: WAL journal, a busy timeout, and
one short transaction per write.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import sqlite3
from pathlib import Path

import numpy as np

from vaulteval.vault.atomic import temp_sibling

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
BUSY_TIMEOUT_MS = 3000
_LOOKUP_CHUNK = 500
# SQLite result codes that mean the file itself is unusable (not merely busy).
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    scheme TEXT NOT NULL,
    input_sha256 TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (backend, model, scheme, input_sha256)
) WITHOUT ROWID;
"""


def input_key(text: str) -> str:
    """Usage: ``input_key("search_document: text")`` -> sha256 hex of the exact UTF-8 input."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def vector_ok(vector: np.ndarray) -> bool:
    """Usage: ``vector_ok(v)`` -> True when v is a non-empty, finite, non-zero 1-D vector."""
    if vector.ndim != 1 or vector.size == 0 or not np.all(np.isfinite(vector)):
        return False
    norm = float(np.linalg.norm(vector.astype(np.float64)))
    return math.isfinite(norm) and norm > 0.0


def _is_corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text


class EmbeddingCache:
    """An open cache file; every method degrades to a no-op after an error."""

    def __init__(self, path: Path, conn: sqlite3.Connection | None, create_on_write: bool = False) -> None:
        self.path = path
        self._conn = conn
        self._create_on_write = create_on_write

    @property
    def usable(self) -> bool:
        """Usage: ``cache.usable`` -> False when the file could not be opened (or cannot be created)."""
        return self._conn is not None or self._create_on_write

    @classmethod
    def open(cls, path: Path) -> "EmbeddingCache":
        """Usage: ``EmbeddingCache.open(path)``; replaces a corrupt file.

        A missing file is created only when the first vector is written, so a
        rerank that falls back leaves no trace. A cache file that is a symlink,
        or a missing folder, means nothing is cached.
        """
        path = Path(path)
        if path.is_symlink():
            log.warning("embedding cache %s is a symlink; not using it", path)
            return cls(path, None)
        if not path.parent.is_dir():
            log.info("embedding cache folder %s does not exist; not caching", path.parent)
            return cls(path, None)
        if not path.exists():
            return cls(path, None, create_on_write=True)
        return cls(path, _open_or_replace(path))

    def get(self, backend: str, model: str, scheme: str, keys: list[str]) -> dict[str, np.ndarray]:
        """Usage: ``cache.get(backend, model, scheme, keys)`` -> {key: float32 vector} for valid rows."""
        if self._conn is None or not keys:
            return {}
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(unique), _LOOKUP_CHUNK):
                part = unique[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    "SELECT input_sha256, dim, vector FROM embeddings "
                    f"WHERE backend=? AND model=? AND scheme=? AND input_sha256 IN ({marks})",
                    (backend, model, scheme, *part),
                ).fetchall()
                for key, dim, blob in rows:
                    vec = _decode(dim, blob)
                    if vec is None:
                        log.warning("ignoring malformed cached vector %s", key[:12])
                        continue
                    found[key] = vec
        except sqlite3.Error as exc:
            self._fail("read", exc)
            return {}
        return found

    def put(self, backend: str, model: str, scheme: str, vectors: dict[str, np.ndarray]) -> int:
        """Usage: ``cache.put(backend, model, scheme, {key: vector})`` -> rows written (invalid ones skipped)."""
        if not self.usable or not vectors:
            return 0
        rows = []
        for key, vec in vectors.items():
            vec = np.asarray(vec, dtype=np.float32)
            if not vector_ok(vec):
                log.warning("not caching invalid vector %s", key[:12])
                continue
            rows.append((backend, model, scheme, key, int(vec.size), vec.astype("<f4").tobytes()))
        if not rows:
            return 0
        if self._conn is None and self._create_on_write:
            self._create_on_write = False
            self._conn = _open_or_replace(self.path)
        if self._conn is None:
            return 0
        try:
            with self._conn:  # one short transaction
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (backend, model, scheme, input_sha256, dim, vector) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            self._fail("write", exc)
            return 0
        return len(rows)

    def close(self) -> None:
        """Usage: ``cache.close()``; safe to call twice."""
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _fail(self, what: str, exc: sqlite3.Error) -> None:
        log.warning("embedding cache %s failed on %s (%s); continuing without it", self.path, what, exc)
        self.close()


def _open_or_replace(path: Path) -> sqlite3.Connection | None:
    """Connect, replacing a corrupt file by an empty cache; None when the cache cannot be used."""
    try:
        return _connect(path)
    except sqlite3.Error as exc:
        if not _is_corrupt(exc):
            log.warning("embedding cache %s unavailable (%s); not caching", path, exc)
            return None
        log.warning("embedding cache %s is corrupt (%s); replacing it", path, exc)
    if not _replace_with_empty(path):
        return None
    try:
        return _connect(path)
    except sqlite3.Error as exc:
        log.warning("embedding cache %s unavailable after replacement (%s)", path, exc)
        return None


def _connect(path: Path) -> sqlite3.Connection:
    # Any thread may use it, one at a time: a kept cache (keptcache) serves the server's worker threads.
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            log.info("embedding cache %s is not in WAL mode (%s)", path, mode)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema {row[0]!r} is not {SCHEMA_VERSION!r}: file is not a database")
    except BaseException:
        conn.close()
        raise
    return conn


def _replace_with_empty(path: Path) -> bool:
    """Swap a fresh, empty cache file in place of a corrupt one (atomic rename)."""
    try:
        with temp_sibling(path) as tmp:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.executescript(_SCHEMA)
                conn.execute("INSERT INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            finally:
                conn.close()
            # A stale WAL beside the corrupt file must not be replayed into the new one.
            for suffix in ("-wal", "-shm"):
                try:
                    os.unlink(f"{path}{suffix}")
                except FileNotFoundError:
                    pass
        return True
    except (OSError, sqlite3.Error) as exc:
        log.warning("could not replace corrupt embedding cache %s (%s); not caching", path, exc)
        return False


def _decode(dim: object, blob: object) -> np.ndarray | None:
    if not isinstance(dim, int) or not isinstance(blob, bytes) or dim <= 0 or len(blob) != 4 * dim:
        return None
    vec = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    return vec if vector_ok(vec) else None
