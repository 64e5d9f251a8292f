"""Embedding backends: an Ollama server (official client) and a local sentence-transformers model.

Usage::

    embedder = open_embedder(resolved_config)      # raises EmbedFailure("model-missing", ...)
    vectors = embedder.embed(["search_query: descale"])   # list of float32 arrays

Heavy libraries (``ollama``, ``sentence_transformers``, torch) are imported
only when a backend is opened, so importing this module stays cheap. Every
backend problem surfaces as :class:`EmbedFailure` carrying a short reason
slug that the rerank stage reports as its fallback reason.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from vaulteval.embeddings.models import default_st_model, split_tag  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from vaulteval.embeddings.config import RerankConfig

log = logging.getLogger(__name__)

NOMIC_QUERY_PREFIX = "search_query: "
NOMIC_DOCUMENT_PREFIX = "search_document: "
SCHEME_NOMIC = "nomic-prefix-v1"
SCHEME_PLAIN = "plain"


class EmbedFailure(Exception):
    """An embedding backend could not produce usable vectors; ``reason`` is the fallback slug."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class InputScheme:
    """How query and document text become the exact embedded input."""

    name: str
    query_prefix: str = ""
    document_prefix: str = ""


def input_scheme(model: str) -> InputScheme:
    """Usage: ``input_scheme("nomic-embed-text:latest").query_prefix`` -> ``"search_query: "``.

    Nomic models (last path component starting with ``nomic-embed``) need task
    prefixes; every other model embeds the text as is.
    """
    base = model.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    if base.startswith("nomic-embed"):
        return InputScheme(SCHEME_NOMIC, NOMIC_QUERY_PREFIX, NOMIC_DOCUMENT_PREFIX)
    return InputScheme(SCHEME_PLAIN)


def match_installed(requested: str, installed: list[str]) -> str | None:
    """Usage: ``match_installed("nomic-embed-text", ["nomic-embed-text:latest"])`` -> installed name.

    A tagged request matches only itself; an untagged one matches only the
    untagged name or its ``:latest`` alias, never another tag.
    """
    _, tag = split_tag(requested)
    wanted = [requested] if tag is not None else [requested, f"{requested}:latest"]
    for name in wanted:
        if name in installed:
            return name
    return None


class Embedder(Protocol):
    """A ready backend: fixed source, model identity and input scheme."""

    source: str
    model: str
    model_key: str
    scheme: InputScheme

    def embed(self, inputs: list[str]) -> list[np.ndarray]: ...

    def close(self) -> None: ...


def open_embedder(config: "RerankConfig") -> Embedder:
    """Usage: ``open_embedder(resolve(cfg))`` -> a ready embedder, or raises EmbedFailure."""
    if config.backend == "ollama":
        return OllamaEmbedder.connect(config)
    return SentenceTransformerEmbedder.load(config)


