"""Which hosts may receive vault text: the Ollama host rules shared by rerank and LLM prefixes, and Dask workers.

Usage::

    normalize_host("0.0.0.0:11434")            # -> "http://127.0.0.1:11434"
    normalize_host("http://10.0.0.5:11434")    # RerankConfigError unless allow_remote=True

Hosts must be http(s) URLs (scheme-less means http, port 11434, as
``OLLAMA_HOST`` is usually written) without credentials, query or fragment;
anything but loopback needs ``allow_remote``. No name is ever resolved: a
host name other than ``localhost`` counts as remote. This module sits at the
bottom of the package with ``errors`` so every stage can apply the same rule.
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlsplit

from vaulteval.errors import UsageError

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
OLLAMA_PORT = 11434

_HOSTNAME_RE = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?")
_PATH_RE = re.compile(r"(/[A-Za-z0-9._~-]+)*/?")


class RerankConfigError(UsageError, ValueError):
    """Rerank settings are unusable (CLI maps this to exit 2)."""


def request_timeout(value: object, most: float, what: str) -> float:
    """``value`` as the seconds one request to the host may take: more than 0 and at most ``most`` (a bool, NaN
    or infinity is not; RerankConfigError, exit 2, names ``what``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
        raise RerankConfigError(f"{what} must be a number of seconds in (0, {most:g}], got {value!r}")
    return float(value)


def host_setting(host: str | None) -> str:
    """Usage: ``host_setting(None)``: the explicit host, else $OLLAMA_HOST, else $OLLAMA_URL, else the default."""
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


def host_is_local(host: str) -> bool:
    """Usage: ``host_is_local("http://[::1]:11434")`` -> True for a loopback host."""
    hostname = urlsplit(host).hostname or ""
    try:
        ip = ipaddress.ip_address(hostname)
    except ValueError:
        ip = None
    return is_loopback(hostname, ip)


def address_is_local(address: str) -> bool:
    """Usage: ``address_is_local("tcp://127.0.0.1:8786")`` -> True: a Dask scheduler or worker on this machine.

    The same loopback rule as for Ollama hosts (no name is resolved; only
    ``localhost`` and loopback literals count); ``inproc://`` is this process.
    """
    text = address.strip()
    if text.startswith("inproc://"):
        return True
    try:
        hostname = urlsplit(text if "://" in text else f"tcp://{text}").hostname or ""
    except ValueError:
        return False
    try:
        ip = ipaddress.ip_address(hostname)
    except ValueError:
        ip = None
    return bool(hostname) and is_loopback(hostname, ip)
