"""Fill the embedding store incrementally: reuse stored rows, then the embedding cache, then embed the rest.

Usage (the caller holds the vault lock)::

    report = build_store(meta, items, resolve(RerankConfig(backend="sentence-transformers")),
                         cache_path=meta.path / "embeddings.sqlite", progress=sys.stderr)

``items`` are ``(chunk_id, context_hash, text)`` for every current chunk, where
``text`` is what the rerank stage embeds (the contextualized text). Only inputs
found neither in the previous store (same backend, model key and scheme) nor
in the cache reach the model, longest first, so a batch pads its texts to a
length close to their own; new vectors are also written to the cache. The
caller may pass the ``embedder`` (provisioning passes the ONNX export's, run
on the machine's cores); the store's header records its ``form``
(``onnx-fp32``, ``torch-fp32``), and a progress bar with rate and ETA goes to
``progress``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from vaulteval.embeddings.embedcache import EmbeddingCache, input_key, vector_ok
from vaulteval.embeddings.embedders import EmbedFailure, open_embedder
from vaulteval.embeddings.store import StoreError, StoreRow, open_store, write_store

if TYPE_CHECKING:
    from vaulteval.embeddings.config import RerankConfig
    from vaulteval.embeddings.embedders import Embedder
    from vaulteval.vault.metadir import MetaDir


@dataclass
class StoreReport:
    rows: int = 0
    reused_store: int = 0
    reused_cache: int = 0
    embedded: int = 0
    backend: str = ""
    model: str = ""
    model_key: str = ""
    scheme: str = ""
    form: str = ""
    dim: int = 0
    size_bytes: int = 0
    seconds: float = 0.0
    onnx: dict | None = None  # the ONNX export's state (sentence-transformers only)

    def to_dict(self) -> dict:
        out = asdict(self)
        if out["onnx"] is None:
            del out["onnx"]
        return out


def build_store(meta: "MetaDir", items: list[tuple[str, str, str]], config: "RerankConfig", *,
                cache_path: Path | None = None, progress: IO[str] | None = None,
                embedder: "Embedder | None" = None) -> StoreReport:
    """Embed what changed and publish the store (closing ``embedder``, default ``open_embedder(config)``);
    raises EmbedFailure when the backend cannot embed."""
    started = time.perf_counter()
    embedder = embedder if embedder is not None else open_embedder(config)
    try:
        scheme = embedder.scheme
        # By name and version where there is one (the shipped MiniLM), never by the venv folder it sits in.
        identity = {"backend": embedder.source, "model": getattr(embedder, "model_name", embedder.model),
                    "model_key": embedder.model_key,
                    "scheme": scheme.name}
        inputs = [scheme.document_prefix + text for _, _, text in items]
        keys = [input_key(text) for text in inputs]
        vectors: dict[str, np.ndarray] = {}
        report = StoreReport(**identity)
        try:
            old = open_store(meta.path)
            if old.matches(embedder.source, embedder.model_key, scheme.name):
                vectors.update(old.lookup(keys))
        except StoreError:
            pass
        report.reused_store = len(vectors)
        cache = EmbeddingCache.open(cache_path) if cache_path is not None else None
        try:
            if cache is not None:
                found = cache.get(embedder.source, embedder.model_key, scheme.name,
                                  [k for k in keys if k not in vectors])
                report.reused_cache = len(found)
                vectors.update(found)
            text_of = dict(zip(keys, inputs))
            todo = sorted(dict.fromkeys(k for k in keys if k not in vectors), key=lambda k: -len(text_of[k]))
            from tqdm import tqdm

            bar = tqdm(total=len(todo), disable=progress is None or not todo, file=progress, unit="chunk",
                       desc="vaulteval: embedding chunks", mininterval=1.0)
            for start in range(0, len(todo), config.batch_size):
                part = todo[start : start + config.batch_size]
                batch = embedder.embed([text_of[k] for k in part])
                fresh = dict(zip(part, _checked(batch)))
                vectors.update(fresh)
                if cache is not None:
                    cache.put(embedder.source, embedder.model_key, scheme.name, fresh)
                bar.update(len(part))
            bar.close()
            report.embedded = len(todo)
            report.form = identity["form"] = str(getattr(embedder, "form", embedder.source))
        finally:
            if cache is not None:
                cache.close()
    finally:
        embedder.close()
    dims = {int(v.size) for v in vectors.values()}
    if len(dims) > 1:
        raise EmbedFailure("bad-dimension", f"vectors have dimensions {sorted(dims)}")
    rows = [StoreRow(cid, ch, key) for (cid, ch, _), key in zip(items, keys)]
    matrix = np.stack([vectors[k] for k in keys]) if keys else np.zeros((0, 1), np.float32)
    report.rows, report.dim = len(rows), int(matrix.shape[1]) if keys else 0
    report.size_bytes = write_store(meta, identity, rows, matrix)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _checked(batch: list[np.ndarray]) -> list[np.ndarray]:
    bad = sum(not vector_ok(v) for v in batch)
    if bad:
        raise EmbedFailure("bad-vector", f"{bad} of {len(batch)} vectors are empty, zero or not finite")
    return batch
