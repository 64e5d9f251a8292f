"""Rerank through the real ``ollama`` client over HTTP to a loopback Ollama stand-in with real MiniLM vectors.

Usage: ``.venv/bin/python -m pytest tests/embeddings/test_rerank.py -q``

Nothing in the package is mocked: faults are produced by the server
(tests/ollama_server.py), expected scores by numpy on sentence-transformers
embeddings of the same model.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vaulteval.embeddings.rerank import RerankConfig, RerankOutcome, peek, rerank

from ollama_server import FAULT_REASONS, SocketAudit, minilm_model, ollama_server, ollama_server_session  # noqa: F401

QUERY = "how do I descale the espresso machine"
TEXTS = [
    "Descaling the espresso machine: run a citric acid solution through the boiler, then rinse twice.",
    "The tax return deadline is the end of April; keep receipts in the finance folder.",
    "Monthly maintenance for the coffee maker includes descaling and cleaning the group head.",
    "Tomatoes need full sun and regular watering during the summer months.",
]


def expected_cosines(model: Any, query: str, texts: list[str]) -> np.ndarray:
    """Cosines computed independently: sentence-transformers embeddings, numpy arithmetic."""
    emb = model.encode([query, *texts], convert_to_numpy=True, show_progress_bar=False).astype(np.float64)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return emb[1:] @ emb[0]


def cfg(server: Any, **kw: Any) -> RerankConfig:
    return RerankConfig(host=server.url, **{"model": "all-minilm", **kw})


def test_success_gives_true_cosines(ollama_server: Any, minilm_model: Any) -> None:
    out = rerank(QUERY, TEXTS, cfg(ollama_server))
    assert isinstance(out, RerankOutcome)
    assert (out.source, out.model, out.fallback_reason) == ("ollama", "all-minilm:latest", None)
    assert out.scores is not None and len(out.scores) == len(TEXTS)
    np.testing.assert_allclose(out.scores, expected_cosines(minilm_model, QUERY, TEXTS), atol=1e-5)
    assert out.scores[0] > out.scores[2] > max(out.scores[1], out.scores[3])
    assert out.seconds > 0 and (out.cache_hits, out.cache_misses) == (0, len(TEXTS) + 1)
    embeds = ollama_server.embed_requests()
    assert [(r.path, r.model) for r in embeds] == [("/api/embed", "all-minilm:latest")] * 2
    assert embeds[0].inputs == (QUERY,) and embeds[1].inputs == tuple(TEXTS)  # plain scheme: no prefixes
    assert len(ollama_server.calls("/api/tags")) == 1


def test_nomic_models_get_task_prefixes(ollama_server: Any, minilm_model: Any) -> None:
    out = rerank(QUERY, TEXTS, RerankConfig(host=ollama_server.url))  # default model: nomic-embed-text-v2-moe
    assert out.fallback_reason is None and out.model == "nomic-embed-text-v2-moe:latest"
    query_req, docs_req = ollama_server.embed_requests()
    assert query_req.inputs == (f"search_query: {QUERY}",)
    assert docs_req.inputs == tuple(f"search_document: {t}" for t in TEXTS)
    prefixed = expected_cosines(minilm_model, f"search_query: {QUERY}", [f"search_document: {t}" for t in TEXTS])
    np.testing.assert_allclose(out.scores, prefixed, atol=1e-5)




@pytest.mark.parametrize("fault, reason", FAULT_REASONS)
def test_every_fault_falls_back_with_its_reason(ollama_server: Any, tmp_path: Path, fault: str, reason: str) -> None:
    cache = tmp_path / "embeddings.sqlite"
    ollama_server.set_fault(fault)
    # Only the slow fault gets a short timeout: elsewhere a busy CI machine must not turn into "timeout".
    out = rerank(QUERY, TEXTS, cfg(ollama_server, timeout=0.3 if fault == "slow" else 5.0), cache_path=cache)
    assert out.scores is None
    assert out.fallback_reason == reason
    assert out.source == "ollama" and out.model.startswith("all-minilm")
    if fault == "slow":
        assert out.seconds < ollama_server.slow_seconds  # the client timeout, not the server, bounds the wait
    assert not cache.exists()  # nothing from a failed set is cached; a fallback leaves no file behind
    if fault in ("missing-model", "down"):
        assert ollama_server.embed_requests() == []


def test_fault_on_first_batch_stops_further_requests(ollama_server: Any) -> None:
    ollama_server.set_fault("500")
    out = rerank(QUERY, TEXTS * 3, cfg(ollama_server, batch_size=2))
    assert out.fallback_reason == "http-error"
    assert len(ollama_server.embed_requests()) == 1


def test_one_bad_candidate_in_a_later_batch(ollama_server: Any) -> None:
    """The bad vector sits in a doc batch; the query (a batch of one) is fine."""
    ollama_server.set_fault("one-bad-candidate")
    out = rerank(QUERY, TEXTS, cfg(ollama_server))
    assert out.scores is None and out.fallback_reason == "candidate-failed"
    assert [r.n_inputs for r in ollama_server.embed_requests()] == [1, len(TEXTS)]


@pytest.mark.parametrize("n, batch", [(7, 3), (6, 3), (1, 64), (5, 1)])
def test_batching(ollama_server: Any, n: int, batch: int) -> None:
    texts = [f"note {i}: {TEXTS[i % len(TEXTS)]}" for i in range(n)]
    out = rerank(QUERY, texts, cfg(ollama_server, batch_size=batch))
    assert out.fallback_reason is None and len(out.scores) == n
    sizes = [r.n_inputs for r in ollama_server.embed_requests()]
    assert sizes[0] == 1  # the query
    assert len(sizes) == 1 + math.ceil(n / batch)
    assert sum(sizes[1:]) == n and max(sizes[1:]) <= batch


def test_duplicate_texts_are_embedded_once(ollama_server: Any) -> None:
    texts = [TEXTS[0], TEXTS[1], TEXTS[0]]
    out = rerank(QUERY, texts, cfg(ollama_server))
    assert out.scores[0] == out.scores[2] and out.scores[0] != out.scores[1]
    assert [r.n_inputs for r in ollama_server.embed_requests()] == [1, 2]


def test_untagged_model_matches_only_itself_or_latest(ollama_server: Any) -> None:
    ollama_server.models = ["nomic-embed-text:v1.5", "all-minilm:latest"]
    out = rerank(QUERY, TEXTS, cfg(ollama_server, model="nomic-embed-text"))
    assert out.scores is None and out.fallback_reason == "model-missing"
    assert ollama_server.embed_requests() == []  # never asked, never pulled
    assert not ollama_server.calls("/api/pull")
    out = rerank(QUERY, TEXTS, cfg(ollama_server, model="nomic-embed-text:v1.5"))
    assert out.fallback_reason is None and out.model == "nomic-embed-text:v1.5"
    assert {r.model for r in ollama_server.embed_requests()} == {"nomic-embed-text:v1.5"}


def test_host_from_environment(ollama_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{ollama_server.port}")  # scheme-less, as people set it
    out = rerank(QUERY, TEXTS[:2], RerankConfig(model="all-minilm"))
    assert out.fallback_reason is None and len(ollama_server.embed_requests()) == 2


def test_peek_reports_without_embedding(ollama_server: Any) -> None:
    info = peek(cfg(ollama_server))
    assert info["backend"] == "ollama" and info["host"] == ollama_server.url
    assert (info["reachable"], info["model_installed"], info["resolved_model"]) == (True, True, "all-minilm:latest")
    assert info["digest"] == ollama_server.digest("all-minilm:latest").removeprefix("sha256:")
    assert info["input_scheme"] == "plain" and info["remote"] is False and info["error"] is None
    assert peek(RerankConfig(host=ollama_server.url))["input_scheme"] == "nomic-prefix-v1"
    assert ollama_server.embed_requests() == []
    ollama_server.set_fault("missing-model")
    missing = peek(cfg(ollama_server))
    assert (missing["reachable"], missing["model_installed"], missing["error"]) == (True, False, "model-missing")
    ollama_server.set_fault("down")
    down = peek(cfg(ollama_server))
    assert (down["reachable"], down["error"]) == (False, "ollama-unreachable")


def test_peek_sentence_transformers_loads_nothing() -> None:
    info = peek(RerankConfig(backend="sentence-transformers"))
    assert info["backend"] == "sentence-transformers" and info["host"] is None
    assert info["backend_available"] is True and info["model_installed"] is True
    assert Path(info["model"]).name == "model"


def test_sentence_transformers_backend_matches_ollama(ollama_server: Any, tmp_path: Path) -> None:
    via_ollama = rerank(QUERY, TEXTS, cfg(ollama_server))
    with SocketAudit() as events:  # fully offline: no connection, no name lookup
        local = rerank(QUERY, TEXTS, RerankConfig(backend="sentence-transformers"), cache_path=tmp_path / "e.sqlite")
    assert events == []
    assert local.fallback_reason is None and local.source == "sentence-transformers"
    assert Path(local.model).is_dir()
    np.testing.assert_allclose(local.scores, via_ollama.scores, atol=1e-5)
    again = rerank(QUERY, TEXTS, RerankConfig(backend="sentence-transformers"), cache_path=tmp_path / "e.sqlite")
    assert (again.cache_hits, again.cache_misses) == (len(TEXTS) + 1, 0)
    assert again.scores == local.scores


def test_sentence_transformers_unknown_model_falls_back() -> None:
    with SocketAudit() as events:  # a hub id is looked up in the local cache only, never downloaded
        out = rerank(QUERY, TEXTS, RerankConfig(backend="sentence-transformers", model="nobody/no-such-model-xyz"))
    assert out.scores is None and out.fallback_reason == "model-missing"
    assert events == []
