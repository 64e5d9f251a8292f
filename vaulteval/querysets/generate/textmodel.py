"""A local text model behind one call: Ollama's API (the official client) or an OpenAI-compatible server.

Usage::

    model = open_model(LlmSettings(api="openai", host="http://127.0.0.1:8080/v1", model="qwen2.5-7b-instruct"),
                       "llm queries")
    reply = model.ask("Write one question ...", seed=0)             # the reply's text
    model.ask(prompt, schema={"type": "object", ...})               # a JSON answer, where the server honours it
    model.identity()    # {"api": "openai", "model": ..., "served_as": ..., "fingerprint": ...} for the record

``ollama`` speaks ``/api/generate``; ``openai`` speaks ``/v1/chat/completions``,
which llama.cpp's server, LM Studio, vLLM and Ollama itself all serve. Both go
through the host rules of ``vaulteval.hosts``: loopback only unless
``allow_egress``, checked before any connection. No API key is sent. What the
server says about the model it ran (Ollama's digest from ``/api/tags``, an
OpenAI-compatible server's ``model`` and ``system_fingerprint``) is kept for
``identity``, so a query set or a pool records which model wrote or graded it.
"""

from __future__ import annotations

from typing import Any

from vaulteval.errors import UsageError

APIS = ("ollama", "openai")
MAX_TIMEOUT = 3600.0  # seconds per request: a large model on a CPU can take minutes, never hours
EXAMPLE_BASES = ("llama.cpp's server: http://127.0.0.1:8080/v1, LM Studio: http://127.0.0.1:1234/v1, "
                 "vLLM: http://127.0.0.1:8000/v1, Ollama: http://127.0.0.1:11434/v1")


class ModelReplyError(Exception):
    """The server answered, but not with a reply of the API's shape (an HTTP error status, no text)."""


def model_errors() -> tuple[type[BaseException], ...]:
    """What one failed request raises: the server's error, a refused connection, a timeout, a reply of no shape."""
    import httpx
    import ollama

    return ollama.ResponseError, ConnectionError, OSError, httpx.HTTPError, ModelReplyError


def open_model(settings: Any, purpose: str) -> "OllamaModel | OpenAIModel":
    """The model on the host of ``settings`` (an ``LlmSettings``); UsageError (exit 2) for an unknown API, a bad
    timeout or a host the rules refuse, before anything is sent."""
    from vaulteval.hosts import RerankConfigError, host_setting, normalize_host, request_timeout

    if settings.api not in APIS:
        raise UsageError(f"--llm-api must be one of {', '.join(APIS)}, got {settings.api!r}")
    request_timeout(settings.timeout, MAX_TIMEOUT, "--llm-timeout")
    if settings.api == "openai":
        if not settings.host:
            raise UsageError(f"{purpose}: --llm-api openai needs --llm-host, the server's base URL ({EXAMPLE_BASES})")
        raw = settings.host if "://" in settings.host else f"http://{settings.host}"
    else:
        raw = host_setting(settings.host)
    try:
        url = normalize_host(raw, allow_remote=settings.allow_egress)
    except RerankConfigError as exc:
        raise UsageError(f"{purpose}: {exc}; note text would leave this machine, pass --allow-egress to allow it") \
            from None
    if settings.api == "openai":
        return OpenAIModel(url, settings)
    try:
        import ollama
    except ImportError:
        raise UsageError(f"{purpose} need the ollama package: pip install 'vaulteval[rerank]'") from None
    return OllamaModel(ollama.Client(host=url, timeout=settings.timeout), url, settings)


class OllamaModel:
    """``/api/generate`` through the official client; the digest comes from ``/api/tags`` once asked for."""

    api = "ollama"

    def __init__(self, client: Any, url: str, settings: Any):
        self.client, self.url, self.model = client, url, settings.model
        self._digest: str | None = None

    def ask(self, prompt: str, *, seed: int = 0, schema: dict[str, Any] | None = None) -> str | None:
        extra = {"format": schema} if schema is not None else {}
        answer = self.client.generate(model=self.model, prompt=prompt, options={"temperature": 0, "seed": seed},
                                      **extra)
        return getattr(answer, "response", None)

    def identity(self) -> dict[str, Any]:
        """The API, the model asked for and its digest (None when the server does not list it)."""
        if self._digest is None:
            self._digest = self._lookup_digest() or ""
        return {"api": self.api, "model": self.model, "digest": self._digest or None}

    def _lookup_digest(self) -> str | None:
        try:
            listed = self.client.list()
        except (*model_errors(), ValueError):  # ValueError: a listing of another shape (pydantic's error)
            return None
        wanted = {self.model, f"{self.model}:latest"}
        for entry in getattr(listed, "models", None) or []:
            if getattr(entry, "model", None) in wanted and isinstance(getattr(entry, "digest", None), str):
                return entry.digest
        return None


class OpenAIModel:
    """``POST {base}/chat/completions`` with httpx (one user message, temperature 0, the seed)."""

    api = "openai"

    def __init__(self, url: str, settings: Any):
        from urllib.parse import urlsplit

        self.base = url if urlsplit(url).path not in ("", "/") else f"{url.rstrip('/')}/v1"
        self.model, self.timeout = settings.model, settings.timeout
        self.served: dict[str, str] = {}

    def ask(self, prompt: str, *, seed: int = 0, schema: dict[str, Any] | None = None) -> str | None:
        import httpx

        body: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                                "temperature": 0, "seed": seed, "stream": False}
        if schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "strict": True, "schema": schema}}
        reply = httpx.post(f"{self.base}/chat/completions", json=body, timeout=self.timeout,
                           follow_redirects=False)
        if reply.status_code != 200:
            raise ModelReplyError(f"HTTP {reply.status_code} from {self.base}/chat/completions: "
                                  f"{' '.join(reply.text.split())[:200]}")
        try:
            data = reply.json()
            text = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelReplyError(f"{self.base}/chat/completions answered without choices[0].message.content") \
                from None
        for key, name in (("model", "served_as"), ("system_fingerprint", "fingerprint")):
            if isinstance(data.get(key), str) and data[key]:
                self.served[name] = data[key][:200]
        return text if isinstance(text, str) else None

    def identity(self) -> dict[str, Any]:
        """The API, the model asked for, and the name and fingerprint the server answered with (when it did)."""
        return {"api": self.api, "model": self.model, **self.served}
