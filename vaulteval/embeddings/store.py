"""Stored chunk embeddings: one checksummed matrix of unit vectors plus the chunk each row belongs to.

Usage::

    store = open_store(meta_dir)                  # raises StoreError when missing or corrupt
    store.matches("sentence-transformers", model_key, "plain")
    vectors = store.lookup([input_key(text)])     # {input key: unit float32 vector}
    rows, scores = store.top(query_vector, k=100) # exact cosine, numpy only

The file is ``<meta>/embeddings/vectors.vtv`` in the index's container format
(``vaulteval.index.file``: checksummed JSON header, CRC over the body, atomic
publication). The header names backend, model, model key (``name@digest`` for
Ollama), input scheme, dimension and the form that computed the vectors
(``form``: ``onnx-fp32`` or ``torch-fp32`` for sentence-transformers); the
``rows`` section holds, per row, the chunk id, the sha256 of the chunk's embedded text (the index's ``context_hash``)
and the input key (sha256 of the exact model input). A row is only ever served
for the index document whose chunk id and context hash it names, so a chunk
that changed after embedding is never matched to an old vector.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import chain
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from vaulteval.index.file import IndexFileError, read_sections, write_sections

if TYPE_CHECKING:
    import numpy as np

    from vaulteval.vault.metadir import MetaDir

STORE_DIR = "embeddings"
STORE_NAME = "vectors.vtv"
STORE_KIND = "vaulteval-embeddings"
STORE_VERSION = 1


class StoreError(Exception):
    """The embedding store is missing, corrupt, or not an embedding store of this version."""


def store_path(meta_dir: Path) -> Path:
    """Usage: ``store_path(vault.meta_dir)`` -> ``.vault-meta/vaulteval/embeddings/vectors.vtv``."""
    return Path(meta_dir) / STORE_DIR / STORE_NAME


class StoreRow(NamedTuple):
    """Which chunk a stored vector is for, and of which exact text (a tuple: 380k of them load fast)."""

    chunk_id: str
    context_hash: str
    input_key: str


class EmbeddingStore:
    """An opened, verified store; the matrix is memory-mapped (rows are unit vectors).

    ``matrix`` may be given as a function that returns it: numpy is then imported on its first use, so that
    choosing a pipeline by the store's identity (``vaulteval.pipeline.spec``) does not load it.
    """

    def __init__(self, path: Path, header: dict[str, Any], matrix: "np.ndarray | Callable[[], np.ndarray]",
                 rows: list[StoreRow]):
        self.path = path
        self.header = header
        self._matrix = matrix
        self.rows = rows
        self._by_input: dict[str, int] | None = None
        self._by_chunk: dict[str, int] | None = None

    @property
    def matrix(self) -> "np.ndarray":
        if callable(self._matrix):
            self._matrix = self._matrix()  # two threads may both build it: the same view of the same bytes
        return self._matrix

    # -- identity ---------------------------------------------------------
    @property
    def backend(self) -> str:
        return str(self.header["backend"])

    @property
    def model(self) -> str:
        return str(self.header["model"])

    @property
    def model_key(self) -> str:
        return str(self.header["model_key"])

    @property
    def scheme(self) -> str:
        return str(self.header["scheme"])

    @property
    def dim(self) -> int:
        return int(self.header["dim"])

    def __len__(self) -> int:
        return len(self.rows)

    def matches(self, backend: str, model_key: str, scheme: str) -> bool:
        """Usage: ``store.matches(embedder.source, embedder.model_key, embedder.scheme.name)``."""
        return (backend, model_key, scheme) == (self.backend, self.model_key, self.scheme)

    # -- lookups ----------------------------------------------------------
    def row_of_input(self, key: str) -> int | None:
        if self._by_input is None:
            self._by_input = {r.input_key: i for i, r in enumerate(self.rows)}
        return self._by_input.get(key)

    def row_of_chunk(self, chunk_id: str) -> int | None:
        if self._by_chunk is None:
            self._by_chunk = {r.chunk_id: i for i, r in enumerate(self.rows)}
        return self._by_chunk.get(chunk_id)

    def lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        """Usage: ``store.lookup([input_key(t)])`` -> {key: unit vector} for the keys stored."""
        import numpy as np

        found = {}
        for key in keys:
            row = self.row_of_input(key)
            if row is not None:
                found[key] = np.asarray(self.matrix[row], dtype=np.float32)
        return found

    def top(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Usage: ``rows, cos = store.top(q, 100)``: exact cosine top-k (float32), best first (ties: lower row first).

        Equal rows get equal bits (``vaulteval.embeddings.vectors``), so ties break by row, never by rounding.
        """
        import numpy as np

        from vaulteval.embeddings.vectors import norm, row_dots

        q = np.asarray(query, dtype=np.float32)
        length = norm(q) if q.shape == (self.dim,) else 0.0
        if not np.isfinite(length) or length == 0.0 or not len(self.rows):
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        # Not ``matrix @ q``: a BLAS product can score two equal rows differently by their position.
        scores = row_dots(self.matrix, q / np.float32(length), dtype=np.float32)
        k = min(k, scores.size)
        part = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
        order = np.lexsort((part, -scores[part]))
        rows = part[order]
        return rows.astype(np.int64), np.clip(scores[rows], -1.0, 1.0)

    def describe(self) -> dict[str, Any]:
        """Usage: ``store.describe()`` -> the header facts doctor reports."""
        return {"path": str(self.path), "backend": self.backend, "model": self.model, "model_key": self.model_key,
                "scheme": self.scheme, "form": self.header.get("form"), "dim": self.dim, "rows": len(self.rows),
                "built_at": self.header.get("built_at")}


