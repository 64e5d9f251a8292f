"""The rerank fault matrix end to end: `vaulteval retrieve` -> real ollama client -> loopback server.

Each case checks the exit code, the strategy and rerank_source labels, that the
order is exactly the BM25 order on a fallback (and a true cosine order on
success), and that nothing under the vault changed: the vectors are cached in
the user's cache folder ($VAULTEVAL_CACHE, a test's own), never in the vault.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ollama_server import FAULT_REASONS
from ollama_server import load_minilm, normalized_embed_fn
from pipeline_fixtures import LONG_NOTE, chunk_records, run_main, snapshot
from vaulteval import Vault
from vaulteval.vault.usercache import query_embed_cache

QUERY = "how do I descale the espresso machine"



def _retrieve(vault: Path, *extra: Any) -> tuple[int, dict, str]:
    code, out, err = run_main("retrieve", "--vault", vault, QUERY, "--top", 10, *extra)
    return code, (json.loads(out) if out.strip() else {}), err


@pytest.fixture
def reranking(fresh_vault: Path, ollama_server: Any, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url)
    code, bm25, _ = _retrieve(fresh_vault, "--no-rerank")
    assert code == 0 and bm25["candidates"]
    return fresh_vault, bm25


@pytest.mark.parametrize("fault, reason", FAULT_REASONS)
def test_every_fault_keeps_bm25_order_and_says_why(reranking, ollama_server: Any, fault: str, reason: str) -> None:
    vault, bm25 = reranking
    before = snapshot(vault)
    ollama_server.set_fault(fault)
    timeout = "0.5" if fault == "slow" else "30"
    code, result, err = _retrieve(vault, "--model", "all-minilm", "--timeout", timeout)
    assert code == 0, err
    assert result["strategy"] == f"bm25+noop-rerank:{reason}"
    assert [c["chunk_id"] for c in result["candidates"]] == [c["chunk_id"] for c in bm25["candidates"]]
    for cand in result["candidates"]:
        assert cand["rerank_source"] == f"noop:{reason}"
        assert "rerank" not in cand["scores"]  # never a cosine mixed into a BM25 ranking, nor a copy of BM25's
    assert snapshot(vault) == before  # a fallback writes nothing at all, not even the cache


def test_success_reranks_by_cosine_and_caches_outside_the_vault(reranking, ollama_server: Any) -> None:
    vault, bm25 = reranking
    before = snapshot(vault)
    code, result, err = _retrieve(vault, "--model", "all-minilm", "--explain")
    assert code == 0, err
    assert result["strategy"] == "bm25+rerank:ollama"
    scores = [c["scores"]["rerank"] for c in result["candidates"]]
    assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 for s in scores)
    assert {c["rerank_source"] for c in result["candidates"]} == {"ollama"}
    assert snapshot(vault) == before
    assert query_embed_cache(Vault(vault)).is_file()


def test_no_rerank_never_touches_the_cache(reranking, ollama_server: Any) -> None:
    vault, _ = reranking
    code, _, err = _retrieve(vault, "--model", "all-minilm")  # fills the cache
    assert code == 0, err
    before = snapshot(vault)
    requests_before = len(ollama_server.requests)
    code, result, _ = _retrieve(vault, "--no-rerank")
    assert code == 0 and result["strategy"] == "bm25-only"
    assert snapshot(vault) == before
    assert len(ollama_server.requests) == requests_before  # no model was contacted


def test_remote_host_is_refused_before_any_connection(fresh_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ollama_server import SocketAudit

    monkeypatch.setenv("OLLAMA_HOST", "http://203.0.113.7:11434")
    before = snapshot(fresh_vault)
    with SocketAudit() as events:
        code, result, err = _retrieve(fresh_vault, "--embedder", "ollama")  # Ollama is tried only when named
    assert code == 2 and result == {}
    assert "--allow-remote-ollama" in err and len(err.strip().splitlines()) == 1
    assert events == []
    assert snapshot(fresh_vault) == before


def test_rerank_orders_pages_by_their_best_cosine_chunk(reranking) -> None:
    """The whole BM25 pool is reranked by cosine, then each page keeps its best-cosine chunk.

    The expected list is computed here from the raw BM25 pool (``index query``, no dedupe) and the
    same MiniLM model the loopback server runs, independently of the pipeline's own code.
    """
    vault, _ = reranking
    code, out, err = run_main("index", "query", "--vault", vault, QUERY, "--top", 20)
    assert code == 0, err
    pool = json.loads(out)
    assert len(pool) == 20
    texts = {f"{r['page_address']}:{r['chunk_index']}": r["contextualized_text"] for r in chunk_records(vault)}
    vectors = normalized_embed_fn(load_minilm())([QUERY] + [texts[h["chunk_id"]] for h in pool])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = {h["chunk_id"]: float(v @ vectors[0]) for h, v in zip(pool, vectors[1:])}
    best: dict[str, str] = {}
    hit_page = {h["chunk_id"]: h["page_path"] for h in pool}
    for hit in pool:
        page, cid = hit["page_path"], hit["chunk_id"]
        if page not in best or cosine[cid] > cosine[best[page]]:
            best[page] = cid
    expected = sorted(best.values(), key=lambda cid: -cosine[cid])

    code, result, err = _retrieve(vault, "--model", "all-minilm", "--bm25-top", 20, "--top", 1000)
    assert code == 0 and result["strategy"] == "bm25+rerank:ollama", err
    got = [c["chunk_id"] for c in result["candidates"]]
    # The expected vectors come from one batch of 21, the pipeline's from smaller ones: a last-bit
    # difference may swap two near-equal cosines, so the order is checked up to that.
    assert len(got) == len(expected) and {hit_page[c] for c in got} == {hit_page[c] for c in expected}
    assert all(cosine[c] >= cosine[best[hit_page[c]]] - 1e-6 for c in got)  # each page's best chunk
    assert all(cosine[a] >= cosine[b] - 1e-6 for a, b in zip(got, got[1:]))  # best first
    for cand in result["candidates"]:
        assert cand["scores"]["rerank"] == pytest.approx(cosine[cand["chunk_id"]], abs=1e-4)

    # The case is one that can tell: the rerank changes the page order, and one page's best-cosine
    # chunk is not its best-BM25 chunk (a dedupe before the rerank would keep the other one).
    bm25_pages = list(dict.fromkeys(h["page_path"] for h in pool))
    assert [c["page_path"] for c in result["candidates"]] != bm25_pages
    first_bm25 = {}
    for hit in pool:
        first_bm25.setdefault(hit["page_path"], hit["chunk_id"])
    assert best[LONG_NOTE] != first_bm25[LONG_NOTE]
