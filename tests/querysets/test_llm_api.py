"""--llm-api openai: the llm kind and pregrade through an OpenAI-compatible server (a fake one on loopback), the
model recorded, and the host rules (a remote base URL refused without --allow-egress, before any connection)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.errors import UsageError
from vaulteval.querysets.generate.core import generate_queryset
from vaulteval.querysets.generate.llm import LlmSettings
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault
from vaulteval.workbench.pooling import pool_queryset, read_pool, write_pool
from vaulteval.workbench.pregrade import SCHEMA

from evalkit import make_vault, snapshot, write_yaml
from fake_llm_servers import EgressGuard, FakeServer, Reply

PAGES = {
    "coffee/Grinder.md": "# Espresso grinder settings\n\nThe dial sits at 12 for the dark roast, and two grams are "
                         "purged after changing it so the next shot is not stale.\n",
    "garden/Monstera.md": "# Monstera\n\nRepot it in spring with chunky bark mix in a pot two centimetres wider than "
                          "the old one, then water lightly for a week.\n",
}


def _chat(text: str, model: str = "qwen2.5-7b-instruct-q4_k_m.gguf", fingerprint: str | None = "b4500-abc") -> Reply:
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    if fingerprint:
        body["system_fingerprint"] = fingerprint
    return Reply(200, body)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(make_vault(tmp_path / "v", PAGES))


def test_llm_kind_asks_an_openai_compatible_server_and_records_the_model(vault: Vault, tmp_path: Path) -> None:
    out = tmp_path / "q.yaml"
    before = snapshot(vault.root)
    with FakeServer([_chat("How far should the dial be turned for dark beans?\nWhat to throw away after?")]) as srv:
        rc = main(["queryset", "generate", "--vault", str(vault.root), "--out", str(out), "--kinds", "llm", "--n", "4",
                   "--llm-api", "openai", "--llm-host", srv.url, "--llm-model", "qwen7b", "--quiet"])
        asked = list(srv.requests)
    assert rc == 0 and snapshot(vault.root) == before
    assert {r.path for r in asked} == {"/v1/chat/completions"}  # a base URL without a path means /v1
    body = asked[0].body
    assert body["model"] == "qwen7b" and body["temperature"] == 0 and body["seed"] == 0
    assert body["messages"][0]["role"] == "user" and "Passage:" in body["messages"][0]["content"]
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["generator"]["llm"] == {"api": "openai", "model": "qwen7b",
                                        "served_as": "qwen2.5-7b-instruct-q4_k_m.gguf", "fingerprint": "b4500-abc"}
    assert {q["query"] for q in data["queries"]} == {"How far should the dial be turned for dark beans?",
                                                    "What to throw away after?"}
    assert all(q["kind"] == "llm" and q["variant"] == "qwen7b" for q in data["queries"])
    load_queryset(out, vault)


def test_a_base_url_with_a_path_is_used_as_given(vault: Vault, tmp_path: Path) -> None:
    with FakeServer([_chat("Which pot size for repotting?", fingerprint=None)]) as srv:
        generate_queryset(vault, tmp_path / "q.yaml", kinds=["llm"], n=1,
                          llm=LlmSettings(api="openai", host=f"{srv.url}/lmstudio/v1", model="m", per_note=1))
        assert [r.path for r in srv.requests][0] == "/lmstudio/v1/chat/completions"
    data = yaml.safe_load((tmp_path / "q.yaml").read_text(encoding="utf-8"))
    assert data["generator"]["llm"] == {"api": "openai", "model": "m", "served_as": "qwen2.5-7b-instruct-q4_k_m.gguf"}


def test_the_ollama_digest_is_recorded_when_the_server_lists_the_model(tmp_path: Path) -> None:
    one = Vault(make_vault(tmp_path / "one", {"coffee/Grinder.md": PAGES["coffee/Grinder.md"]}))
    generated = Reply(200, {"model": "llama3.2", "done": True, "response": "How fine for dark beans?"})
    tags = Reply(200, {"models": [{"model": "llama3.2:latest", "name": "llama3.2:latest", "digest": "sha256:feed",
                                   "size": 1, "modified_at": "2026-01-01T00:00:00Z"}]})
    with FakeServer([generated, tags]) as srv:
        generate_queryset(one, tmp_path / "q.yaml", kinds=["llm"], n=1, llm=LlmSettings(host=srv.url, per_note=1))
        paths = [r.path for r in srv.requests]
    assert paths == ["/api/generate", "/api/tags"]
    data = yaml.safe_load((tmp_path / "q.yaml").read_text(encoding="utf-8"))
    assert data["generator"]["llm"] == {"api": "ollama", "model": "llama3.2", "digest": "sha256:feed"}


@pytest.mark.parametrize("reply", [Reply(500, {"error": "model not loaded"}), Reply(200, {"choices": []}),
                                   Reply(200, "not json")])
def test_a_server_that_fails_or_answers_out_of_shape_is_named_in_one_line(vault: Vault, tmp_path: Path, capsys,
                                                                         reply: Reply) -> None:
    with FakeServer([reply]) as srv:
        rc = main(["queryset", "generate", "--vault", str(vault.root), "--out", str(tmp_path / "q.yaml"),
                   "--kinds", "llm", "--n", "2", "--llm-api", "openai", "--llm-host", srv.url, "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "the OpenAI-compatible model 'llama3.2' failed" in err and f"does the server at {srv.url}" in err
    assert not (tmp_path / "q.yaml").exists()


def test_openai_needs_a_base_url(vault: Vault, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--llm-api openai needs --llm-host"):
        generate_queryset(vault, tmp_path / "q.yaml", kinds=["llm"], n=1, llm=LlmSettings(api="openai"))


@pytest.mark.parametrize("command", ["generate", "pregrade"])
def test_a_remote_openai_host_is_refused_without_allow_egress(vault: Vault, tmp_path: Path, capsys,
                                                            command: str) -> None:
    remote = "http://10.1.2.3:8080/v1"
    if command == "generate":
        argv = ["queryset", "generate", "--vault", str(vault.root), "--out", str(tmp_path / "q.yaml"),
                "--kinds", "llm", "--n", "2"]
    else:
        argv = ["queryset", "pregrade", str(_pool(vault, tmp_path)), "--out", str(tmp_path / "graded.yaml")]
    before = snapshot(vault.root)
    with EgressGuard() as attempts:
        rc = main([*argv, "--llm-api", "openai", "--llm-host", remote, "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and attempts == [] and "--allow-egress" in err and "10.1.2.3" in err
    assert snapshot(vault.root) == before


def _pool(vault: Vault, tmp_path: Path) -> Path:
    qs = write_yaml(tmp_path / "qs.yaml", [{"id": "q1", "query": "espresso grinder", "relevant": {}},
                                           {"id": "q2", "query": "monstera repotting", "relevant": {}}], vault="v")
    return write_pool(pool_queryset(vault, load_queryset(qs), ["bm25"], depth=2), tmp_path / "pool.yaml")


def test_pregrade_through_an_openai_compatible_server(vault: Vault, tmp_path: Path) -> None:
    pool_file = _pool(vault, tmp_path)
    with FakeServer([_chat(json.dumps({"grade": 2, "reason": "It says so."}))]) as srv:
        rc = main(["queryset", "pregrade", str(pool_file), "--out", str(tmp_path / "graded.yaml"), "--llm-api",
                   "openai", "--llm-host", f"{srv.url}/v1", "--llm-model", "qwen7b", "--quiet"])
        bodies = [r.body for r in srv.requests]
    graded = read_pool(tmp_path / "graded.yaml")
    assert rc == 0 and len(bodies) == len(graded["pairs"]) >= 2
    for body, pair in zip(bodies, graded["pairs"]):
        assert body["response_format"]["json_schema"]["schema"] == SCHEMA
        assert pair["query"] in body["messages"][0]["content"]
        assert (pair["llm_grade"], pair["llm_model"]) == (2, "qwen7b")
    assert graded["llm"] == {"api": "openai", "model": "qwen7b", "served_as": "qwen2.5-7b-instruct-q4_k_m.gguf",
                             "fingerprint": "b4500-abc"}
