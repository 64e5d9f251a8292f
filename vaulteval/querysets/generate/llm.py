"""LLM-written questions (optional): a local text model asks one or two questions per sampled note.

Usage: ``llm_candidates(ctx, 20, LlmSettings(model="llama3.2"))`` (Ollama), or with
``LlmSettings(api="openai", host="http://127.0.0.1:8080/v1", model=...)`` any OpenAI-compatible server
(llama.cpp's server, LM Studio, vLLM; ``vaulteval.querysets.generate.textmodel``).

The prompt is the worksheet's task (``written.worksheet``: its opening and
its rules for each question), so a model writes under the rules an agent or
a person writes under; then the note's language, the note's title words and
rarest terms (``RARE_WORDS``) as words not to use, because a question that
repeats them only measures string matching, and the start of the note as prose. The host follows the rerank
rules (``vaulteval.hosts``): loopback only, unless ``allow_egress`` lets
note text leave the machine. Temperature 0 and the run seed make a
deterministic model give the same questions again. Every question is
screened like any other query and records its overlap with the note, so
whether the model obeyed is measured, not assumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.querysets.generate.candidates import Candidate, rng_for
from vaulteval.querysets.written.worksheet import QUESTION_RULES, TASK_INTRO

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context

MIN_PASSAGE_CHARS = 40
MAX_PASSAGE_CHARS = 1500
RARE_WORDS = 8
PROMPT = (f"{TASK_INTRO}\nRules:\n{QUESTION_RULES}\n\n"
          "The note below is in language {language}. Reply with {count} that it answers, the question text only, "
          "and do not use these words from the note: {avoid}.\n\nPassage:\n{passage}")
COUNTS = {1: "one short question", 2: "two short questions, each on its own line,"}
_LABEL_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)]|q\d*[:.)]|question\s*\d*:)\s*", re.IGNORECASE)
_THINKING_RE = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)  # a reasoning model's draft
_QUESTION_ENDS = ("?", "？", "؟")
_MARKUP = "*_`"
_QUOTES = "\"'“”«»「」"


@dataclass(frozen=True)
class LlmSettings:
    model: str = "llama3.2"
    host: str | None = None
    allow_egress: bool = False
    timeout: float = 60.0
    per_note: int = 2  # questions asked per sampled note (1 or 2)
    api: str = "ollama"  # or "openai": an OpenAI-compatible server at ``host`` (its base URL)
    # Filled by a run that got answers: which model answered (api, model, digest or served_as); the set records it.
    record: dict = field(default_factory=dict, compare=False, hash=False)


def _model(settings: LlmSettings):
    from vaulteval.querysets.generate.textmodel import open_model

    if settings.per_note not in COUNTS:
        raise UsageError(f"--llm-questions must be 1 or 2, got {settings.per_note}")
    return open_model(settings, "llm queries")


def server_name(settings: LlmSettings) -> str:
    """How a failure names the server: "the Ollama generate model 'x'" or "the OpenAI-compatible model 'x'"."""
    kind = "Ollama generate" if settings.api == "ollama" else "OpenAI-compatible"
    return f"the {kind} model {settings.model!r}"


def failure_hint(exc: BaseException, settings: LlmSettings) -> str:
    """What to check after a failed request: the server for a refused connection, else the model."""
    if isinstance(exc, ConnectionError):
        from vaulteval.hosts import host_setting

        if settings.api == "openai":
            return f"is the server running at {settings.host}?"
        return f"is Ollama running at {host_setting(settings.host)}?"
    if settings.api == "openai":
        return f"does the server at {settings.host} serve {settings.model!r}?"
    return f"is the model installed? (ollama pull {settings.model})"


def _passage(ctx: "Context", f) -> tuple[int, str] | None:
    """The first line and the prose of the note's start, up to MAX_PASSAGE_CHARS; None for a note without prose."""
    from vaulteval.querysets.generate.sentence_kinds import prose_lines

    from vaulteval.querysets.generate.prose import CUT

    lines = prose_lines(ctx, f)
    text = " ".join(" ".join(words.replace(CUT, " ").split()) for _, words, _ in lines)[:MAX_PASSAGE_CHARS]
    return (lines[0][0], text) if len(text) >= MIN_PASSAGE_CHARS else None


