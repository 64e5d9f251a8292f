"""The query path's digests (vaulteval.vault.digest) are hashlib's, bit for bit.

Usage: ``.venv/bin/python -m pytest tests/vault/test_digest.py -q``
"""

from __future__ import annotations

import hashlib

import pytest

from vaulteval.vault import digest
from vaulteval.vault.digest import blake2b, sha256, text_sha256


@pytest.mark.parametrize("data", [b"", b"abc", "Entkalken – 除垢\n".encode(), bytes(range(256)) * 300])
def test_the_digests_are_hashlibs(data: bytes) -> None:
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert blake2b(data, digest_size=16).digest() == hashlib.blake2b(data, digest_size=16).digest()


def test_a_text_digest_is_right_for_every_string_whatever_was_hashed_before() -> None:
    texts = ["", "abc", "abc", "Entkalken – 除垢\n", "abc" + "d", "x" * 5000]
    for text in texts + texts[::-1]:
        assert text_sha256(text) == "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert text_sha256(text) == text_sha256("".join(list(text)))  # the same text in another object


def test_openssl_hashing_gives_the_same_digests(monkeypatch) -> None:
    """A warm Retriever hashes with hashlib (prefer_openssl); the digests are the builtin's."""
    monkeypatch.setattr(digest, "_sha256", digest._sha256)  # restored after the test
    texts = ["", "abc", "Entkalken – 除垢\n", "x" * 5000]
    builtin = [(digest.text_sha256(t + " "), digest.bytes_sha256(t.encode())) for t in texts]
    digest.prefer_openssl()
    assert digest._sha256 is hashlib.sha256
    assert [(digest.text_sha256(t + " "), digest.bytes_sha256(t.encode())) for t in texts] == builtin
