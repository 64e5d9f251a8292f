"""Kinds cut from a vault's sentences: backlink, link-text, no-title-words and summary; they leak less than names do.

Usage::

    backlink_candidates(ctx) + link_text_candidates(ctx) + summary_candidates(ctx)
    no_title_word_candidates(ctx, heading_candidates(ctx) + backlink_candidates(ctx) + first_sentence_candidates(ctx))

A backlink query is the sentence around ``[[link]]`` in another note with
the link removed: another author's words for the target. A summary query is
the first sentence of each section of a page without the page's distinctive
words (title, aliases, headings and its ``RARE_TERMS`` rarest terms): the
target described in everyday words. A link-text query is the text another
note shows for a link (``[[Target|what the author called it]]``) when it
says more than the target's name: another author's name for the page.
Sentences are read as prose
(``prose.py``) and their cut edges trimmed; ``wellformed.py`` judges them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaulteval.querysets.generate.candidates import Candidate
from vaulteval.querysets.generate.prose import CUT, HOLE, mend, prose, sentences, tidy
from vaulteval.querysets.generate.wellformed import trim_edges

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context
    from vaulteval.querysets.generate.pages import PageFacts

RARE_TERMS = 8


def _sentence_around(line: str, link: str) -> str:
    """The sentence of ``line`` holding ``link``, as prose, mended around that link and anything else cleaning
    removed (``prose.mend``; "" when that leaves a fragment), cut edges trimmed."""
    text = prose(line, keep=link, cuts=True)
    found = next((s for s in sentences(text) if HOLE in s), "")
    return trim_edges(mend(found))


def backlink_candidates(ctx: "Context") -> list[Candidate]:
    return ctx.cached("backlink", lambda: _backlinks(ctx))


def _backlinks(ctx: "Context") -> list[Candidate]:
    out = []
    for f in ctx.facts:
        for line, link, text in f.links:
            if text.lstrip().startswith("|"):  # a table row is no sentence
                continue
            target = ctx.link_dest(f.rel, link)
            if target is None or target == f.rel:
                continue
            sentence = _sentence_around(text, link)
            if sentence:
                out.append(Candidate("backlink", "sentence", sentence, ((target, 2),), f.rel, line,
                                     ctx.by_rel[target].stratum if target in ctx.by_rel else f.stratum))
    return out


def link_text_candidates(ctx: "Context") -> list[Candidate]:
    """The display text of a piped ``[[Target|text]]`` in another note, as prose, when some of its words are not the
    target's title, aliases or the linked heading (else it is a title query again)."""
    from vaulteval.querysets.generate.lexical import terms

    out = []
    for f in ctx.facts:
        for line, link, _ in f.links:
            inner = link[2:-2]
            if "|" not in inner:
                continue
            where, shown = inner.split("|", 1)
            target = ctx.link_dest(f.rel, link)
            facts = ctx.by_rel.get(target) if target else None
            if target == f.rel or facts is None:
                continue
            text = trim_edges(mend(prose(shown, cuts=True)))
            named = set(terms(" ".join([facts.title, *facts.aliases, where.partition("#")[2]])))
            if text and not set(terms(text)) <= named:
                out.append(Candidate("link-text", "display", text, ((target, 2),), f.rel, line, facts.stratum))
    return out


def prose_lines(ctx: "Context", f: "PageFacts") -> list[tuple[int, str, int]]:
    """(line, prose, section) of every body line outside code fences, tables and headings; section counts headings."""
    return ctx.cached(f"prose|{f.rel}", lambda: _prose_lines(f))


def _prose_lines(f: "PageFacts") -> list[tuple[int, str, int]]:
    out = []
    in_fence, section = False, 0
    for line, text in f.body_lines():
        stripped = text.lstrip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or stripped.startswith(("|", "---", "<")):
            continue
        if stripped.startswith("#") and stripped.lstrip("#").startswith(" "):
            section += 1
            continue
        words = prose(text, cuts=True)
        if words.replace(CUT, "").strip():
            out.append((line, words, section))
    return out


def whole_sentences(words: str) -> list[str]:
    """The sentences of a line of prose, each mended around what cleaning removed; fragments left out."""
    return [mended for s in sentences(words) if (mended := mend(s))]


def first_sentence_candidates(ctx: "Context") -> list[Candidate]:
    """Each page's first sentence of prose (what the note says it is about); a source of no-title-words only."""
    out = []
    for f in ctx.facts:
        for line, words, _ in prose_lines(ctx, f)[:1]:
            found = whole_sentences(words)
            if found:
                out.append(Candidate("first-sentence", "first-sentence", found[0], ((f.rel, 2),), f.rel, line,
                                     f.stratum))
    return out


def _drop_words(text: str, drop: set[str], sentence: bool = False) -> str:
    """``text`` without every word whose terms (default analyzer) are all in ``drop``, cut edges trimmed. A
    ``sentence`` is mended around the words it lost (``prose.mend``: "" when they leave a fragment); a heading,
    a name, reads well without them."""
    from vaulteval.querysets.generate.lexical import word_terms

    kept = []
    for word in text.split():
        found = word_terms(word)
        if not (found and found <= drop):
            kept.append(word)
        elif sentence:
            kept.append(CUT + word[len(word.rstrip(".,;:!?")):])  # the hole keeps the punctuation after the word
    return trim_edges(mend(tidy(" ".join(kept))) if sentence else tidy(" ".join(kept)))


def no_title_word_candidates(ctx: "Context", sources: list[Candidate]) -> list[Candidate]:
    """Heading, backlink and first-sentence queries with every word of the target's title (and aliases) removed."""
    from vaulteval.querysets.generate.lexical import terms

    out = []
    for c in sources:
        facts = ctx.by_rel.get(c.relevant[0][0])
        if facts is None:
            continue
        drop = set(terms(" ".join([facts.title, *facts.aliases])))
        text = _drop_words(c.text, drop, sentence=c.kind != "heading")  # "The team takes seriously." is no query
        if text and text != c.text:
            out.append(Candidate("no-title-words", f"from-{c.kind}", text, c.relevant, c.page, c.line, c.stratum))
    return out


def summary_candidates(ctx: "Context") -> list[Candidate]:
    """The first sentence of each section, without the page's distinctive words: title, aliases, headings and its
    ``RARE_TERMS`` rarest terms. What is left describes the page in everyday words."""
    from vaulteval.querysets.generate.lexical import terms

    out = []
    for f in ctx.facts:
        drop = set(terms(" ".join([f.title, *f.aliases, *(h for _, h in f.headings)])))
        drop |= ctx.lexicon.rare_terms(f.rel, RARE_TERMS)
        seen_sections = set()
        for line, words, section in prose_lines(ctx, f):
            if section in seen_sections:
                continue
            seen_sections.add(section)
            found = whole_sentences(words)
            if not found:
                continue
            text = _drop_words(found[0], drop)
            if text:
                out.append(Candidate("summary", "section" if section else "lead", text, ((f.rel, 2),), f.rel, line,
                                     f.stratum))
    return out
