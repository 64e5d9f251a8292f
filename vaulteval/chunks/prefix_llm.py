"""Optional LLM contextual-prefix tiers, gated for privacy.

Usage: ``gen = PrefixGenerator(PrefixSettings(tier="auto")); prefix, source = gen.prefix(title, body, chunk)``

The default tier is ``synthetic``: this module then produces nothing and the
caller keeps its locally computed prefix. ``ollama`` asks a generate model on
a loopback Ollama server. ``anthropic-api`` and ``claude-cli`` send page
bodies off the machine and run only with ``allow_egress=True`` (the CLI's
``--allow-egress``); consent is never inferred from an API key or an
installed binary. Every provider failure degrades to ``(None, "synthetic")``.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

TIERS = ("synthetic", "ollama", "anthropic-api", "claude-cli")
EGRESS_TIERS = {"anthropic-api", "claude-cli"}
MAX_PREFIX_CHARS = 1000
MAX_PAGE_CHARS = 24_000  # page text sent per request is bounded; the chunk itself always goes whole
MAX_FAILURES = 3  # consecutive provider failures before the provider is dropped for the run
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

_THINK_BLOCK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


class EgressNotAllowed(ValueError):
    """An off-machine prefix tier was requested without --allow-egress."""


class RemoteHostNotAllowed(ValueError):
    """A prefix endpoint would reach a non-loopback host where only loopback is allowed."""


@dataclass(frozen=True)
class PrefixSettings:
    """Usage: ``PrefixSettings(tier="anthropic-api", allow_egress=True)``; ``tier`` is one of TIERS or "auto"."""

    tier: str = "synthetic"
    allow_egress: bool = False
    ollama_host: str | None = None  # None -> OLLAMA_HOST, OLLAMA_URL, then DEFAULT_OLLAMA_HOST
    ollama_model: str = "llama3.2"  # a generate model; never pulled
    anthropic_model: str = "claude-haiku-4-5"
    timeout: float = 30.0


def _is_loopback(host: str) -> bool:
    """The rerank stage's rule (localhost, 127.0.0.0/8, ::1), applied to a bare host name."""
    from vaulteval.hosts import is_loopback

    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        ip = None
    return is_loopback(host, ip)


def ollama_base_url(host: str | None = None) -> str:
    """Usage: ``ollama_base_url("localhost:11435")`` -> ``"http://localhost:11435"``.

    Resolve the Ollama endpoint (argument, then OLLAMA_HOST, OLLAMA_URL, then
    the default) with the rerank stage's host rules, and refuse any host that
    is not this machine: page text only goes to a local Ollama.
    """
    from vaulteval.hosts import RerankConfigError, normalize_host

    raw = (host or os.environ.get("OLLAMA_HOST") or os.environ.get("OLLAMA_URL") or DEFAULT_OLLAMA_HOST).strip()
    try:
        url = normalize_host(raw, allow_remote=True)
    except RerankConfigError as exc:
        raise RemoteHostNotAllowed(f"ollama prefix tier: {exc}") from None
    if not _is_loopback((urlsplit(url).hostname or "")):
        raise RemoteHostNotAllowed(
            f"ollama prefix host {raw!r} is not loopback; page text is only sent to a local Ollama "
            f"(use e.g. {DEFAULT_OLLAMA_HOST})"
        )
    return url


def anthropic_base_url() -> str:
    """Usage: ``anthropic_base_url()`` -> ANTHROPIC_BASE_URL or the public API; plain http only to loopback."""
    raw = (os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL).strip().rstrip("/")
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError(f"ANTHROPIC_BASE_URL {raw!r} is not an http(s) URL")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ValueError(f"ANTHROPIC_BASE_URL {raw!r}: plain http is allowed only to a loopback host")
    return raw


def _provider(tier: str) -> str:
    if tier == "anthropic-api":
        try:
            host = urlsplit(anthropic_base_url()).hostname
        except ValueError:
            host = os.environ.get("ANTHROPIC_BASE_URL", "?")
        return f"{host} (Anthropic Messages API)"
    return "Anthropic, through the local `claude` CLI (or whichever provider that CLI is configured for)"


def egress_notice(tier: str) -> str | None:
    """Usage: ``print(egress_notice("anthropic-api"))``; one line naming who receives what, None for local tiers."""
    if tier not in EGRESS_TIERS:
        return None
    return f"{tier}: page titles, page bodies (up to {MAX_PAGE_CHARS:,} chars) and chunk text are sent to {_provider(tier)}"


def choose_tier(settings: PrefixSettings) -> str:
    """Usage: ``tier = choose_tier(settings)``; raises EgressNotAllowed for an egress tier without consent.

    "auto" picks anthropic-api (consent and ANTHROPIC_API_KEY), then claude-cli
    (consent and ``claude`` on PATH), else synthetic. A key or a binary alone
    never selects an egress tier.
    """
    tier = settings.tier
    if tier == "auto":
        if not settings.allow_egress:
            return "synthetic"
        if os.environ.get("ANTHROPIC_API_KEY"):
            return "anthropic-api"
        if shutil.which("claude"):
            return "claude-cli"
        return "synthetic"
    if tier not in TIERS:
        raise ValueError(f"unknown prefix tier {tier!r}; choose one of {', '.join(TIERS)} or auto")
    if tier in EGRESS_TIERS and not settings.allow_egress:
        raise EgressNotAllowed(
            f"prefix tier {tier!r} would send page bodies and chunk text to {_provider(tier)}; "
            "pass --allow-egress to consent, or use the synthetic tier"
        )
    return tier


