"""SHA-256 and BLAKE2b for the query path, without loading OpenSSL unless it pays.

Usage: ``sha256(data).hexdigest()``, ``blake2b(data, digest_size=16).digest()``,
``bytes_sha256(data)`` and ``text_sha256(text)`` -> ``"sha256:<hex>"`` (a text as UTF-8);
``prefer_openssl()`` in a process that will verify many chunks.

``hashlib`` loads OpenSSL's libcrypto when imported, which costs a one-query CLI
call more than hashing the few notes it verifies; CPython's own builtin
implementations give the same digests. A process kept open for many queries
(a warm ``Retriever``) pays that import once and hashes with OpenSSL from then
on, several times faster per note and chunk where the CPU has SHA
instructions. Any other interpreter falls back to ``hashlib``.
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # CPython 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:  # pragma: no cover - another interpreter
        from hashlib import sha256
try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another interpreter
    from hashlib import blake2b

__all__ = ["sha256", "blake2b", "bytes_sha256", "text_sha256", "prefer_openssl"]

_sha256 = sha256  # what bytes_sha256 and text_sha256 hash with: the builtin until prefer_openssl()
_last_text: tuple[str, str] = ("", "sha256:" + sha256(b"").hexdigest())


def prefer_openssl() -> None:
    """Hash with OpenSSL (``hashlib``) from now on: the same digests, faster, after a one-time import."""
    global _sha256
    import hashlib

    _sha256 = hashlib.sha256


def bytes_sha256(data: bytes) -> str:
    """``"sha256:<hex>"`` of ``data``."""
    return "sha256:" + _sha256(data).hexdigest()


def text_sha256(text: str) -> str:
    """``"sha256:<hex>"`` of ``text`` encoded as UTF-8. The last answer is remembered for that very string
    object: a chunk record's body is hashed when the store rebuilds its ``body_hash`` and again when the
    record is checked against the index."""
    global _last_text
    last = _last_text  # one read: another thread may replace it meanwhile, never half of it
    if last[0] is text:
        return last[1]
    digest = "sha256:" + _sha256(text.encode("utf-8")).hexdigest()
    _last_text = (text, digest)
    return digest
