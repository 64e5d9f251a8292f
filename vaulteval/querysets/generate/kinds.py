"""Known-item kinds built from what a vault knows about itself: title, alias, heading; and the shared Context.

Usage::

    ctx = Context(facts, seed=0)
    title_candidates(ctx) + alias_candidates(ctx) + heading_candidates(ctx)

Every query names the page it came from and the line. Titles, aliases and
headings shared by more than ``MAX_SHARED`` pages are skipped: they are not
known items. A typo variant is made only from a word of 5+ letters: a slip
in a shorter name makes another word ("Yes" -> "Tue"), not a typo.
Sentence kinds live in ``sentence_kinds.py``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from vaulteval.querysets.generate.candidates import Candidate, rng_for, typo

if TYPE_CHECKING:
    from vaulteval.querysets.generate.pages import PageFacts
    from vaulteval.querysets.generate.lexical import Lexicon
    from vaulteval.querysets.links import LinkResolver

MAX_SHARED = 3
MAX_QUERY_CHARS = 300


class Context:
    """The pages plus lookups every kind needs, built once."""

    def __init__(self, facts: "list[PageFacts]", seed: int = 0, notes_rel: str = "wiki"):
        self.facts = facts
        self.seed = seed
        self.notes_rel = notes_rel
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
    def lexicon(self) -> "Lexicon":
        """Terms of every page (overlap, rare terms, plain-BM25 rank), built on first use."""
        from vaulteval.querysets.generate.lexical import Lexicon

        return Lexicon(self.facts)

    @cached_property
    def resolver(self) -> "LinkResolver":
        from vaulteval.querysets.links import LinkResolver

        aliases = {f.rel: f.aliases for f in self.facts}
        resolver = LinkResolver(aliases, notes_rel=self.notes_rel)
        resolver._aliases = {}
        for rel, names in aliases.items():  # aliases already read: no second pass over the files
            for name in names:
                bucket = resolver._aliases.setdefault(name.casefold(), [])
                if rel not in bucket:
                    bucket.append(rel)
        return resolver

    def link_dest(self, source: str, link: str) -> str | None:
        """The note a ``[[link]]`` written in ``source`` leads to, as Obsidian resolves it; None when it leads to
        no note or to several."""
        where = link[2:-2].split("|", 1)[0].split("#", 1)[0]
        path, status = self.resolver.link_status(source, where)
        return path if status == "resolved" else None

    def known_item(self, name: str) -> tuple[tuple[str, int], ...] | None:
        """Every page named ``name`` (grade 2), or None when too many share it to be a known item."""
        pages = self.titles.get(name.casefold(), [])
        if not pages or len(pages) > MAX_SHARED:
            return None
        return tuple((p, 2) for p in sorted(pages))


_SYMBOL_EDGES_RE = re.compile(r"^[^\w\"'“‘¿¡(\[]+|[^\w\"'”’.!?)\]+]+$")


def as_typed(name: str) -> str:
    """A name as a person types it: without the emoji or symbols it starts or ends with ("🗂️ People" -> "People")."""
    return _SYMBOL_EDGES_RE.sub("", name.strip())


def _name_variants(ctx: Context, kind: str, f: "PageFacts", name: str, line: int) -> list[Candidate]:
    relevant = ctx.known_item(name)
    name = as_typed(name)
    if relevant is None or not name:
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
            typed = as_typed(text)
            if len(ctx.heading_pages[text.casefold()]) == 1 and typed and len(typed) <= MAX_QUERY_CHARS:
                out.append(Candidate("heading", "heading", typed, ((f.rel, 2),), f.rel, line, f.stratum))
    return out
