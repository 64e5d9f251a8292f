"""Rerank stage: cosine between a query and candidate texts, through Ollama or sentence-transformers.

Usage::

    from vaulteval.rerank.stage import RerankConfig, rerank
    outcome = rerank("descale the espresso machine", texts, RerankConfig(),
                     cache_path=vault_meta / "embeddings.sqlite")
    if outcome.scores is None:          # fell back: keep BM25 order
        print("bm25+noop-rerank:" + outcome.fallback_reason)

Settings problems raise :class:`RerankConfigError` before any connection;
every runtime problem (server down, model missing, timeout, HTTP error, bad or
inconsistent vectors) returns an outcome with ``scores=None`` and a short
``fallback_reason`` so the caller keeps the BM25 order for the whole set.
Importing this module does not import ollama, torch or sentence-transformers.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vaulteval.rerank.embedcache import EmbeddingCache, input_key, vector_ok
from vaulteval.rerank.embedders import (
    EmbedFailure,
    Embedder,
    close_client,
    input_scheme,
    list_models,
    make_client,
    match_installed,
    open_embedder,
    st_available,
)
from vaulteval.rerank.config import (  # re-exported: callers import the whole rerank API from here
    DEFAULT_OLLAMA_MODEL,
    RerankConfig,
    RerankConfigError,
    host_is_local,
    resolve,
)

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_OLLAMA_MODEL",
    "RerankConfig",
    "RerankConfigError",
    "RerankOutcome",
    "cosines",
    "peek",
    "rerank",
    "resolve",
]


@dataclass
class RerankOutcome:
    """Cosine scores in input order, or ``scores=None`` with the reason the stage fell back."""

    scores: list[float] | None
    source: str
    model: str
    fallback_reason: str | None
    cache_hits: int
    cache_misses: int
    seconds: float


# ------------------------------------------------------------------- rerank


def rerank(query: str, texts: list[str], config: RerankConfig, cache_path: Path | None = None,
           cache_anchor: Path | None = None) -> RerankOutcome:
    """Usage: ``rerank(query, texts, RerankConfig(), cache_path)`` -> RerankOutcome; never raises on backend failure."""
    started = time.perf_counter()
    config = resolve(config)
    source, model = config.backend, str(config.model)
    hits = misses = 0
    try:
        embedder = open_embedder(config)
        model = embedder.model
        scheme = embedder.scheme
        q_input = scheme.query_prefix + query
        d_inputs = [scheme.document_prefix + text for text in texts]
        q_key = input_key(q_input)
        d_keys = [input_key(text) for text in d_inputs]
        key_text = dict(zip(d_keys, d_inputs))
        key_text[q_key] = q_input
        cache = EmbeddingCache.open(cache_path, anchor=cache_anchor) if cache_path is not None else None
        try:
            cached = cache.get(embedder.source, embedder.model_key, scheme.name, list(key_text)) if cache else {}
            hits, misses = len(cached), len(key_text) - len(cached)
            vectors = _embed_missing(embedder, q_key, key_text, cached, config.batch_size)
            if cache is not None and len(vectors) > len(cached):
                fresh = {k: v for k, v in vectors.items() if k not in cached}
                cache.put(embedder.source, embedder.model_key, scheme.name, fresh)
        finally:
            embedder.close()
            if cache is not None:
                cache.close()
    except EmbedFailure as exc:
        log.warning("rerank fell back to BM25 order: %s", exc)
        return RerankOutcome(None, source, model, exc.reason, hits, misses, time.perf_counter() - started)
    scores = cosines(vectors[q_key], [vectors[k] for k in d_keys])
    return RerankOutcome(scores, source, model, None, hits, misses, time.perf_counter() - started)


def _embed_missing(
    embedder: Embedder, q_key: str, key_text: dict[str, str], cached: dict[str, np.ndarray], batch_size: int
) -> dict[str, np.ndarray]:
    """Every input's vector: cached ones, then the query alone, then documents in batches.

    Each response is checked as it arrives, so a bad server costs one request,
    not one per batch; nothing reaches the cache unless the whole set is usable.
    """
    vectors = dict(cached)
    dims = {int(v.size) for v in cached.values()}
    if len(dims) > 1:
        raise EmbedFailure("bad-dimension", f"cached vectors have dimensions {sorted(dims)}")
    if q_key not in vectors:
        (vectors[q_key],) = _checked(embedder.embed([key_text[q_key]]), dims, query=True)
    todo = [k for k in key_text if k not in vectors]
    for start in range(0, len(todo), batch_size):
        part = todo[start : start + batch_size]
        vectors.update(zip(part, _checked(embedder.embed([key_text[k] for k in part]), dims)))
    return vectors


def _checked(batch: list[np.ndarray], dims: set[int], query: bool = False) -> list[np.ndarray]:
    """A batch whose vectors are finite, non-zero and all of the one dimension in ``dims`` (filled on first use)."""
    bad = sum(not vector_ok(v) for v in batch)
    if bad:
        reason = "bad-vector" if query or bad == len(batch) else "candidate-failed"
        raise EmbedFailure(reason, f"{bad} of {len(batch)} vectors are empty, zero or not finite")
    seen = {int(v.size) for v in batch}
    if len(seen | dims) > 1:
        raise EmbedFailure("bad-dimension", f"dimensions {sorted(seen)} in this response, expected {sorted(dims or seen)}")
    dims.update(seen)
    return batch


def cosines(query: np.ndarray, docs: list[np.ndarray]) -> list[float]:
    """Usage: ``cosines(q, [d1, d2])`` -> [cos(q, d1), cos(q, d2)], computed in float64 from float32 inputs."""
    if not docs:
        return []
    q = np.asarray(query, dtype=np.float32).astype(np.float64)
    m = np.stack([np.asarray(d, dtype=np.float32) for d in docs]).astype(np.float64)
    out = (m @ q) / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))
    return [float(min(1.0, max(-1.0, x))) for x in out]


# --------------------------------------------------------------------- peek


def peek(config: RerankConfig) -> dict[str, Any]:
    """Usage: ``peek(RerankConfig())`` -> which backend, host and model would be used, and whether they are there.

    Embeds nothing and writes nothing; for Ollama it lists installed models
    (one GET), for sentence-transformers it only checks the package and folder.
    """
    config = resolve(config)
    model = str(config.model)
    info: dict[str, Any] = {
        "backend": config.backend,
        "host": config.host,
        "model": model,
        "input_scheme": input_scheme(model).name,
        "timeout": config.timeout,
        "batch_size": config.batch_size,
        "remote": bool(config.host) and not host_is_local(str(config.host)),
    }
    if config.backend == "sentence-transformers":
        path = Path(model)
        info.update(
            reachable=None,
            backend_available=st_available(),
            model_installed=path.is_dir() if path.is_absolute() else None,
            resolved_model=model,
            digest=None,
            error=None,
        )
        return info
    info.update(reachable=False, backend_available=True, model_installed=False, resolved_model=None, digest=None, error=None)
    client = None
    try:
        client = make_client(str(config.host), config.timeout)
        installed = list_models(client)
    except EmbedFailure as exc:
        info.update(error=exc.reason, backend_available=exc.reason != "backend-unavailable")
        return info
    finally:
        if client is not None:
            close_client(client)
    name = match_installed(model, list(installed))
    info.update(reachable=True, model_installed=name is not None, resolved_model=name, installed_models=sorted(installed))
    if name is not None:
        info["digest"] = installed[name] or None
    else:
        info["error"] = "model-missing"
    return info