def open_store(meta_dir: Path) -> EmbeddingStore:
    """Usage: ``open_store(meta_dir)``; verifies size, header and body checksum, or raises StoreError.

    Nothing here needs numpy (the checksums are zlib's): the matrix is made on its first use."""
    path = store_path(meta_dir)
    if not path.exists():
        raise StoreError(f"no stored embeddings ({path})")
    try:
        header, sections = read_sections(path)
        if header.get("kind") == STORE_KIND and "vectors" in sections:
            sections.check("vectors")  # every block of the matrix, before a row of it is served
    except IndexFileError as exc:
        raise StoreError(f"embedding store is unusable: {exc} ({path})") from None
    try:
        if header.get("kind") != STORE_KIND or header.get("store_version") != STORE_VERSION:
            raise ValueError("not an embedding store of this version")
        dim, n = int(header["dim"]), int(header["n"])
        if dim <= 0 or sections.dtype("vectors") != "<f4" or len(sections.raw("vectors")) != n * dim:
            raise ValueError("matrix shape does not match the header")
        rows = _parse_rows(bytes(sections["rows"]))
        if len(rows) != n:
            raise ValueError(f"{len(rows)} row keys for {n} vectors")
        for key in ("backend", "model", "model_key", "scheme"):
            if not isinstance(header.get(key), str):
                raise ValueError(f"header lacks {key}")
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"embedding store is malformed: {exc} ({path})") from None
    return EmbeddingStore(path, header, lambda: sections["vectors"].reshape(n, dim), rows)


def _parse_rows(raw: bytes) -> list[StoreRow]:
    """Row keys, one JSON array of three strings per line, decoded in one call and checked in C loops
    (much faster than json.loads per line: docs/benchmarks.md)."""
    if not raw:
        return []
    if not raw.endswith(b"\n"):
        raise ValueError("the row keys do not end with a newline")
    data = json.loads(b"[" + raw[:-1].replace(b"\n", b",") + b"]")
    if set(map(type, data)) - {list}:
        raise ValueError("a row key is not a JSON array")
    rows = list(map(StoreRow._make, data))  # TypeError unless three items
    if set(map(type, chain.from_iterable(rows))) - {str}:
        raise ValueError("a row key holds something other than strings")
    return rows


def write_store(meta: "MetaDir", identity: dict[str, str], rows: list[StoreRow], matrix: np.ndarray) -> int:
    """Publish a store atomically (the caller holds the vault lock); rows are normalised here. Returns bytes."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32).reshape(len(rows), -1) if rows else np.zeros((0, 1), np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = (matrix / np.where(norms > 0, norms, 1.0)).astype("<f4")
    header = {"kind": STORE_KIND, "store_version": STORE_VERSION, "n": len(rows), "dim": int(unit.shape[1]),
              "built_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              **{k: identity[k] for k in ("backend", "model", "model_key", "scheme", "form") if k in identity}}
    lines = b"".join(json.dumps([r.chunk_id, r.context_hash, r.input_key], ensure_ascii=False).encode("utf-8") + b"\n"
                     for r in rows)
    with meta.sub(STORE_DIR, create=True) as folder:
        return write_sections(folder, STORE_NAME, header, {"vectors": unit.ravel(), "rows": lines})
