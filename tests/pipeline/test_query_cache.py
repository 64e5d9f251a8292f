"""The query path never writes under the vault: its vectors are cached in the user's cache folder, per vault.

A sample vault with MiniLM vectors (``provision --embed``, sentence-transformers, offline) is queried with the
default pipeline (the hybrid over the store) through the CLI and through the MCP server's ``search``. Every
entry under the vault, ``.vault-meta`` included, keeps its bytes and mtime and no entry appears; the query's
vector lands in ``$VAULTEVAL_CACHE/query/<vault key>/embeddings.sqlite`` (each test has its own), and the same
query again is answered from it: the embedder is not asked again.
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from pipeline_fixtures import copy_sample, run_main, snapshot
from vaulteval import Vault
from vaulteval.embeddings import keptcache
from vaulteval.embeddings import rerank as rerank_module
from vaulteval.embeddings.embedcache import input_key
from vaulteval.pipeline.spec import default_pipeline
from vaulteval.vault.usercache import query_embed_cache, vault_key

QUERY = "how often should I descale"
NO_OLLAMA = "http://127.0.0.1:9"  # the discard port: nothing answers


@pytest.fixture
def embedded_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the query embedder is asked to embed, in order."""
    asked: list[str] = []
    real = rerank_module.open_query_embedder

    class Counting:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

        def embed(self, texts: list[str]) -> Any:
            asked.extend(texts)
            return self._inner.embed(texts)

    monkeypatch.setattr(rerank_module, "open_query_embedder", lambda *a, **k: Counting(real(*a, **k)))
    monkeypatch.setattr(keptcache, "_KEPT", OrderedDict())  # no connection kept from another test's cache
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    return asked


def _cached_keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT input_sha256 FROM embeddings")}


def test_a_default_retrieve_writes_nothing_under_the_vault_and_caches_per_vault(
        embedded_sample: Path, eval_cache: Path, embedded_texts: list[str]) -> None:
    before = snapshot(embedded_sample)
    code, out, err = run_main("retrieve", "--vault", embedded_sample, QUERY, "--top", 10)
    assert code == 0, err
    first = json.loads(out)
    assert first["label"]["first_stage"] == "hybrid:cc" and first["label"]["fallbacks"] == []
    assert embedded_texts == [QUERY]
    assert snapshot(embedded_sample) == before  # bytes, mtimes, and no new entry, .vault-meta included
    cache = query_embed_cache(Vault(embedded_sample))
    assert cache == eval_cache / "query" / vault_key(Vault(embedded_sample)) / "embeddings.sqlite"
    assert _cached_keys(cache) == {input_key(QUERY)}  # a hash of the query, never its text

    code, out, err = run_main("retrieve", "--vault", embedded_sample, QUERY, "--top", 10)
    assert code == 0, err
    assert embedded_texts == [QUERY]  # the second run read the vector from the cache
    assert [c["chunk_id"] for c in json.loads(out)["candidates"]] == [c["chunk_id"] for c in first["candidates"]]
    assert snapshot(embedded_sample) == before


def test_an_mcp_search_writes_nothing_under_the_vault_and_hits_the_cache(
        embedded_sample: Path, embedded_texts: list[str]) -> None:
    pytest.importorskip("mcp")
    from vaulteval.server.app import call
    from vaulteval.server.warm import Served, WarmVault

    before = snapshot(embedded_sample)
    served = Served(default_pipeline(Vault(embedded_sample)))  # what `vaulteval mcp` serves on this vault
    warm = WarmVault(Vault(embedded_sample), served)
    first = call(warm, "search", {"query": QUERY, "limit": 5})
    assert first.isError is False, first.content
    assert first.structuredContent["label"]["first_stage"] == "hybrid:cc"
    again = call(warm, "search", {"query": QUERY, "limit": 5})
    assert again.isError is False, again.content
    assert embedded_texts == [QUERY]  # embedded once; the second search was served from the cache
    assert [c["page_path"] for c in again.structuredContent["candidates"]] == \
        [c["page_path"] for c in first.structuredContent["candidates"]]
    assert snapshot(embedded_sample) == before
    assert input_key(QUERY) in _cached_keys(query_embed_cache(Vault(embedded_sample)))


def test_two_vaults_get_two_cache_folders(embedded_sample: Path, tmp_path: Path) -> None:
    other = copy_sample(tmp_path / "other")
    assert query_embed_cache(Vault(embedded_sample)).parent != query_embed_cache(Vault(other)).parent


@pytest.mark.parametrize("where", ["a-file", "inside-the-vault"])
def test_a_cache_folder_that_cannot_be_used_caches_nothing_and_retrieval_goes_on(
        embedded_sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedded_texts: list[str],
        where: str) -> None:
    if where == "a-file":
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("x")
        monkeypatch.setenv("VAULTEVAL_CACHE", str(blocker / "cache"))  # mkdir under a file fails
    else:
        monkeypatch.setenv("VAULTEVAL_CACHE", str(embedded_sample / "cache"))
    before = snapshot(embedded_sample)
    for _ in range(2):
        code, out, err = run_main("retrieve", "--vault", embedded_sample, QUERY)
        assert code == 0 and err == "" and json.loads(out)["label"]["fallbacks"] == []
    assert embedded_texts == [QUERY, QUERY]  # nothing cached, so embedded each time
    assert snapshot(embedded_sample) == before
