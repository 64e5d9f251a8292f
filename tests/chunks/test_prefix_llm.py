"""Tests for the gated LLM prefix tiers (vaulteval.chunks.prefix_llm).

Usage: ``.venv/bin/python -m pytest tests/chunks/test_prefix_llm.py -q``

Nothing here leaves the machine: providers are loopback fakes, `claude` is a
shell script, and an audit-hook guard blocks and records any non-loopback
connect or name lookup.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from vaulteval.chunks import prefix_llm
from vaulteval.chunks.prefix_llm import (
    EgressNotAllowed,
    PrefixGenerator,
    PrefixSettings,
    RemoteHostNotAllowed,
    choose_tier,
    clean_output,
    egress_notice,
    ollama_base_url,
)

from fake_llm_servers import EgressGuard, FakeServer, Reply, fake_claude

TITLE = "Descaling"
BODY = "# Descaling\n\nRun citric acid through the machine.\n\nRinse twice with water afterwards."
CHUNK = "Rinse twice with water afterwards."


def anthropic_reply(text: str) -> Reply:
    return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"})


def ollama_reply(text: str) -> Reply:
    return Reply(200, {"model": "llama3.2", "created_at": "2025-01-01T00:00:00Z", "response": text, "done": True})


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No real keys, endpoints or proxies; PATH holds only our bin dir and the system dirs."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST", "OLLAMA_URL", "OLLAMA_API_KEY",
                 "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
                 "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]))
    return bin_dir


@pytest.fixture
def guard():
    with EgressGuard() as attempts:
        yield attempts


@pytest.fixture
def claude_record(tmp_path: Path) -> Path:
    return tmp_path / "claude-ran.txt"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the guard itself works (otherwise "no attempts" would prove nothing) -------------------------

def test_guard_blocks_and_records_non_loopback(guard):
    with socket.socket() as sock, pytest.raises(PermissionError):
        sock.connect(("192.0.2.1", 443))
    with pytest.raises(PermissionError):
        socket.getaddrinfo("api.anthropic.com", 443)
    assert [event for event, _ in guard] == ["socket.connect", "socket.getaddrinfo"]


# --- no consent: nothing leaves, nothing runs ------------------------------------------------------

@pytest.mark.parametrize("base_url_set", [True, False])
def test_auto_without_consent_is_synthetic_and_silent(monkeypatch, clean_env, claude_record, guard, base_url_set):
    fake_claude(clean_env, claude_record, stdout="leaked sentence")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    with FakeServer([anthropic_reply("leaked sentence")]) as srv:
        if base_url_set:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        settings = PrefixSettings(tier="auto")
        assert choose_tier(settings) == "synthetic"
        gen = PrefixGenerator(settings)
        assert gen.tier == "synthetic"
        assert [gen.prefix(TITLE, BODY, CHUNK) for _ in range(4)] == [(None, "synthetic")] * 4
        assert srv.requests == []
    assert not claude_record.exists(), "fake claude was run without consent"
    assert guard == []


@pytest.mark.parametrize("tier, provider", [("anthropic-api", "api.anthropic.com"), ("claude-cli", "claude")])
def test_explicit_egress_tier_without_consent_raises(monkeypatch, clean_env, claude_record, guard, tier, provider):
    fake_claude(clean_env, claude_record, stdout="leaked sentence")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    settings = PrefixSettings(tier=tier)
    for call in (lambda: choose_tier(settings), lambda: PrefixGenerator(settings)):
        with pytest.raises(EgressNotAllowed) as err:
            call()
        message = str(err.value)
        assert "--allow-egress" in message and provider in message and "\n" not in message
        assert isinstance(err.value, ValueError)
    assert not claude_record.exists()
    assert guard == []


def test_unknown_tier_is_a_value_error():
    with pytest.raises(ValueError, match="unknown prefix tier"):
        choose_tier(PrefixSettings(tier="gpt"))


def test_auto_with_consent_order(monkeypatch, clean_env, claude_record):
    consent = PrefixSettings(tier="auto", allow_egress=True)
    assert choose_tier(consent) == "synthetic"  # consent alone, no provider available
    fake_claude(clean_env, claude_record, stdout="x")
    assert choose_tier(consent) == "claude-cli"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    assert choose_tier(consent) == "anthropic-api"
    assert not claude_record.exists()  # detection only looks at PATH, never runs the binary


def test_egress_notice(monkeypatch):
    assert egress_notice("synthetic") is None and egress_notice("ollama") is None
    notice = egress_notice("anthropic-api")
    assert notice.startswith("anthropic-api:") and "api.anthropic.com" in notice and "page bodies" in notice
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://llm-gateway.example.org")
    assert "llm-gateway.example.org" in egress_notice("anthropic-api")
    cli = egress_notice("claude-cli")
    assert "claude" in cli and "Anthropic" in cli and "\n" not in cli


# --- anthropic-api with consent -------------------------------------------------------------------

def api_generator(monkeypatch, url: str, **kw) -> PrefixGenerator:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    return PrefixGenerator(PrefixSettings(tier="anthropic-api", allow_egress=True, **kw))


def test_anthropic_api_success(monkeypatch, guard):
    with FakeServer([anthropic_reply("  This excerpt closes the descaling steps.\nSecond line.")]) as srv:
        gen = api_generator(monkeypatch, srv.url)
        assert gen.prefix(TITLE, BODY, CHUNK) == ("This excerpt closes the descaling steps.", "anthropic-api")
    (req,) = srv.requests
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert req.headers["x-api-key"] == "sk-test-key" and req.headers["anthropic-version"]
    assert req.body["model"] == "claude-haiku-4-5"
    content = req.body["messages"][0]["content"]
    assert CHUNK in content and "citric acid" in content and TITLE in content
    assert guard == []


@pytest.mark.parametrize("reply", [
    Reply(500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}),
    Reply(529, {"content": [{"type": "text", "text": "must not be used"}]}),  # status is checked
    Reply(200, {"content": []}),                        # empty answer
    anthropic_reply("   \n  \n"),                       # blank answer
    Reply(200, "not json"),
    Reply(200, {"content": [{"type": "text", "text": "late"}]}, delay=1.5),  # timeout
])
def test_anthropic_api_failures_fall_back(monkeypatch, guard, reply):
    with FakeServer([reply]) as srv:
        gen = api_generator(monkeypatch, srv.url, timeout=0.4)
        assert gen.prefix(TITLE, BODY, CHUNK) == (None, "synthetic")
        assert len(srv.requests) == 1
    assert guard == []


def test_failures_stop_provider_after_three_and_warn_once(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG, logger="vaulteval.chunks.prefix_llm")
    with FakeServer([Reply(500, {})]) as srv:
        gen = api_generator(monkeypatch, srv.url)
        results = [gen.prefix(TITLE, BODY, CHUNK) for _ in range(6)]
        assert results == [(None, "synthetic")] * 6
        assert len(srv.requests) == prefix_llm.MAX_FAILURES == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "disabled" in warnings[0].getMessage()


def test_success_resets_the_failure_count(monkeypatch):
    ok = anthropic_reply("Fine.")
    with FakeServer([Reply(500), Reply(500), ok, Reply(500), Reply(500), ok]) as srv:
        gen = api_generator(monkeypatch, srv.url)
        sources = [gen.prefix(TITLE, BODY, CHUNK)[1] for _ in range(6)]
    assert sources == ["synthetic", "synthetic", "anthropic-api"] * 2
    assert not gen.disabled


def test_anthropic_missing_key_is_synthetic_without_request(monkeypatch, guard):
    with FakeServer([anthropic_reply("x")]) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        gen = PrefixGenerator(PrefixSettings(tier="anthropic-api", allow_egress=True))
        assert gen.prefix(TITLE, BODY, CHUNK) == (None, "synthetic")
        assert srv.requests == []
    assert guard == []


def test_anthropic_plain_http_to_remote_host_refused(monkeypatch, guard):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://api.example.com")
    with pytest.raises(ValueError, match="plain http"):
        PrefixGenerator(PrefixSettings(tier="anthropic-api", allow_egress=True))
    assert guard == []


def test_output_truncated_to_1000_chars(monkeypatch):
    with FakeServer([anthropic_reply("word " * 1000 + "\nsecond line")]) as srv:
        text, source = api_generator(monkeypatch, srv.url).prefix(TITLE, BODY, CHUNK)
    assert source == "anthropic-api" and 990 <= len(text) <= 1000 and "second" not in text


def test_page_body_sent_is_bounded(monkeypatch):
    body = "A" * (prefix_llm.MAX_PAGE_CHARS + 5000)
    with FakeServer([anthropic_reply("ok")]) as srv:
        api_generator(monkeypatch, srv.url).prefix(TITLE, body, CHUNK)
    content = srv.requests[0].body["messages"][0]["content"]
    assert content.count("A") == prefix_llm.MAX_PAGE_CHARS and CHUNK in content


# --- claude-cli with consent ----------------------------------------------------------------------

def cli_generator(**kw) -> PrefixGenerator:
    return PrefixGenerator(PrefixSettings(tier="claude-cli", allow_egress=True, **kw))


def test_claude_cli_success(clean_env, claude_record, guard):
    fake_claude(clean_env, claude_record, stdout="\nThe excerpt ends the descaling how-to.\nextra\n")
    assert cli_generator().prefix(TITLE, BODY, CHUNK) == ("The excerpt ends the descaling how-to.", "claude-cli")
    args, stdin = claude_record.read_text().split("--stdin--\n", 1)
    assert args.splitlines()[0] == "-p"
    assert "citric acid" not in args and CHUNK not in args  # page text never on the command line
    assert "citric acid" in stdin and CHUNK in stdin
    assert guard == []


@pytest.mark.parametrize("kind", ["exit1", "empty", "timeout"])
def test_claude_cli_failures_fall_back(clean_env, claude_record, kind):
    if kind == "exit1":
        fake_claude(clean_env, claude_record, stdout="partial", exit_code=1)
    elif kind == "empty":
        fake_claude(clean_env, claude_record)
    else:
        fake_claude(clean_env, claude_record, stdout="late", sleep=5)
    gen = cli_generator(timeout=0.5)
    assert gen.prefix(TITLE, BODY, CHUNK) == (None, "synthetic")
    assert claude_record.exists()  # it really ran


def test_claude_cli_missing_binary(caplog):
    gen = cli_generator()
    assert gen.disabled and gen.prefix(TITLE, BODY, CHUNK) == (None, "synthetic")
    assert any("not on PATH" in r.getMessage() for r in caplog.records)


# --- ollama (local, no consent needed) ------------------------------------------------------------

def test_ollama_success_without_egress_flag(guard):
    with FakeServer([ollama_reply("Local sentence about rinsing.\n")]) as srv:
        gen = PrefixGenerator(PrefixSettings(tier="ollama", ollama_host=srv.url))
        assert gen.prefix(TITLE, BODY, CHUNK) == ("Local sentence about rinsing.", "ollama")
    (req,) = srv.requests
    assert req.path == "/api/generate" and req.body["model"] == "llama3.2" and req.body["stream"] is False
    assert CHUNK in req.body["prompt"]
    assert guard == []


def test_ollama_host_from_env_and_proxies_ignored(monkeypatch, guard):
    monkeypatch.setenv("HTTP_PROXY", "http://192.0.2.1:8080")
    monkeypatch.setenv("ALL_PROXY", "http://192.0.2.1:8080")
    with FakeServer([ollama_reply("Via env.")]) as srv:
        monkeypatch.setenv("OLLAMA_HOST", srv.url.removeprefix("http://"))  # host:port, no scheme
        assert PrefixGenerator(PrefixSettings(tier="ollama")).prefix(TITLE, BODY, CHUNK) == ("Via env.", "ollama")
        assert len(srv.requests) == 1
    assert guard == []


def test_ollama_failures_fall_back(guard):
    gen = PrefixGenerator(PrefixSettings(tier="ollama", ollama_host=f"127.0.0.1:{closed_port()}", timeout=2))
    assert gen.prefix(TITLE, BODY, CHUNK) == (None, "synthetic")  # unreachable
    with FakeServer([Reply(404, {"error": "model 'llama3.2' not found"})]) as srv:
        gen = PrefixGenerator(PrefixSettings(tier="ollama", ollama_host=srv.url))
        assert gen.prefix(TITLE, BODY, CHUNK) == (None, "synthetic")
        assert [r.path for r in srv.requests] == ["/api/generate"]  # never pulls
    with FakeServer([Reply(307, {}, headers={"location": "http://192.0.2.1:11434/api/generate"})]) as srv:
        gen = PrefixGenerator(PrefixSettings(tier="ollama", ollama_host=srv.url))
        assert gen.prefix(TITLE, BODY, CHUNK) == (None, "synthetic")  # redirect off-machine not followed
    assert guard == []


@pytest.mark.parametrize("host", ["http://192.0.2.10:11434", "example.com", "10.0.0.1:11434",
                                  "https://ollama.example.org", "http://127.0.0.1.example.com:11434"])
def test_ollama_remote_host_refused(monkeypatch, guard, host):
    with pytest.raises(RemoteHostNotAllowed, match="not loopback"):
        PrefixGenerator(PrefixSettings(tier="ollama", ollama_host=host))
    monkeypatch.setenv("OLLAMA_HOST", host)
    with pytest.raises(ValueError, match="not loopback"):
        PrefixGenerator(PrefixSettings(tier="ollama"))
    assert guard == []


@pytest.mark.parametrize("host, url", [
    (None, "http://127.0.0.1:11434"),
    ("localhost", "http://localhost:11434"),
    ("0.0.0.0", "http://127.0.0.1:11434"),
    ("http://[::1]:8080/", "http://[::1]:8080"),
    ("https://127.0.0.2", "https://127.0.0.2"),
])
def test_ollama_base_url_normalised(host, url):
    assert ollama_base_url(host) == url


def test_ollama_url_env_fallback(monkeypatch):
    monkeypatch.setenv("OLLAMA_URL", "http://localhost:9999")
    assert ollama_base_url() == "http://localhost:9999"


# --- output cleaning and import cost --------------------------------------------------------------

def test_clean_output():
    assert clean_output("  first  \nsecond") == "first"
    assert clean_output("\n\n  only after blanks\n") == "only after blanks"
    assert clean_output("<think>\nhmm\n</think>\nAnswer.") == "Answer."
    assert clean_output("x" * 5000) == "x" * 1000
    assert clean_output("") is None and clean_output(None) is None and clean_output(" \n\t\n") is None


def test_import_does_not_load_clients():
    code = "import sys, vaulteval.chunks.prefix_llm; print(sorted(m for m in ('ollama', 'httpx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
