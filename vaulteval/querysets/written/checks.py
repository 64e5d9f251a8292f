"""Checks and measures of one written question: length, language, overlap with its note's title and text.

Usage::

    problem = question_problem("how do I sync?", vault_languages={"en", "de"})   # None, or what is wrong
    overlap = measure_overlap("how do I sync?", title="Sync", text="...")       # {"title": 1.0, "text": 1.0}
    flags_of(question, title)                                                   # ["repeats_title"]

Overlap is the share of the question's distinct terms (the ``default``
analyzer's: casefolded words without stopwords, CJK 1- to 3-grams) found in
the title, and in the note's text. A question repeats the title when it holds
at least half of the title's terms: it then tests whether a strategy matches
names, not whether it understands what is asked.
"""

from __future__ import annotations

MAX_QUESTION_CHARS = 300
REPEATS_TITLE = 0.5
SHORT_WORDS = 3
WRITERS = ("agent", "person")


def writer_problem(writer: object) -> str | None:
    """None for ``agent``, ``person`` or ``model:<name>``; else what to write instead."""
    if isinstance(writer, str) and (writer in WRITERS or (writer.startswith("model:") and writer[6:].strip())):
        return None
    return (f"writer must be agent, person or model:<name>, got {writer!r}; fill in writer: in the worksheet "
            "or pass --writer")


def question_language(text: str, vault_languages: set[str]) -> str:
    """The question's language, preferring a language the vault has when the identifier is unsure.

    A question is short: among languages of one script the identifier often ranks a neighbour first
    (Spanish for Portuguese). The vault's language is taken when it is close to the best, or when the
    question has at most SHORT_WORDS words (a search typed as keywords). Han characters alone are
    identified as Chinese; in a vault with Japanese and no Chinese they are Japanese kanji (``暗号化``)."""
    from vaulteval.index.langs.catalog import UNDETERMINED
    from vaulteval.index.langs.identify import identifier, identify, prose
    from vaulteval.index.langs.scripts import candidates_of, han_languages, script_counts

    code = identify(text)
    if code in vault_languages or code == UNDETERMINED:
        return code
    script, candidates = candidates_of(script_counts(prose(text)))
    if script == "han":
        candidates = han_languages(vault_languages)
    ours = [c for c in candidates if c in vault_languages]
    if not ours:
        return code
    if script == "han":
        return ours[0]  # Japanese: Chinese, were it in the vault, was taken above
    ranked = dict(identifier().rank(text))
    best_ours = max(ours, key=lambda c: ranked.get(c, 0.0))
    if len(text.split()) <= SHORT_WORDS:  # "Tags", "saddle height": too few words to tell one script's languages
        return best_ours
    return best_ours if ranked.get(best_ours, 0.0) >= 0.5 * ranked.get(code, 1.0) else code


def question_problem(text: object, vault_languages: set[str]) -> str | None:
    """Why a written question cannot be used (empty, too long, a language the vault lacks), or None."""
    if not isinstance(text, str) or not text.strip():
        return "is empty; write the question, or delete the line"
    if len(text) > MAX_QUESTION_CHARS:
        return f"is longer than {MAX_QUESTION_CHARS} characters; ask it in fewer words"
    code = question_language(text, vault_languages)
    if vault_languages and code not in vault_languages:
        from vaulteval.index.langs.catalog import UNDETERMINED

        if code == UNDETERMINED:
            return "has no words in a language the vault has; write it in words"
        return (f"is in a language the vault lacks ({code}; the vault has {', '.join(sorted(vault_languages))}); "
                "ask in the note's language")
    return None


def measure_overlap(question: str, title: str, text: str) -> dict[str, float]:
    """Shares (0-1, three decimals) of the question's distinct terms found in the title and in the text."""
    from vaulteval.querysets.generate.lexical import terms

    asked = set(terms(question))
    if not asked:
        return {"title": 0.0, "text": 0.0}
    in_title, in_text = set(terms(title)), set(terms(text))
    return {"title": round(len(asked & in_title) / len(asked), 3), "text": round(len(asked & in_text) / len(asked), 3)}


def flags_of(question: str, title: str) -> list[str]:
    """``repeats_title`` when the question holds at least half of the title's terms."""
    from vaulteval.querysets.generate.lexical import terms

    named = set(terms(title))
    if named and len(named & set(terms(question))) / len(named) >= REPEATS_TITLE:
        return ["repeats_title"]
    return []
