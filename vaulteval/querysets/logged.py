"""Judged real questions from a log, held to the written questions' rules (docs/querysets.md, "Real questions").

Usage::

    languages = vault_languages(vault)                 # at from-log: {"en": 120, ...}, stored in the set
    problem = logged_problem("how do I sync?", set(languages))   # None, or why it cannot be used
    mark_judged(queries, vault, set(languages), where="q.yaml")  # at save: kind, writer, note_hash, overlap, split

A logged question becomes evidence once a person judged it: it is checked as a
written question is (``written.checks``), and its overlap with its note (the
best-graded judged page; ties by path) is stored with the note's content hash.
Its split is its note's, so a note's questions never straddle tune and test.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError, VaultevalError
from vaulteval.querysets.written import checks

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

TAG = "from-log"
KIND = "logged"
WRITER = "real"  # asked of the vault by its user (or the user's agent), then judged by a person


def vault_languages(vault: "Vault") -> dict[str, int]:
    """The vault's languages (code -> notes), counted as the worksheet counts them."""
    from vaulteval.querysets.written.notes import read_notes

    found = Counter(n.language for n in read_notes(vault) if not n.stub and n.language != "und")
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))


def logged_problem(text: object, languages: set[str]) -> str | None:
    """Why a logged question cannot be a query (the written questions' checks), or None."""
    return checks.question_problem(text, languages)


def _judged(query: dict[str, Any]) -> bool:
    return TAG in (query.get("tags") or []) and bool(query.get("judged"))


def _note_of(relevant: dict[str, Any]) -> str | None:
    graded = {p: g for p, g in relevant.items() if isinstance(g, int) and not isinstance(g, bool) and g > 0}
    return min(graded, key=lambda p: (-graded[p], p)) if graded else None


def mark_judged(queries: list[Any], vault: "Vault", languages: set[str] | None, *, where: str) -> int:
    """Give each judged logged question the written questions' checks and records, in place; returns how many.

    Raises UsageError (one line) for a question the checks refuse, a set without the vault's languages, or a
    judged note that cannot be read."""
    from vaulteval.querysets.generate.lexical import band
    from vaulteval.querysets.written.notes import MAX_NOTE_BYTES, note_facts
    from vaulteval.querysets.written.worksheet import split_for
    from vaulteval.vault.notefiles import read_note_file

    judged = [q for q in queries if isinstance(q, dict) and _judged(q)]
    if judged and languages is None:
        raise UsageError(f"{where} has no languages: list; write it again with `vaulteval queryset from-log`")
    by_note: dict[str, list[dict[str, Any]]] = {}
    negatives: list[dict[str, Any]] = []
    for q in judged:
        problem = logged_problem(q.get("query"), languages or set())
        if problem is not None:
            raise UsageError(f"{where}: logged question {q.get('id')} {str(q.get('query'))[:60]!r} {problem}")
        q.update(kind=KIND, writer=WRITER)
        page = _note_of(dict(q.get("relevant") or {}))
        if page is None:  # judged, and no page answers it: a real question the vault cannot answer
            q.update(flags=[])
            for key in ("note_hash", "overlap", "overlap_band"):
                q.pop(key, None)
            negatives.append(q)
            continue
        try:
            raw = read_note_file(vault.page_path(page), MAX_NOTE_BYTES)
        except (OSError, VaultevalError) as exc:
            raise UsageError(f"{where}: cannot read {page}, judged for {q.get('id')}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        facts = note_facts(page, raw)
        overlap = checks.measure_overlap(q["query"], facts.title, facts.text)
        q.update(note_hash=facts.note_hash, overlap=overlap, overlap_band=band(overlap["text"]),
                 flags=checks.flags_of(q["query"], facts.title))
        by_note.setdefault(page, []).append(q)
    for i, page in enumerate(sorted(by_note)):
        for q in by_note[page]:
            q["split"] = split_for(i)
    for n, q in enumerate(sorted(negatives, key=lambda q: str(q.get("id"))), 1):
        q["split"] = "tune" if n % 3 == 1 else "test"  # as the written set's unanswerable questions
    return len(judged)
