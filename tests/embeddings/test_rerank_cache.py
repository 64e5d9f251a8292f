"""The embedding cache: hits skip requests, bad files and rows are survived, concurrent use is safe.

Usage: ``.venv/bin/python -m pytest tests/embeddings/test_rerank_cache.py -q``
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vaulteval.embeddings.embedcache import EmbeddingCache, input_key
from vaulteval.embeddings.rerank import RerankConfig, rerank

from ollama_server import minilm_model, ollama_server, ollama_server_session  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
QUERY = "espresso machine descaling"
TEXTS = [f"Note {i}: the espresso machine needs descaling step {i} with citric acid." for i in range(6)]


def cfg(server: Any, **kw: Any) -> RerankConfig:
    return RerankConfig(host=server.url, **{"model": "all-minilm", **kw})


def rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT backend, model, scheme, input_sha256, dim, length(vector) FROM embeddings").fetchall()


def test_second_call_is_served_from_cache(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    first = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    assert (first.cache_hits, first.cache_misses) == (0, len(TEXTS) + 1)
    stored = rows(cache)
    assert len(stored) == len(TEXTS) + 1
    digest = ollama_server.digest("all-minilm:latest").removeprefix("sha256:")
    assert {(b, m, s, d, n) for b, m, s, _, d, n in stored} == {("ollama", f"all-minilm:latest@{digest}", "plain", 384, 4 * 384)}
    assert input_key(QUERY) in {r[3] for r in stored}
    ollama_server.reset()
    second = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    assert (second.cache_hits, second.cache_misses) == (len(TEXTS) + 1, 0)
    assert ollama_server.embed_requests() == []
    assert second.scores == first.scores  # float32 round trip: cold and warm agree exactly


def test_only_uncached_texts_are_embedded(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    rerank(QUERY, TEXTS[:4], cfg(ollama_server), cache_path=cache)
    ollama_server.reset()
    out = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    assert (out.cache_hits, out.cache_misses) == (5, 2)
    assert [r.inputs for r in ollama_server.embed_requests()] == [tuple(TEXTS[4:])]


def test_cache_is_keyed_by_model_and_scheme(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    nomic = rerank(QUERY, TEXTS, cfg(ollama_server, model="nomic-embed-text-v2-moe"), cache_path=cache)
    assert nomic.cache_hits == 0
    assert {r[2] for r in rows(cache)} == {"plain", "nomic-prefix-v1"}


def test_repulled_model_does_not_reuse_vectors(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    ollama_server.digest_salt = "re-pulled"
    out = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    assert out.fallback_reason is None and out.cache_hits == 0


def test_dimension_differing_from_cache_falls_back(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    ollama_server.dimension = 128  # the server now answers with shorter (but valid) vectors
    out = rerank("a query never seen before", TEXTS, cfg(ollama_server), cache_path=cache)
    assert out.scores is None and out.fallback_reason == "bad-dimension"
    assert {r[4] for r in rows(cache)} == {384}  # the mismatching vector was not stored


@pytest.mark.parametrize("garbage", [b"this is not a database" * 100, b"SQLite format 3\x00" + os.urandom(3000)])
def test_corrupt_cache_file_is_replaced(ollama_server: Any, tmp_path: Path, garbage: bytes) -> None:
    cache = tmp_path / "embeddings.sqlite"
    cache.write_bytes(garbage)
    out = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    assert out.fallback_reason is None and out.scores is not None
    assert len(rows(cache)) == len(TEXTS) + 1  # a fresh, working database took its place
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left behind
    warm = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    assert warm.cache_misses == 0


def test_malformed_row_is_ignored_and_rewritten(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    first = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    with sqlite3.connect(cache) as conn:
        conn.execute("UPDATE embeddings SET vector = zeroblob(4 * dim) WHERE input_sha256 = ?", (input_key(TEXTS[0]),))
        conn.execute("UPDATE embeddings SET vector = x'00' WHERE input_sha256 = ?", (input_key(TEXTS[1]),))
    ollama_server.reset()
    out = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=cache)
    assert (out.cache_hits, out.cache_misses) == (len(TEXTS) - 1, 2)
    assert out.scores[2:] == first.scores[2:]  # the same cached vectors: the same bits
    np.testing.assert_allclose(out.scores[:2], first.scores[:2], rtol=0, atol=1e-6)  # re-embedded in a smaller batch
    assert [r.inputs for r in ollama_server.embed_requests()] == [tuple(TEXTS[:2])]
    assert {r[5] for r in rows(cache)} == {4 * 384}


def test_cache_put_refuses_invalid_vectors(tmp_path: Path) -> None:
    with EmbeddingCache.open(tmp_path / "c.sqlite") as cache:
        assert cache.usable
        written = cache.put("ollama", "m", "plain", {"a": np.array([np.nan, 1.0]), "b": np.zeros(3), "c": np.array([1.0, 2.0])})
        assert written == 1
        got = cache.get("ollama", "m", "plain", ["a", "b", "c"])
    assert list(got) == ["c"] and got["c"].dtype == np.float32 and got["c"].tolist() == [1.0, 2.0]


def test_missing_folder_or_symlink_disables_cache_only(ollama_server: Any, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "embeddings.sqlite"
    out = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=missing)
    assert out.fallback_reason is None and not missing.parent.exists()
    target = tmp_path / "elsewhere.sqlite"
    link = tmp_path / "embeddings.sqlite"
    link.symlink_to(target)
    out = rerank(QUERY, TEXTS, cfg(ollama_server), cache_path=link)
    assert out.fallback_reason is None and not target.exists()


def test_concurrent_threads_share_one_cache(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    results: list[Any] = []
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            texts = TEXTS[i % 3 :] + [f"thread {i} private note"]
            for _ in range(2):
                results.append(rerank(QUERY, texts, cfg(ollama_server), cache_path=cache))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(results) == 8 and all(r.fallback_reason is None for r in results)
    assert len(rows(cache)) == 1 + len(TEXTS) + 4  # every distinct input once


CHILD = textwrap.dedent(
    """
    import json, sys
    from vaulteval.embeddings.rerank import RerankConfig, rerank
    host, cache, tag = sys.argv[1:4]
    texts = [f"shared note {i} about descaling" for i in range(8)] + [f"{tag} note {i}" for i in range(4)]
    outs = [rerank("descale", texts, RerankConfig(host=host, model="all-minilm"), cache_path=cache) for _ in range(3)]
    print(json.dumps([[o.fallback_reason, o.cache_hits, o.cache_misses] for o in outs]))
    """
)


def test_concurrent_processes_share_one_cache(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, ollama_server.url, str(cache), tag],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("alpha", "beta")
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
        runs = json.loads(out)
        assert [r[0] for r in runs] == [None, None, None]
        assert runs[-1][2] == 0  # by the third call everything this process needs is cached
    assert len(rows(cache)) == 1 + 8 + 4 + 4


def test_failed_set_adds_nothing_to_an_existing_cache(ollama_server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    rerank(QUERY, TEXTS[:3], cfg(ollama_server), cache_path=cache)
    before = rows(cache)
    ollama_server.set_fault("one-bad-candidate")
    out = rerank("a new query", TEXTS, cfg(ollama_server), cache_path=cache)
    assert out.fallback_reason == "candidate-failed" and (out.cache_hits, out.cache_misses) == (3, 4)
    assert rows(cache) == before  # not even the (valid) new query vector
