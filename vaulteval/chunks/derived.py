"""Is a chunk's text text of its note? The check that refuses a record forged with right checksums.

Usage: ``chunk_in_note(raw_text, note_bytes)`` -> bool; ``note = NoteText(note_bytes)``, then
``note.holds(raw_text, bulk=True)`` for each chunk of one note.

A chunk is paragraphs of the note's visible text (and the tail of the chunk
before it), joined by blank lines (a paragraph cut inside a run without
spaces is joined as written), so with every whitespace run collapsed to one
space it occurs in the visible text collapsed the same way. Three tries,
cheapest first, each accepting only text the note holds:

1. the note as written (a chunk of a note without markup);
2. the note with its links and callout markers shown as reading view shows
   them, the rewrite most notes need (``<https://...>`` autolinks as their
   address, ``[[target|label]]`` wikilinks and note embeds as the label or the
   note's name, ``[label](url)`` as the label, a media embed ``![[x.png]]`` as
   nothing, ``> [!tip] Title`` as ``> Title``), done by one pattern without
   telling code from prose: a link's text inside code is still text of the
   note, and nothing is added that the note does not hold;
3. the text the chunker cut: the visible text (``visible_text``) of the body
   after the frontmatter, of the part of the note under the size bound
   (imported only then: this runs on the query path, which must stay lean).

A chunk found by none of them is not text of the note.
"""

from __future__ import annotations

import re

from vaulteval.chunks.pagetext import decode_page, indexed_part, max_note_bytes, split_frontmatter
from vaulteval.errors import UsageError

# Forms of ``vaulteval.chunks.visible``: autolink, embed, wikilink, Markdown link. Every branch starts with a
# literal '<', '!' or '[' (no lookbehind, no anchor), so the scan skips to those characters.
_LINK = (r"<(?P<auto>[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>"
         r"|!\[\[(?P<embed>[^\[\]\n]+?)\]\]"
         r"|\[\[(?P<wiki>[^\[\]\n]+?)\]\]"
         r"|\[(?P<label>[^\[\]\n]*)\]\(<?[^)\s>\[\]]+>?(?:[ \t]+\"[^\"\n]*\")?\)")
_CALLOUT = r"^(?P<quote>[ \t]*(?:>[ \t]*)+)\[!(?P<kind>[^\]\n]+)\][+-]?[ \t]*(?=(?P<title>[^\n]*))"
_compiled: dict[str, re.Pattern[str]] = {}


def _pattern(source: str) -> re.Pattern[str]:
    """Compiled on first use: a CLI query whose chunks all occur as written never pays for it."""
    if source not in _compiled:
        _compiled[source] = re.compile(source, re.MULTILINE)
    return _compiled[source]


def _media() -> frozenset[str]:
    from vaulteval.chunks.visible import MEDIA_EXTENSIONS

    return MEDIA_EXTENSIONS


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _shown_link(m: re.Match) -> str:
    """What reading view shows of one link: every character of it comes from the link as written."""
    if m.group("auto") is not None:
        return m.group("auto")
    if m.group("label") is not None:
        return m.group("label")
    inner = m.group("wiki")
    if inner is None:
        inner = m.group("embed")
        if "|" in inner:
            return m.group()  # an embed's label may be a size or a file name: left to the visible-text pass
        name = inner.partition("#")[0].strip()
        if "." in name and name.rsplit(".", 1)[-1].lower() in _media():
            return ""
    target, _, label = inner.partition("|")
    if label.strip():
        return label.strip()
    page, _, sub = target.partition("#")
    page = page.strip().rsplit("/", 1)[-1].removesuffix(".md")
    sub = sub.strip().replace("#", " ") if not sub.startswith("^") else ""
    return f"{page} {sub}".strip() if sub else page


def _shown_callout(m: re.Match) -> str:
    return m.group("quote") if m.group("title").strip() else m.group("quote") + m.group("kind").strip().capitalize()


def links_shown(text: str) -> str:
    """``text`` with its links, embeds and callout markers as reading view shows them (code not told apart)."""
    if "<" in text or "[" in text:
        text = _pattern(_LINK).sub(_shown_link, text)
    return _pattern(_CALLOUT).sub(_shown_callout, text) if "[!" in text else text


def chunk_in_note(raw: str, data: bytes) -> bool:
    return NoteText(data).holds(raw)


class NoteText:
    """One note's text in the forms the tries compare against, each worked out once, on first need.

    ``holds(raw)`` tries the cheap forms first (one query's few candidates); ``holds(raw, bulk=True)`` tries the
    note's visible text second, for a caller that checks every chunk of the note (``doctor``): nearly every
    chunk is found there, and the link rewrite and its collapsed forms are then never made. The answer is the
    same in either order: a chunk is accepted when any try finds it.
    """

    __slots__ = ("data", "text", "_linked", "_collapsed", "_collapsed_linked", "_chunked")

    def __init__(self, data: bytes):
        self.data = data
        # The chunker's decoding: a BOM dropped, line endings as \n (a fence closed by "```\r\n" closes here too).
        self.text = decode_page(data)
        self._linked = self._collapsed = self._collapsed_linked = self._chunked = None

    def holds(self, raw: str, *, bulk: bool = False) -> bool:
        """Whether ``raw`` is text of this note."""
        if not raw or raw.isspace():
            return False
        if raw in self.text:
            return True
        if bulk:
            return _collapse(raw) in self._chunked_collapsed() or self._linked_holds(raw)
        return self._linked_holds(raw) or _collapse(raw) in self._chunked_collapsed()

    def _linked_holds(self, raw: str) -> bool:
        # The chunk as it is in the note with its links shown (most chunks of notes with links) is looked for
        # before collapsing anything; what occurs as is occurs collapsed too.
        if self._linked is None:
            self._linked = links_shown(self.text)
        linked = self._linked
        if linked is not self.text and raw in linked:
            return True
        needle = _collapse(raw)
        if self._collapsed is None:
            self._collapsed = _collapse(self.text)
        if needle in self._collapsed:
            return True
        if linked is self.text:
            return False
        if self._collapsed_linked is None:
            self._collapsed_linked = _collapse(linked)
        return needle in self._collapsed_linked

    def _chunked_collapsed(self) -> str:
        if self._chunked is None:
            self._chunked = _collapse(_chunked_text(self.data, self.text))
        return self._chunked


def _chunked_text(data: bytes, text: str) -> str:
    """What the chunker cut: the visible text of the body (the part of a note over the size bound left out)."""
    from vaulteval.chunks.obsidian import visible_text

    try:
        part = indexed_part(data, max_note_bytes())
    except UsageError:  # a malformed bound stops provisioning before any chunk is made
        part = data
    if len(part) < len(data):
        text = decode_page(part)
    return visible_text(split_frontmatter(text)[1])
