"""LLM pre-grades for a pool: a local text model suggests a grade for each pair, for the person who judges.

Usage::

    summary = pregrade_pool(pool, LlmSettings(model="llama3.2"))   # pool: read_pool("pool.yaml")
    write_pool(pool, "pool-pregraded.yaml")                        # then notebooks/judge.ipynb

Each pair's query and snippet go to the model (Ollama's API, or an
OpenAI-compatible server with ``api="openai"``) with a JSON schema for the
answer (``{"grade": 0-2, "reason": ...}``); the grade lands in the pair as
``llm_grade`` with ``llm_reason`` and ``llm_model``, and the pool records the
model (``llm``: api, model, digest or the name the server answered with). It is a
suggestion the judge notebook shows beside the pair: nothing counts it as
a judgment. Pairs that already carry a pre-grade are left as they are
unless ``regrade``, so a run cut short goes on where it stopped. The host
rules are the llm kind's: loopback only unless ``allow_egress``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from vaulteval.querysets.generate.llm import LlmSettings

PROMPT = ("Someone typed this into the search box of their notes:\n\n{query}\n\nA search returned this passage from "
          "the note {page}:\n\n{snippet}\n\nGrade the passage for that search: 2 if it answers it, 1 if it is on its "
          "topic but does not answer it, 0 if it is about something else. Reply in JSON with the grade and one short "
          "sentence saying why.")
SCHEMA = {"type": "object", "required": ["grade", "reason"],
          "properties": {"grade": {"type": "integer", "enum": [0, 1, 2]}, "reason": {"type": "string"}}}
MAX_REASON_CHARS = 200
FAILURES_IN_A_ROW = 3
_FENCE = re.compile(r"^\s*```[a-z]*|```\s*$", re.IGNORECASE)
# The grade first, after quotes, emphasis or "Grade:"; not a sign or a decimal ("-1", "0.5" are no grade).
_LEADING_GRADE = re.compile(r"^[\s*_\"'`(\[]*(?:grade\s*[:=]?\s*)?([012])(?!\d|\.\d)", re.IGNORECASE)


def parse_grade(text: str | None) -> tuple[int, str] | None:
    """``(grade, reason)`` from a reply: the JSON the schema asks for (in a code fence too, after a reasoning
    model's ``<think>`` block), or a reply that opens with the grade ("2 - it lists the steps"); None for
    anything else (a grade outside 0-2 included)."""
    from vaulteval.querysets.generate.llm import without_thinking

    text = _FENCE.sub("", without_thinking(text or "")).strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        grade = data.get("grade")
        if isinstance(grade, str) and grade.strip() in ("0", "1", "2"):
            grade = int(grade)
        if type(grade) is not int or grade not in (0, 1, 2):
            return None
        reason = data.get("reason")
        return grade, _one_line(reason if isinstance(reason, str) else "")
    found = _LEADING_GRADE.match(text)
    if data is not None or found is None:
        return None
    return int(found.group(1)), _one_line(text[found.end():].lstrip(" -:.)*_\"'`]"))


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_REASON_CHARS else line[:MAX_REASON_CHARS - 1] + "…"


def pregrade_pool(pool: dict[str, Any], settings: "LlmSettings", *, regrade: bool = False,
                  progress=None) -> dict[str, Any]:
    """Pre-grade ``pool``'s pairs in place; the counts: ``graded``, ``unanswered`` (a reply with no grade in it),
    ``failed`` (a request that failed; its pair stays ungraded), ``kept`` (pre-graded before and left).

    After ``FAILURES_IN_A_ROW`` failed requests in a row, or when every request failed, it stops with a
    UsageError whose ``summary`` attribute holds the counts so far (the pairs graded keep their grades)."""
    from vaulteval.querysets.generate.llm import failure_hint, server_name
    from vaulteval.querysets.generate.textmodel import model_errors, open_model

    model = open_model(settings, "llm pre-grades")
    errors = model_errors()
    todo = [p for p in pool["pairs"] if regrade or p.get("llm_grade") is None]
    summary = {"pairs": len(pool["pairs"]), "graded": 0, "unanswered": 0, "failed": 0,
               "kept": len(pool["pairs"]) - len(todo)}
    failures = 0
    for number, pair in enumerate(todo, 1):
        prompt = PROMPT.format(query=pair["query"], page=pair["page"], snippet=pair["snippet"])
        try:
            answer = model.ask(prompt, schema=SCHEMA)
        except errors as exc:
            failures += 1
            summary["failed"] += 1
            if failures >= FAILURES_IN_A_ROW or summary["failed"] == len(todo):
                times = f"{FAILURES_IN_A_ROW} times in a row" if failures >= FAILURES_IN_A_ROW else \
                    f"on all {len(todo)} pairs"
                stop = UsageError(f"llm pre-grades: {server_name(settings)} failed {times} "
                                  f"({type(exc).__name__}: {exc}); {failure_hint(exc, settings)}")
                stop.summary = summary
                if summary["graded"]:
                    pool["llm"] = model.identity()
                raise stop from None
            continue
        failures = 0
        found = parse_grade(answer)
        if found is None:
            summary["unanswered"] += 1
        else:
            pair["llm_grade"], pair["llm_reason"], pair["llm_model"] = found[0], found[1], settings.model
            summary["graded"] += 1
        if progress is not None:
            progress("llm pre-grades", number, len(todo))
    if summary["graded"]:
        pool["llm"] = model.identity()
        summary["model"] = pool["llm"]
    return summary
