"""Which notes a query can be served from: every index row checked as a query checks it, per note.

Usage::

    cur = page_currency(retriever.index(), retriever.integrity())
    unfindable_notes(vault.iter_pages(), cur)   # [{"page_path", "reason"}] for notes with text and no servable chunk
    own_title_misses(retriever, vault.iter_pages())   # notes not in the top 10 for their own title, and why

A chunk is servable when its record matches the index row, the note's bytes
still hash as indexed and its text is text of the note (the chunk-to-note check
of ``vaulteval.chunks.integrity``): exactly what ``retrieve`` asks before it
serves a hit. ``doctor`` reports what this finds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.vault.notefiles import read_note_file

if TYPE_CHECKING:
    from collections.abc import Iterable

    from vaulteval.vault.vault import Page

# Why a note with text has no chunk a query can be served from, checked in this order.
NOT_INDEXED = "not in the index (added, or given text, since the last provision)"
CHANGED = "changed since the index was built"
RECORDS_DIFFER = "its chunk records differ from the index"
REFUSED = "the chunk-to-note check refuses its chunks: their text is not the note's visible text"


@dataclass
class PageCurrency:
    """The indexed pages against the notes: changed or gone since the build, or current with chunks that a query
    would drop (a record that differs from the index, or text the note does not hold)."""

    indexed: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    chunk_pages: set[str] = field(default_factory=set)  # a record differs from the index
    stale_chunks: int = 0
    refused_pages: set[str] = field(default_factory=set)  # a chunk's text is not text of the note
    refused_chunks: int = 0
    servable: Counter = field(default_factory=Counter)  # page -> chunks a query would serve


def page_currency(index, checker) -> PageCurrency:
    """Usage: ``page_currency(retriever.index(), retriever.integrity())``: each indexed note read once while its
    rows are checked (rows of a note are consecutive in the index)."""
    out = PageCurrency()
    page_state: dict[str, bool] = {}
    check, checked_page = None, None
    for doc in index.iter_docs():
        page = doc.page_path
        if page != checked_page:
            check, checked_page = checker.query(), page  # one stat and one read of the note for its rows
        if page not in page_state:
            current = check.page_hash(page)
            if current is None:
                out.missing.add(page)
            elif current != doc.page_body_hash:
                out.changed.add(page)
            page_state[page] = current == doc.page_body_hash
        if not page_state[page]:
            continue
        rec = check.record(doc)
        if rec is None:
            out.stale_chunks += 1
            out.chunk_pages.add(page)
        elif not checker.text_of_note(doc, rec["raw_text"], check.note_bytes(page), bulk=True):
            out.refused_chunks += 1
            out.refused_pages.add(page)
        else:
            out.servable[page] += 1
    out.indexed = set(page_state)
    return out


def unindexed_pages(pages: "Iterable[Page]", indexed: set[str], empty: "set[str] | None" = None) -> set[str]:
    """The pages (``vault.iter_pages()``) with text that the index does not hold (new since the build);
    notes without visible text are added to ``empty`` when it is given."""
    out = set()
    for p in pages:
        if p.rel in indexed:
            continue
        if has_text(p.path):
            out.add(p.rel)
        elif empty is not None:
            empty.add(p.rel)
    return out


def unfindable_notes(pages: "Iterable[Page]", cur: PageCurrency, unindexed: "set[str] | None" = None) -> list[dict]:
    """``{"page_path", "reason"}`` for every note with text that no query can be served from, by path.

    ``unindexed``: ``unindexed_pages(pages, cur.indexed)`` when the caller has it already.
    """
    pages = list(pages)
    if unindexed is None:
        unindexed = unindexed_pages(pages, cur.indexed)
    out = []
    for p in pages:
        if cur.servable[p.rel]:
            continue
        if p.rel in unindexed:
            reason = NOT_INDEXED
        elif p.rel in cur.changed:
            if not has_text(p.path):
                continue  # emptied since the build: nothing to find
            reason = CHANGED
        elif p.rel in cur.chunk_pages:
            reason = RECORDS_DIFFER
        elif p.rel in cur.refused_pages:
            reason = REFUSED
        else:
            continue  # not indexed and without text (an empty note), or unreadable (doctor's skipped notes)
        out.append({"page_path": p.rel, "reason": reason})
    return sorted(out, key=lambda n: n["page_path"])


def has_text(path) -> bool:
    """True when a page would produce at least one chunk: it has text Obsidian shows (frontmatter-only stubs
    and notes holding only %%comments%% do not)."""
    from vaulteval.chunks.chunking import decode_page, split_frontmatter
    from vaulteval.chunks.obsidian import visible_text

    try:
        body = split_frontmatter(decode_page(read_note_file(path)))[1]
    except OSError:  # a FIFO or device is refused before any read (it would block), as is an unreadable file
        return False
    return bool(body.strip()) and bool(visible_text(body).strip())


def own_title_misses(retriever, pages: "Iterable[Page]", *, top: int = 10, depth: int = 100) -> list[dict]:
    """``{"page_path", "title", "reason"}`` for every note with text that the retriever's default pipeline
    (BM25, no rerank) does not rank in the first ``top`` pages for its own title; ``reason`` is None when the
    note does not match its own title's words at all (every chunk's prefix holds the title, so that is a fault).

    Reasons: another note has the same title (any letter case); no note matches the title's words; the note
    ranks below ``top`` (its rank given) because notes that use the title's words more often come first.
    """
    from vaulteval.chunks.chunking import parse_page

    titled = []
    for p in pages:
        if not has_text(p.path):
            continue
        try:
            titled.append((p.rel, parse_page(read_note_file(p.path), p.rel).title))
        except OSError:
            continue
    same = Counter(title.strip().casefold() for _rel, title in titled)
    out = []
    for rel, title in titled:
        try:
            if rel in _pages(retriever.retrieve(title, top=top)):
                continue
            found = _pages(retriever.retrieve(title, top=depth, bm25_top=depth * 4))
        except UsageError as exc:  # a title no query may be (too long)
            out.append({"page_path": rel, "title": title, "reason": f"its title is no valid query: {exc}"})
            continue
        if same[title.strip().casefold()] > 1:
            reason = f"duplicate title: {same[title.strip().casefold()]} notes have it"
        elif not found:
            reason = "no note matches its title's words"
        elif rel in found:
            reason = f"outranked: rank {found.index(rel) + 1} for its title; notes that use its words more come first"
        elif len(found) >= depth:
            reason = f"outranked: below rank {depth} for its title; its words are common in the vault"
        else:
            reason = None  # fewer than depth notes match its title's words, and it is not one of them
        out.append({"page_path": rel, "title": title, "reason": reason})
    return out


def _pages(result) -> list[str]:
    return [c.page_path for c in result.candidates]
