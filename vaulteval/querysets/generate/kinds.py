"""Known-item kinds built from what a vault knows about itself: title, alias, heading, backlink, no-title-words.

Usage::

    ctx = Context(facts, seed=0)
    title_candidates(ctx) + alias_candidates(ctx) + heading_candidates(ctx) + backlink_candidates(ctx)

Every query names the page it came from and the line. Titles, aliases and
headings shared by more than ``MAX_SHARED`` pages are skipped: they are not
known items. A backlink query is the sentence around ``[[link]]`` in another
note with the link removed; the linked page is relevant (grade 2), and the
linking page, the natural distractor, is the query's source.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from vaulteval.querysets.generate.candidates import Candidate, rng_for, title_words, typo, without_words
from vaulteval.querysets.generate.pages import LINK_RE, plain

if TYPE_CHECKING:
    from vaulteval.querysets.generate.pages import PageFacts
    from vaulteval.querysets.links import LinkResolver

MAX_SHARED = 3
MIN_SENTENCE_WORDS = 3
MAX_QUERY_CHARS = 300
_SENTENCE_RE = re.compile(r"[^.!?。！？]+[.!?。！？]*")
_EMPTY_BRACKETS_RE = re.compile(r"\(\s*\)|\[\s*\]")
_SPACE_PUNCT_RE = re.compile(r"\s+([.,;:!?。，！？])")
_LETTERS_RE = re.compile(r"[^\W\d_]{3,}")


class Context:
    """The pages plus lookups every kind needs, built once."""

    def __init__(self, facts: "list[PageFacts]", seed: int = 0):
        self.facts = facts
        self.seed = seed
        self.by_rel = {f.rel: f for f in facts}
        self._cache: dict[str, Any] = {}

    def cached(self, key: str, make: Callable[[], Any]) -> Any:
        """A value computed once per generation (e.g. the plain text of every CJK page)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @cached_property
    def titles(self) -> dict[str, list[str]]:
        """Casefolded title or alias -> pages that carry it (a page once per name)."""
        out: dict[str, list[str]] = defaultdict(list)
        for f in self.facts:
            for name in dict.fromkeys([f.title.casefold(), *(a.casefold() for a in f.aliases)]):
                out[name].append(f.rel)
        return out

    @cached_property
    def heading_pages(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for f in self.facts:
            for _, text in f.headings:
                out[text.casefold()].add(f.rel)
        return out

    @cached_property
    def resolver(self) -> "LinkResolver":
        from vaulteval.querysets.links import LinkResolver

        aliases = {f.rel: f.aliases for f in self.facts}
        resolver = LinkResolver(aliases)
        resolver._aliases = {}
        for rel, names in aliases.items():  # aliases already read: no second pass over the files
            for name in names:
                bucket = resolver._aliases.setdefault(name.casefold(), [])
                if rel not in bucket:
                    bucket.append(rel)
        return resolver

    def known_item(self, name: str) -> tuple[tuple[str, int], ...] | None:
        """Every page named ``name`` (grade 2), or None when too many share it to be a known item."""
        pages = self.titles.get(name.casefold(), [])
        if not pages or len(pages) > MAX_SHARED:
            return None
        return tuple((p, 2) for p in sorted(pages))


def _name_variants(ctx: Context, kind: str, f: "PageFacts", name: str, line: int) -> list[Candidate]:
    relevant = ctx.known_item(name)
    if relevant is None or not name.strip():
        return []
    out = [Candidate(kind, "exact", name, relevant, f.rel, line, f.stratum)]
    parts = name.split()
    if len(parts) >= 3:
        rng = rng_for(ctx.seed, kind, "partial", f.rel, name)
        keep = rng.randrange(2, len(parts))
        start = rng.randrange(0, len(parts) - keep + 1)
        out.append(Candidate(kind, "partial", " ".join(parts[start:start + keep]), relevant, f.rel, line, f.stratum))
    slipped = typo(name, rng_for(ctx.seed, kind, "typo", f.rel, name))
    if slipped and slipped != name:
        out.append(Candidate(kind, "typo", slipped, relevant, f.rel, line, f.stratum))
    return out


def title_candidates(ctx: Context) -> list[Candidate]:
    return [c for f in ctx.facts for c in _name_variants(ctx, "title", f, f.title, f.title_line)]


def alias_candidates(ctx: Context) -> list[Candidate]:
    out = []
    for f in ctx.facts:
        line = _frontmatter_line(f, "alias")
        for alias in f.aliases:
            if alias.casefold() != f.title.casefold():
                out += _name_variants(ctx, "alias", f, alias, line)
    return out


def _frontmatter_line(f: "PageFacts", key: str) -> int:
    for i in range(1, min(f.body_start, len(f.lines) + 1)):
        if f.lines[i - 1].lstrip().lower().startswith(key):
            return i
    return 1


def heading_candidates(ctx: Context) -> list[Candidate]:
    out = []
    for f in ctx.facts:
        for line, text in f.headings:
            if len(ctx.heading_pages[text.casefold()]) == 1 and len(text) <= MAX_QUERY_CHARS:
                out.append(Candidate("heading", "heading", text, ((f.rel, 2),), f.rel, line, f.stratum))
    return out


def _sentence_around(line: str, link: str) -> str:
    """The sentence of ``line`` holding ``link``, with that link removed and other links shown as their text."""
    at = line.find(link)
    for m in _SENTENCE_RE.finditer(line):
        if m.start() <= at < m.end():
            sentence = m.group(0).replace(link, " ", 1)
            break
    else:
        sentence = line.replace(link, " ", 1)
    sentence = LINK_RE.sub(lambda m: m.group(1).split("|")[-1].split("#")[0], sentence)
    sentence = _EMPTY_BRACKETS_RE.sub(" ", plain(sentence))
    return " ".join(_SPACE_PUNCT_RE.sub(r"\1", sentence).split()).strip(" :;,-—")


def backlink_candidates(ctx: Context) -> list[Candidate]:
    from vaulteval.querysets.links import AmbiguousLink, UnknownLink

    out = []
    for f in ctx.facts:
        for line, link, text in f.links:
            if text.lstrip().startswith("|"):  # a table row is no sentence
                continue
            try:
                target = ctx.resolver.resolve(link)
            except (UnknownLink, AmbiguousLink):
                continue
            if target == f.rel:
                continue
            sentence = _sentence_around(text, link)
            if len(_LETTERS_RE.findall(sentence)) >= MIN_SENTENCE_WORDS + 1 and len(sentence) <= MAX_QUERY_CHARS:
                out.append(Candidate("backlink", "sentence", sentence, ((target, 2),), f.rel, line,
                                     ctx.by_rel[target].stratum if target in ctx.by_rel else f.stratum))
    return out


def first_sentence_candidates(ctx: Context) -> list[Candidate]:
    """Each page's first sentence of prose (what the note says it is about); a source of no-title-words only."""
    out = []
    for f in ctx.facts:
        for line, text in f.body_lines():
            words = plain(text)
            if not words or text.lstrip().startswith(("#", "|", "```", "---")):
                continue
            sentence = _SENTENCE_RE.match(words)
            sentence_text = sentence.group(0).strip() if sentence else words
            if len(sentence_text.split()) >= MIN_SENTENCE_WORDS + 1 and len(sentence_text) <= MAX_QUERY_CHARS:
                out.append(Candidate("first-sentence", "first-sentence", sentence_text, ((f.rel, 2),), f.rel, line,
                                     f.stratum))
            break
    return out


def no_title_word_candidates(ctx: Context, sources: list[Candidate]) -> list[Candidate]:
    """Heading, backlink and first-sentence queries with every word of the target's title (and aliases) removed."""
    out = []
    for c in sources:
        target = c.relevant[0][0]
        facts = ctx.by_rel.get(target)
        if facts is None:
            continue
        drop = title_words(facts.title).union(*(title_words(a) for a in facts.aliases))
        text = " ".join(_SPACE_PUNCT_RE.sub(r"\1", without_words(c.text, drop)).split()).strip(" :;,-—")
        if len(_LETTERS_RE.findall(text)) >= 2 and text != c.text:
            out.append(Candidate("no-title-words", f"from-{c.kind}", text, c.relevant, c.page, c.line, c.stratum))
    return out
