"""Rerank stage: cosine between a query and candidate texts, through Ollama or sentence-transformers.

Usage::

    from vaulteval.embeddings.rerank import RerankConfig, rerank
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
from typing import TYPE_CHECKING, Any

import numpy as np

from vaulteval.embeddings.embedcache import EmbeddingCache, input_key, vector_ok
from vaulteval.embeddings.embedders import (
    EmbedFailure,
    Embedder,
    close_client,
    input_scheme,
    list_models,
    make_client,
    match_installed,
    st_available,
)
from vaulteval.embeddings.onnxembed import open_query_embedder
from vaulteval.embeddings.languages import model_coverage
from vaulteval.embeddings.vectors import cosines  # re-exported: order-independent cosines
from vaulteval.embeddings.config import (  # re-exported: callers import the whole rerank API from here
    DEFAULT_OLLAMA_MODEL,
    RerankConfig,
    RerankConfigError,
    host_is_local,
    resolve,
)

if TYPE_CHECKING:
    from vaulteval.embeddings.store import EmbeddingStore

log = logging.getLogger(__name__)

# The fallback reason when the model does not cover the query's script.
LANGUAGE_FALLBACK = "model-language"

__all__ = [
    "DEFAULT_OLLAMA_MODEL",
    "RerankConfig",
    "RerankConfigError",
    "RerankOutcome",
    "cosines",
    "embed_query",
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
           store: "EmbeddingStore | None" = None,
           onnx_dir: Path | None = None) -> RerankOutcome:
    """Usage: ``rerank(query, texts, RerankConfig(), cache_path, store)`` -> RerankOutcome; never raises on backend failure.

    Document vectors come from ``store`` (the provisioned embeddings) when it
    was made with the same backend, model key and input scheme, then from the
    cache; so with a current store only the query is embedded. A query in a
    script the model does not cover falls back with ``model-language``.
    """
    started = time.perf_counter()
    config = resolve(config)
    source, model = config.backend, str(config.model)
    hits = misses = 0
    if not model_coverage(model).reads(query):
        return RerankOutcome(None, source, model, LANGUAGE_FALLBACK, 0, 0, time.perf_counter() - started)
    try:
        embedder = open_query_embedder(config, onnx_dir)
        model = embedder.model
        scheme = embedder.scheme
        q_input = scheme.query_prefix + query
        d_inputs = [scheme.document_prefix + text for text in texts]
        q_key = input_key(q_input)
        d_keys = [input_key(text) for text in d_inputs]
        key_text = dict(zip(d_keys, d_inputs))
        key_text[q_key] = q_input
        stored = {}
        if store is not None and store.matches(embedder.source, embedder.model_key, scheme.name):
            stored = store.lookup(d_keys)
        cache = EmbeddingCache.open(cache_path) if cache_path is not None else None
        try:
            wanted = [k for k in key_text if k not in stored]
            cached = cache.get(embedder.source, embedder.model_key, scheme.name, wanted) if cache else {}
            cached.update(stored)
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


def _query_cache(cache_path: Path | None, keep: bool) -> Any:
    if cache_path is None:
        return None
    if keep:
        from vaulteval.embeddings.keptcache import kept_cache

        return kept_cache(cache_path)
    return EmbeddingCache.open(cache_path)


@dataclass
class QueryVector:
    """The query's vector for dense retrieval, or ``vector=None`` with the fallback reason."""

    vector: np.ndarray | None
    source: str
    model: str
    model_key: str
    scheme: str
    fallback_reason: str | None
    seconds: float


def embed_query(query: str, config: RerankConfig, cache_path: Path | None = None,
                onnx_dir: Path | None = None, keep_cache: bool = False) -> QueryVector:
    """Usage: ``embed_query("q", cfg, cache)`` -> QueryVector; never raises on backend failure.

    The identity (backend, model key, scheme) lets the caller check it against
    the stored embeddings before comparing vectors. ``keep_cache`` (a process
    that answers many queries) keeps the cache file open between queries
    (``vaulteval.embeddings.keptcache``).
    """
    started = time.perf_counter()
    config = resolve(config)
    source, model = config.backend, str(config.model)
    if not model_coverage(model).reads(query):
        return QueryVector(None, source, model, model, "", LANGUAGE_FALLBACK, time.perf_counter() - started)
    try:
        embedder = open_query_embedder(config, onnx_dir)
        try:
            text = embedder.scheme.query_prefix + query
            key = input_key(text)
            cache = _query_cache(cache_path, keep_cache)
            try:
                vec = cache.get(embedder.source, embedder.model_key, embedder.scheme.name, [key]).get(key) if cache else None
                if vec is None:
                    (vec,) = _checked(embedder.embed([text]), set(), query=True)
                    if cache is not None:
                        cache.put(embedder.source, embedder.model_key, embedder.scheme.name, {key: vec})
            finally:
                if cache is not None:
                    cache.close()
            return QueryVector(vec, embedder.source, embedder.model, embedder.model_key, embedder.scheme.name, None,
                               time.perf_counter() - started)
        finally:
            embedder.close()
    except EmbedFailure as exc:
        log.warning("query embedding failed: %s", exc)
        return QueryVector(None, source, model, model, "", exc.reason, time.perf_counter() - started)


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
