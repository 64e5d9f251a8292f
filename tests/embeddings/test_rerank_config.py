"""Rerank settings: resolve() validates hosts, models and limits without touching the network.

Usage: ``.venv/bin/python -m pytest tests/embeddings/test_rerank_config.py -q``
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from vaulteval.embeddings.embedders import input_scheme, match_installed, split_tag
from vaulteval.errors import UsageError
from vaulteval.embeddings.rerank import (
    DEFAULT_OLLAMA_MODEL,
    RerankConfig,
    RerankConfigError,
    peek,
    rerank,
    resolve,
)

from ollama_server import SocketAudit

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_ollama_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("OLLAMA_URL", raising=False)


def test_socket_audit_really_blocks() -> None:
    """The guard used below must itself be able to fail."""
    import socket

    with SocketAudit() as events, socket.socket() as sock, pytest.raises(PermissionError):
        sock.connect(("127.0.0.1", 9))
    assert events == [("socket.connect", ("127.0.0.1", 9))]


@pytest.mark.parametrize(
    "host",
    [
        "http://203.0.113.5:11434",
        "203.0.113.5",
        "203.0.113.5:11434",
        "https://ollama.example.org",
        "gpu-box.local:11434",
        "http://[2001:db8::1]:11434",
        "http://10.0.0.2:11434",
        "http://localhost.example.com:11434",
        "http://[::ffff:203.0.113.5]:11434",
    ],
)
def test_remote_host_refused_before_any_connection(host: str) -> None:
    cfg = RerankConfig(host=host)
    with SocketAudit() as events:
        for call in (lambda: resolve(cfg), lambda: rerank("q", ["a text"], cfg), lambda: peek(cfg)):
            with pytest.raises(RerankConfigError) as err:
                call()
            message = str(err.value)
            assert "--allow-remote-ollama" in message and "\n" not in message
    assert events == []


def test_remote_host_from_environment_is_refused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "203.0.113.5:11434")
    with SocketAudit() as events, pytest.raises(RerankConfigError, match="allow-remote-ollama"):
        rerank("q", ["a text"], RerankConfig())
    assert events == []


def test_allow_remote_resolves_without_network() -> None:
    with SocketAudit() as events:
        cfg = resolve(RerankConfig(host="203.0.113.5", allow_remote=True))
    assert cfg.host == "http://203.0.113.5:11434"
    assert events == []


@pytest.mark.parametrize(
    "host",
    [
        "http://user:secret@127.0.0.1:11434",
        "user@localhost:11434",
        "http://:secret@localhost:11434",
        "https://token@[::1]:11434",
    ],
)
def test_credentials_in_host_refused(host: str) -> None:
    with pytest.raises(RerankConfigError, match="credentials") as err:
        resolve(RerankConfig(host=host, allow_remote=True))
    assert "secret" not in str(err.value)


@pytest.mark.parametrize(
    "host",
    [
        "ftp://127.0.0.1:11434",
        "file:///tmp/socket",
        "http://",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:abc",
        "http://127.0.0.1:11434/?x=1",
        "http://127.0.0.1:11434#frag",
        "http://local host:11434",
        "http://[::1",
        "http://[not-an-ip]:11434",
        "http://127.0.0.1:11434/a b",
        "http://127.0.0.1:11434/a%20b",
        "http://127.0.0.1\n:11434",
        "http://exa_mple.com",
    ],
)
def test_malformed_host_refused(host: str) -> None:
    with pytest.raises(RerankConfigError):
        resolve(RerankConfig(host=host, allow_remote=True))


@pytest.mark.parametrize(
    "host, expected",
    [
        ("localhost", "http://localhost:11434"),
        ("LOCALHOST:1234", "http://localhost:1234"),
        ("127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("127.8.9.10", "http://127.8.9.10:11434"),
        ("http://127.0.0.1:11434/", "http://127.0.0.1:11434"),
        ("http://[::1]:11434", "http://[::1]:11434"),
        ("[::1]", "http://[::1]:11434"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434"),
        ("http://[::]:8080", "http://[::1]:8080"),
        ("https://localhost", "https://localhost"),
        ("http://localhost:11434/ollama", "http://localhost:11434/ollama"),
    ],
)
def test_loopback_hosts_accepted_and_normalized(host: str, expected: str) -> None:
    assert resolve(RerankConfig(host=host)).host == expected


def test_host_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve(RerankConfig()).host == "http://127.0.0.1:11434"
    monkeypatch.setenv("OLLAMA_URL", "http://localhost:2222")
    assert resolve(RerankConfig()).host == "http://localhost:2222"
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:3333")
    assert resolve(RerankConfig()).host == "http://127.0.0.1:3333"
    assert resolve(RerankConfig(host="localhost:4444")).host == "http://localhost:4444"


def test_defaults_filled_in() -> None:
    cfg = resolve(RerankConfig())
    assert cfg.model == DEFAULT_OLLAMA_MODEL == "nomic-embed-text-v2-moe"
    assert (cfg.backend, cfg.timeout, cfg.batch_size, cfg.allow_remote) == ("ollama", 30.0, 64, False)


@pytest.mark.parametrize(
    "name",
    ["nomic-embed-text", "nomic-embed-text:v1.5", "all-minilm:latest", "hf.co/user/repo:Q4_K_M", "library/all-minilm", "my.registry:5000/ns/model:tag"],
)
def test_valid_model_names(name: str) -> None:
    assert resolve(RerankConfig(model=name)).model == name


@pytest.mark.parametrize(
    "name",
    ["", "a b", "../x", "x/../y", "x:", "x:y:z", "-x", "x;rm -rf", "a" * 300, "x//y", "x/", "x:tag with space", "mod\u00e9l"],
)
def test_invalid_model_names(name: str) -> None:
    with pytest.raises(RerankConfigError):
        resolve(RerankConfig(model=name))


@pytest.mark.parametrize(
    "change",
    [
        {"backend": "openai"},
        {"timeout": 0},
        {"timeout": -1.0},
        {"timeout": math.nan},
        {"timeout": math.inf},
        {"timeout": "5"},
        {"batch_size": 0},
        {"batch_size": 10_000},
        {"batch_size": 2.5},
        {"batch_size": True},
    ],
)
def test_bad_settings_refused(change: dict[str, Any]) -> None:
    with pytest.raises(RerankConfigError):
        resolve(RerankConfig(**change))


def test_config_error_is_a_usage_error() -> None:
    err = RerankConfigError("x")
    assert isinstance(err, ValueError) and isinstance(err, UsageError) and err.exit_code == 2


def test_sentence_transformers_model_resolution(tmp_path: Path) -> None:
    default = resolve(RerankConfig(backend="sentence-transformers"))
    assert default.host is None
    assert Path(default.model).is_dir() and (Path(default.model) / "modules.json").is_file()
    assert resolve(RerankConfig(backend="sentence-transformers", model=str(tmp_path))).model == str(tmp_path.resolve())
    assert resolve(RerankConfig(backend="sentence-transformers", model="sentence-transformers/all-MiniLM-L6-v2")).model == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )
    with pytest.raises(RerankConfigError, match="does not exist"):
        resolve(RerankConfig(backend="sentence-transformers", model=str(tmp_path / "missing")))
    with pytest.raises(RerankConfigError):
        resolve(RerankConfig(backend="sentence-transformers", model="a b c"))


def test_untagged_model_matching_rule() -> None:
    installed = ["nomic-embed-text:v1.5", "nomic-embed-text-v2-moe:latest", "all-minilm:latest", "bare"]
    assert match_installed("nomic-embed-text", installed) is None  # another tag is never chosen
    assert match_installed("nomic-embed-text:v1.5", installed) == "nomic-embed-text:v1.5"
    assert match_installed("nomic-embed-text-v2-moe", installed) == "nomic-embed-text-v2-moe:latest"
    assert match_installed("all-minilm", installed) == "all-minilm:latest"
    assert match_installed("all-minilm:latest", installed) == "all-minilm:latest"
    assert match_installed("all-minilm:v2", installed) is None
    assert match_installed("bare", installed) == "bare"
    assert match_installed("bare:latest", installed) is None
    assert split_tag("reg:5000/ns/m") == ("reg:5000/ns/m", None)
    assert split_tag("reg:5000/ns/m:q4") == ("reg:5000/ns/m", "q4")


def test_input_scheme_by_model_name() -> None:
    nomic = input_scheme("nomic-embed-text-v2-moe:latest")
    assert (nomic.name, nomic.query_prefix, nomic.document_prefix) == ("nomic-prefix-v1", "search_query: ", "search_document: ")
    assert input_scheme("/models/nomic-embed-text-v1.5").name == "nomic-prefix-v1"
    assert input_scheme("hf.co/nomic-ai/nomic-embed-text-v1.5-GGUF:Q8_0").name == "nomic-prefix-v1"
    plain = input_scheme("all-minilm:latest")
    assert (plain.name, plain.query_prefix, plain.document_prefix) == ("plain", "", "")


def test_import_does_not_load_heavy_modules() -> None:
    code = textwrap.dedent(
        """
        import sys, vaulteval.embeddings.rerank
        heavy = ("ollama", "httpx", "torch", "sentence_transformers", "transformers")
        print(",".join(m for m in heavy if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    loaded = set(filter(None, out.stdout.strip().split(",")))
    assert loaded == set(), loaded