def _avoid(ctx: "Context", f) -> str:
    """The title's words and the note's rarest terms, for the prompt's list of words not to use."""
    from vaulteval.querysets.generate.lexical import terms

    words = list(dict.fromkeys(terms(f.title) + sorted(ctx.lexicon.rare_terms(f.rel, RARE_WORDS))))
    return ", ".join(words) or "(none)"


def without_thinking(text: str) -> str:
    """A reply without the ``<think>`` block some reasoning models write before their answer."""
    return _THINKING_RE.sub("", text)


def clean_questions(text: str | None, most: int = 2) -> list[str]:
    """Up to ``most`` questions from a reply: one per line, without numbering, labels, quotes or emphasis.

    A model's reasoning (``<think>``), lines that introduce a list ("Here are two questions:") and
    remarks in brackets are dropped; when some lines end in a question mark, only those are kept
    ("Sure! Here are two questions." is not a question).
    """
    out: list[str] = []
    for line in without_thinking(text or "").splitlines():
        line = _LABEL_RE.sub("", line.strip().strip(_MARKUP).strip()).strip().strip(_MARKUP).strip()
        line = line.strip(_QUOTES).strip()
        if 3 <= len(line) <= 300 and not line.endswith(":") and not line.startswith(("(", "[")) and line not in out:
            out.append(line)
    asked = [line for line in out if line.endswith(_QUESTION_ENDS)]
    return (asked or out)[:most]


def llm_candidates(ctx: "Context", n: int, settings: LlmSettings, progress=None) -> list[Candidate]:
    """Up to ``n`` questions from passages of pages drawn one per stratum in turn (seeded); once a model
    answered, ``settings.record`` holds which one (api, model, digest or the name the server answered with)."""
    from vaulteval.index.langs.identify import identify
    from vaulteval.querysets.generate.textmodel import model_errors

    model = _model(settings)
    errors = model_errors()
    strata: dict[str, list] = {}
    for f in ctx.facts:
        strata.setdefault(f.stratum, []).append(f)
    order = sorted(strata)
    rng_for(ctx.seed, "llm", "strata").shuffle(order)
    for key in order:
        rng_for(ctx.seed, "llm", key).shuffle(strata[key])
    out: list[Candidate] = []
    failures = answered = 0
    last_error: BaseException | None = None
    while len(out) < n and any(strata.values()):
        for key in order:
            if len(out) >= n or not strata[key]:
                continue
            f = strata[key].pop()
            found = _passage(ctx, f)
            if found is None:
                continue
            prompt = PROMPT.format(count=COUNTS[settings.per_note], avoid=_avoid(ctx, f), passage=found[1],
                                   language=identify(found[1]))
            try:
                answer = model.ask(prompt, seed=ctx.seed)
            except errors as exc:
                failures, last_error = failures + 1, exc
                if failures >= 3:
                    raise UsageError(f"llm queries: {server_name(settings)} failed 3 times "
                                     f"({type(exc).__name__}: {exc}); {failure_hint(exc, settings)}") from None
                continue
            answered += 1
            for question in clean_questions(answer, settings.per_note)[:n - len(out)]:
                out.append(Candidate("llm", settings.model, question, ((f.rel, 2),), f.rel, found[0], f.stratum))
            if progress is not None:
                progress("llm questions", len(out), n)
    if last_error is not None and not answered:  # a vault too small for three failures: still no silent zero
        raise UsageError(f"llm queries: {server_name(settings)} failed on every note asked "
                         f"({type(last_error).__name__}: {last_error}); {failure_hint(last_error, settings)}")
    if answered:
        settings.record.update(model.identity())
    return out
