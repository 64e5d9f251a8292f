"""What a verdict rests on: written or real questions decide, generated queries only check for regressions.

Usage::

    decisive, generated = partition(queryset)     # query ids; generated is empty for a set of one kind
    facts = evidence_facts(test_qs, tune_count, default, candidate, measure="nDCG@10", generated=len(generated))
    facts["questions"], facts["writers"], facts["mde"], facts["enough"]
    evidence_line(facts)   # "the verdict rests on 14 written questions (agent 10, person 4); ..."
    check = regression_check(default_scores, best_scores, measure="nDCG@10")

A query is *generated* when ``queryset generate`` made it (a ``kind`` other
than ``written`` or ``logged``); the rest are questions someone asked: ``kind:
written`` (``writer:`` agent, person or model:<name>), judged questions from a
log (``kind: logged``, tag ``from-log``), and hand-written ones (no kind). When a set holds both,
``tune`` searches and confirms on the questions only, and runs the default
and the best on the generated queries as a regression check: its figures are
reported, never part of the verdict. The minimum detectable effect of the
test questions (a paired t-test, 80% power, at the spread seen between the
two strategies) says what they can detect; they are ``enough`` when that is
no larger than the difference seen (or, when nothing beat the default, than
``REAL_EFFECT``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import Query, QuerySet

WRITTEN = "written"
LOGGED = "logged"
LOG_TAG = "from-log"


def is_generated(query: "Query") -> bool:
    """Made by ``queryset generate``: it records a kind, and the kind is not ``written`` or ``logged``."""
    return bool(query.kind) and query.kind not in (WRITTEN, LOGGED)


def writer_of(query: "Query") -> str:
    """Who wrote a question: the written question's ``writer``, ``real`` for a logged question, else
    ``hand-written``; ``generated`` for a generated query."""
    if is_generated(query):
        return "generated"
    if query.kind == WRITTEN:
        writer = (query.fields or {}).get("writer")
        return writer if isinstance(writer, str) and writer else "unnamed"
    return "real" if query.kind == LOGGED or LOG_TAG in query.tags else "hand-written"


def partition(queryset: "QuerySet") -> tuple[list[str], list[str]]:
    """(question ids, generated ids) when the set holds both kinds of positive query, else (every id, [])."""
    questions = [q.query_id for q in queryset.queries if not is_generated(q)]
    generated = [q.query_id for q in queryset.queries if is_generated(q)]
    positive = {q.query_id for q in queryset.positive}
    if any(i in positive for i in questions) and any(i in positive for i in generated):
        return questions, generated
    return [q.query_id for q in queryset.queries], []


def evidence_facts(test_qs: "QuerySet", tune_count: int, default: Mapping[str, float],
                   candidate: Mapping[str, float] | None, *, measure: str, generated: int = 0) -> dict[str, Any]:
    """The facts a report prints about the test questions: how many, who wrote them, what they can detect."""
    from vaulteval.workbench.intervals import detectable_at, queries_needed
    from vaulteval.workbench.verdict import REAL_EFFECT

    ids = list(default)
    writers = Counter(writer_of(test_qs[q]) for q in ids if q in test_qs.by_id)
    basis = "generated" if set(writers) <= {"generated"} else "questions"
    base = np.array([default[q] for q in ids], dtype=np.float64)
    delta = None
    sd = float(np.std(base, ddof=1)) if base.size > 1 else 0.0  # nothing beat the default: its own spread
    if candidate is not None:
        diff = np.array([candidate[q] for q in ids], dtype=np.float64) - base
        delta = float(diff.mean()) if diff.size else None
        if diff.size > 1 and float(np.std(diff, ddof=1)) > 0:
            sd = float(np.std(diff, ddof=1))
    mde = _finite(detectable_at(sd, len(ids))) if len(ids) > 1 else None
    target = abs(delta) if delta else REAL_EFFECT
    return {"basis": basis, "measure": measure, "questions": len(ids), "tune_questions": tune_count,
            "writers": dict(sorted(writers.items(), key=lambda kv: (-kv[1], kv[0]))),
            "mde": mde, "difference": delta, "enough": bool(mde is not None and mde <= target),
            "queries_for_real_effect": {"effect": REAL_EFFECT,
                                        "queries": queries_needed(sd, REAL_EFFECT) if sd > 0 else None},
            "generated_set_aside": generated}


def regression_check(default: Mapping[str, float], best: Mapping[str, float], *, measure: str) -> dict[str, Any]:
    """The best against the default on the generated queries, by the comparison procedure every report uses
    (``workbench.procedure``): figures only, never a veto (generated queries reward shared words,
    docs/querysets.md)."""
    from vaulteval.workbench.procedure import WORSE, paired_comparison

    ids = list(default)
    base = np.array([default[q] for q in ids], dtype=np.float64)
    cand = np.array([best[q] for q in ids], dtype=np.float64)
    c = paired_comparison(cand, base)
    return {"measure": measure, "queries": len(ids), "default_mean": _mean(base), "best_mean": _mean(cand),
            "delta": _finite(c.delta) or 0.0, "ci95": [_finite(c.delta_ci_low), _finite(c.delta_ci_high)],
            "p": _finite(c.p), "loses": c.verdict == WORSE}


def evidence_line(facts: Mapping[str, Any], regression: Mapping[str, Any] | None = None) -> str:
    """One sentence: what the verdict rests on and what it can detect (and the regression check, when run)."""
    if facts["basis"] == "generated":
        head = f"the verdict rests on {facts['questions']} generated queries; no written or real questions"
    else:
        who = ", ".join(f"{name} {count}" for name, count in facts["writers"].items())
        head = f"the verdict rests on {facts['questions']} written or real test questions ({who})"
    parts = [head]
    if facts["mde"] is not None:
        seen = facts.get("difference")
        said = f"they find a difference of {facts['mde']:.3f} {facts['measure']} or more 80% of the time"
        if seen:
            said += (f", and the {seen:+.3f} seen is that large: enough" if facts["enough"] else
                     f"; the {seen:+.3f} seen is smaller, so other questions as many could miss it")
        parts.append(said)
    need = facts["queries_for_real_effect"]
    if need["queries"]:
        parts.append(f"{need['queries']} test questions would detect {need['effect']:.2f}")
    if facts["generated_set_aside"]:
        parts.append(f"{facts['generated_set_aside']} generated queries with an answer only check for regressions")
    if regression is not None:
        low, high = regression["ci95"]
        interval = f" [{low:+.3f}, {high:+.3f}]" if low is not None and high is not None else ""
        parts.append(f"on them the best {'loses' if regression['loses'] else 'does not lose'}: "
                     f"{regression['delta']:+.3f}{interval} over {regression['queries']}")
    return "; ".join(parts)


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else 0.0
