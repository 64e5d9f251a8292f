"""LLM-written questions (optional): a local Ollama generate model writes one question per sampled passage.

Usage: ``llm_candidates(ctx, 20, LlmSettings(model="llama3.2"))``

The host follows the rerank rules (``vaulteval.hosts``): loopback only,
unless ``allow_egress`` lets note text leave the machine. Temperature 0 and
the run seed make a deterministic model give the same questions again. The
quality of these questions cannot be measured here: they are labelled
``kind: llm`` so they can be sliced away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.querysets.generate.candidates import Candidate, rng_for
from vaulteval.querysets.generate.pages import plain

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context

_LINK_RE = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
MIN_PASSAGE_CHARS = 40
MAX_PASSAGE_CHARS = 1500
PROMPT = ("Write one short question that a person would type into a search box and that the passage below "
          "answers. Do not repeat the passage's title. Reply with the question only.\n\nPassage:\n{passage}")


@dataclass(frozen=True)
class LlmSettings:
    model: str = "llama3.2"
    host: str | None = None
    allow_egress: bool = False
    timeout: float = 60.0


def _client(settings: LlmSettings):
    import ollama

    from vaulteval.hosts import RerankConfigError, host_setting, normalize_host

    try:
        url = normalize_host(host_setting(settings.host), allow_remote=settings.allow_egress)
    except RerankConfigError as exc:
        raise UsageError(f"llm queries: {exc}; note text would leave this machine, pass --allow-egress to allow it") \
            from None
    return ollama.Client(host=url, timeout=settings.timeout)


def _passage(f) -> tuple[int, str] | None:
    for line, text in f.body_lines():
        words = plain(_LINK_RE.sub(lambda m: m.group(1).split("|")[-1].split("#")[0], text))
        if len(words) >= MIN_PASSAGE_CHARS and not text.lstrip().startswith(("#", "|")):
            return line, words[:MAX_PASSAGE_CHARS]
    return None


def clean_question(text: str | None) -> str | None:
    """The first non-empty line, without quotes or a leading label; None when nothing usable came back."""
    for line in (text or "").splitlines():
        line = line.strip().strip("\"'“”").strip()
        if line.lower().startswith("question:"):
            line = line[9:].strip()
        if 3 <= len(line) <= 300:
            return line
    return None


def llm_candidates(ctx: "Context", n: int, settings: LlmSettings, progress=None) -> list[Candidate]:
    """Up to ``n`` questions from passages of pages drawn one per stratum in turn (seeded)."""
    import ollama

    client = _client(settings)
    strata: dict[str, list] = {}
    for f in ctx.facts:
        strata.setdefault(f.stratum, []).append(f)
    order = sorted(strata)
    rng_for(ctx.seed, "llm", "strata").shuffle(order)
    for key in order:
        rng_for(ctx.seed, "llm", key).shuffle(strata[key])
    out: list[Candidate] = []
    failures = 0
    while len(out) < n and any(strata.values()):
        for key in order:
            if len(out) >= n or not strata[key]:
                continue
            f = strata[key].pop()
            found = _passage(f)
            if found is None:
                continue
            try:
                answer = client.generate(model=settings.model, prompt=PROMPT.format(passage=found[1]),
                                         options={"temperature": 0, "seed": ctx.seed})
            except (ollama.ResponseError, ConnectionError, OSError) as exc:
                failures += 1
                if failures >= 3:
                    raise UsageError(f"llm queries: the Ollama generate model {settings.model!r} failed 3 times "
                                     f"({type(exc).__name__}: {exc}); is it installed? (ollama pull {settings.model})") \
                        from None
                continue
            question = clean_question(getattr(answer, "response", None))
            if question:
                out.append(Candidate("llm", settings.model, question, ((f.rel, 2),), f.rel, found[0], f.stratum))
                if progress is not None:
                    progress("llm questions", len(out), n)
    return out