def _as_vectors(raw: Any, expected: int) -> list[np.ndarray]:
    """Turn a backend's response into float32 vectors; shape problems are EmbedFailure."""
    try:
        rows = list(raw)
    except TypeError as exc:
        raise EmbedFailure("bad-response", f"embeddings are not a list ({exc})") from None
    if len(rows) != expected:
        raise EmbedFailure("bad-response", f"{len(rows)} vectors for {expected} inputs")
    out = []
    for row in rows:
        try:
            vec = np.asarray(row, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbedFailure("bad-vector", f"non-numeric vector ({exc})") from None
        if vec.ndim != 1:
            raise EmbedFailure("bad-vector", f"vector has shape {vec.shape}")
        out.append(vec)
    return out


# --------------------------------------------------------------------- Ollama


@dataclass
class OllamaEmbedder:
    """Embeds through the official ``ollama`` client; the model is never pulled."""

    host: str
    model: str
    timeout: float
    digest: str = ""
    client: Any = field(default=None, repr=False)
    source: str = "ollama"

    @property
    def scheme(self) -> InputScheme:
        """Usage: ``embedder.scheme.query_prefix``; chosen by the installed model name."""
        return input_scheme(self.model)

    @property
    def model_key(self) -> str:
        """Usage: ``embedder.model_key``; installed name plus digest: a re-pulled model never reuses old vectors."""
        return f"{self.model}@{self.digest}" if self.digest else self.model

    @classmethod
    def connect(cls, config: "RerankConfig") -> "OllamaEmbedder":
        """Usage: ``OllamaEmbedder.connect(cfg)``; lists installed models and selects the requested one."""
        assert config.host is not None and config.model is not None, "resolve() the config first"
        client = make_client(config.host, config.timeout)
        try:
            installed = list_models(client)
        except EmbedFailure:
            close_client(client)
            raise
        name = match_installed(config.model, list(installed))
        if name is None:
            close_client(client)
            raise EmbedFailure("model-missing", f"{config.model} is not installed on {config.host}")
        return cls(config.host, name, config.timeout, installed[name], client)

    def embed(self, inputs: list[str]) -> list[np.ndarray]:
        """Usage: ``embedder.embed(texts)`` -> one float32 vector per text, in one request."""
        response = call_ollama(lambda: self.client.embed(model=self.model, input=inputs))
        return _as_vectors(getattr(response, "embeddings", None), len(inputs))

    def close(self) -> None:
        """Usage: ``embedder.close()``; releases the HTTP connection pool."""
        close_client(self.client)


def make_client(host: str, timeout: float) -> Any:
    """Usage: ``make_client("http://127.0.0.1:11434", 5.0)``; no redirects, no proxy from the environment."""
    try:
        import ollama
    except ImportError:
        raise EmbedFailure("backend-unavailable", "the ollama package is not installed (pip install vaulteval[rerank])") from None
    # Redirects and environment proxies could carry text to a host resolve() never approved.
    # Plain http has no TLS to verify: skipping the CA bundle load saves time on every call.
    verify = host.lower().startswith("https://")
    return ollama.Client(host=host, timeout=timeout, follow_redirects=False, trust_env=False, verify=verify)


def close_client(client: Any) -> None:
    """Usage: ``close_client(client)``; closes an ollama.Client, ignoring errors."""
    try:
        client.close()
    except Exception:  # noqa: BLE001 - closing is best effort
        pass


def list_models(client: Any) -> dict[str, str]:
    """Usage: ``list_models(client)`` -> {installed name: digest}."""
    response = call_ollama(client.list)
    models = {}
    for entry in getattr(response, "models", None) or []:
        name = getattr(entry, "model", None)
        if name:
            models[name] = getattr(entry, "digest", None) or ""
    return models


def call_ollama(fn: Any) -> Any:
    """Usage: ``call_ollama(client.list)``; runs one client call, its exceptions become EmbedFailure slugs."""
    import httpx
    import ollama

    try:
        return fn()
    except ConnectionError as exc:  # the client's wrapper around httpx.ConnectError
        raise EmbedFailure("ollama-unreachable", str(exc)) from None
    except httpx.TimeoutException as exc:
        raise EmbedFailure("timeout", type(exc).__name__) from None
    except ollama.ResponseError as exc:
        text = str(exc.error).lower()
        if exc.status_code == 404 and ("not found" in text or "model" in text):
            raise EmbedFailure("model-missing", str(exc)) from None
        raise EmbedFailure("http-error", str(exc)[:200]) from None
    except httpx.HTTPError as exc:
        raise EmbedFailure("http-error", f"{type(exc).__name__}: {exc}"[:200]) from None
    except ValueError as exc:  # undecodable JSON, or a response the client's models reject
        raise EmbedFailure("bad-response", f"{type(exc).__name__}: {exc}"[:200]) from None


# ------------------------------------------------------- sentence-transformers

_ST_MODELS: dict[str, Any] = {}
_ST_LOCK = threading.Lock()
_ST_ENCODE_LOCK = threading.Lock()
# A query (a handful of short texts) is encoded on one thread: on a busy machine torch's thread pool
# spends far longer in barriers than one thread needs to encode it (docs/benchmarks.md).
SINGLE_THREAD_MAX_TEXTS = 8


def st_available() -> bool:
    """Usage: ``st_available()`` -> True when sentence-transformers is importable (not imported)."""
    import importlib.util

    return importlib.util.find_spec("sentence_transformers") is not None


def load_st_model(model: str) -> Any:
    """Usage: ``load_st_model(path_or_name)`` -> a SentenceTransformer, loaded once per process, offline."""
    with _ST_LOCK:
        if model in _ST_MODELS:
            return _ST_MODELS[model]
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedFailure("backend-unavailable", f"sentence-transformers is not importable ({exc})") from None
        _quiet_model_loading()
        try:
            loaded = SentenceTransformer(model, device="cpu", local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - any load failure means: no usable local model
            raise EmbedFailure("model-missing", f"{model}: {type(exc).__name__}: {exc}"[:300]) from None
        _ST_MODELS[model] = loaded
        return loaded


@dataclass
class SentenceTransformerEmbedder:
    """Embeds with a local sentence-transformers model, never touching the network."""

    model: str
    batch_size: int
    st_model: Any = field(default=None, repr=False)
    source: str = "sentence-transformers"
    form: str = "torch-fp32"

    @property
    def scheme(self) -> InputScheme:
        """Usage: ``embedder.scheme.document_prefix``; chosen by the model folder or id."""
        return input_scheme(self.model)

    @property
    def model_name(self) -> str:
        """What a store records: the shipped MiniLM by package and version, else the folder or model id."""
        from vaulteval.embeddings.models import st_model_name

        return st_model_name(self.model)

    @property
    def model_key(self) -> str:
        """Usage: ``embedder.model_key``; cache identity: the model's name (``model_name``)."""
        return self.model_name

    @classmethod
    def load(cls, config: "RerankConfig") -> "SentenceTransformerEmbedder":
        """Usage: ``SentenceTransformerEmbedder.load(cfg)``; the model loads on the first ``embed`` (reusing one
        already loaded in this process), so a provision with nothing new to embed never loads it."""
        assert config.model is not None, "resolve() the config first"
        return cls(config.model, config.batch_size)

    def embed(self, inputs: list[str]) -> list[np.ndarray]:
        """Usage: ``embedder.embed(texts)`` -> one float32 vector per text (not normalized)."""
        if self.st_model is None:
            self.st_model = load_st_model(self.model)  # EmbedFailure("model-missing") when it cannot load
        try:
            with _ST_ENCODE_LOCK, _torch_threads(1 if len(inputs) <= SINGLE_THREAD_MAX_TEXTS else None):
                # one encode at a time: the model is shared by every thread
                raw = self.st_model.encode(inputs, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        except Exception as exc:  # noqa: BLE001 - a failed encode is a fallback, never a crash
            raise EmbedFailure("backend-error", f"{type(exc).__name__}: {exc}"[:200]) from None
        return _as_vectors(raw, len(inputs))

    def close(self) -> None:
        """Usage: ``embedder.close()``; keeps the model loaded for the next call."""


@contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` for the block (None: left as they are)."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _quiet_model_loading() -> None:
    """Loading a local model is not long work: keep its progress bar out of stderr and notebooks."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass
