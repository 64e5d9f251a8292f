"""SHA-256 and BLAKE2b for the query path, without loading OpenSSL.

Usage: ``sha256(data).hexdigest()``, ``blake2b(data, digest_size=16).digest()``.

``hashlib`` loads OpenSSL's libcrypto when imported, which costs a one-query CLI
call more than hashing the few notes it verifies; CPython's own builtin
implementations give the same digests. Any other interpreter falls back to
``hashlib``.
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

__all__ = ["sha256", "blake2b"]