INSTRUCTION = (
    "The input holds a note (between <note> tags) and one excerpt from it (between <excerpt> tags). "
    "Write one sentence that says where the excerpt sits in the note and what it is about, "
    "so that a search engine can find the excerpt. Reply with that sentence only."
)


def build_material(title: str, page_body: str, chunk_text: str) -> str:
    """Usage: ``build_material(title, body, chunk)``; the page (bounded) and the chunk, tagged for the prompt."""
    page = page_body[:MAX_PAGE_CHARS]
    return f"<note title={title!r}>\n{page}\n</note>\n\n<excerpt>\n{chunk_text}\n</excerpt>"


def clean_output(text: str | None) -> str | None:
    """Usage: ``clean_output(raw)``; first non-blank line, stripped, at most 1,000 chars; None if empty."""
    if not text:
        return None
    text = _THINK_BLOCK.sub("", text, count=1)
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:MAX_PREFIX_CHARS].rstrip()
    return None


class PrefixGenerator:
    """Usage: ``gen = PrefixGenerator(settings); prefix, source = gen.prefix(title, page_body, chunk_text)``

    ``source`` is the tier that produced ``prefix``; ``(None, "synthetic")``
    means "use your synthetic prefix". After MAX_FAILURES consecutive
    failures the provider is not called again by this generator. Not
    thread-safe; use one generator per worker.
    """

    def __init__(self, settings: PrefixSettings) -> None:
        self.settings = settings
        self.tier: str = choose_tier(settings)
        self.failures = 0  # consecutive
        self.disabled = False
        self._client: Any = None
        self._url = ""  # endpoint URL, or the resolved `claude` path
        if self.tier == "ollama":
            self._url = ollama_base_url(settings.ollama_host)
        elif self.tier == "anthropic-api":
            self._url = anthropic_base_url()
            if not os.environ.get("ANTHROPIC_API_KEY"):
                self._disable("ANTHROPIC_API_KEY is not set")
        elif self.tier == "claude-cli":
            self._url = shutil.which("claude") or ""  # resolved once; also finds claude.cmd on Windows
            if not self._url:
                self._disable("`claude` is not on PATH")
        notice = egress_notice(self.tier)
        if notice and not self.disabled:
            log.info("prefix egress: %s", notice)

    def prefix(self, title: str, page_body: str, chunk_text: str) -> tuple[str | None, str]:
        """Usage: ``text, source = gen.prefix(title, body, chunk)``; never raises for provider failures."""
        if self.tier == "synthetic" or self.disabled:
            return None, "synthetic"
        material = build_material(title, page_body, chunk_text)
        try:
            text = clean_output(self._ask(material))
            if text is None:
                raise ValueError("empty answer")
        except Exception as exc:  # any provider failure degrades to the synthetic prefix
            self.failures += 1
            log.debug("%s prefix failed (%d in a row): %s", self.tier, self.failures, exc)
            if self.failures >= MAX_FAILURES:
                self._disable(f"{self.failures} consecutive failures, last: {type(exc).__name__}: {exc}")
            return None, "synthetic"
        self.failures = 0
        return text, self.tier

    def close(self) -> None:
        """Usage: ``gen.close()``; releases the HTTP client, if any."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> PrefixGenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _disable(self, reason: str) -> None:
        self.disabled = True
        self.close()
        log.warning("%s prefixes disabled for this run (%s); using synthetic prefixes", self.tier, reason)

    def _ask(self, material: str) -> str | None:
        if self.tier == "claude-cli":
            return self._ask_claude_cli(material)
        prompt = f"{material}\n\n{INSTRUCTION}"
        return self._ask_ollama(prompt) if self.tier == "ollama" else self._ask_anthropic(prompt)

    def _ask_ollama(self, prompt: str) -> str | None:
        if self._client is None:
            import ollama

            # No proxies from the environment and no redirects: page text must stay on this machine.
            self._client = ollama.Client(
                host=self._url, timeout=self.settings.timeout, trust_env=False, follow_redirects=False
            )
        answer = self._client.generate(
            model=self.settings.ollama_model, prompt=prompt, stream=False, options={"temperature": 0, "num_predict": 200}
        )
        return answer.response

    def _ask_anthropic(self, prompt: str) -> str | None:
        if self._client is None:
            import httpx

            self._client = httpx.Client(base_url=self._url, timeout=self.settings.timeout, follow_redirects=False)
        resp = self._client.post(
            "/v1/messages",
            headers={
                "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
                "anthropic-version": ANTHROPIC_VERSION,
                "content-type": "application/json",
            },
            json={
                "model": self.settings.anthropic_model,
                "max_tokens": 200,
                "temperature": 0,
                "messages": [{"role": "user", "content": prompt}],
            },
        )
        resp.raise_for_status()
        blocks = resp.json().get("content") or []
        return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")

    def _ask_claude_cli(self, material: str) -> str | None:
        # `claude -p INSTRUCTION` appends piped stdin to the prompt. Page text goes
        # through stdin, never argv: argv is visible to other local users (ps) and
        # one argument is limited to 128 KiB on Linux.
        done = subprocess.run(
            [self._url, "-p", INSTRUCTION],
            input=material,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=self.settings.timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"claude exited {done.returncode}: {done.stderr.strip()[:200]}")
        return done.stdout
