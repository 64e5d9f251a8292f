"""Is a chunk's text text of its note? The check that refuses a record forged with right checksums.

Usage: ``chunk_in_note(raw_text, note_bytes)`` -> bool.

A chunk is paragraphs of the note's visible text (and the tail of the chunk
before it), joined by blank lines, so with every whitespace run collapsed to
one space it occurs in the visible text collapsed the same way. Three tries,
cheapest first, each accepting only text the note holds:

1. the note as written (a chunk of a note without markup);
2. the note with its links and callout markers shown as reading view shows
   them, the rewrite most notes need (``<https://...>`` autolinks as their
   address, ``[[target|label]]`` wikilinks and note embeds as the label or the
   note's name, ``[label](url)`` as the label, a media embed ``![[x.png]]`` as
   nothing, ``> [!tip] Title`` as ``> Title``), done by one pattern without
   telling code from prose: a link's text inside code is still text of the
   note, and nothing is added that the note does not hold;
3. the chunker's own ``visible_text`` (imported only then: this runs on the
   query path, which must stay lean).

A chunk found by none of them is not text of the note.
"""

from __future__ import annotations

import re

# A Markdown link shown as its label (reading view's own rule, in ``vaulteval.chunks.visible``, takes more URL
# forms and rewrites the label too: what this one misses is left to the visible-text pass).
_MDLINK = r"\[(?P<label>[^\[\]\n]*)\]\(<?[^)\s>\[\]]+>?(?:[ \t]+\"[^\"\n]*\")?\)"
_compiled: dict[str, re.Pattern[str]] = {}


def _pattern(kind: str) -> re.Pattern[str]:
    """Compiled on first use: a CLI query whose chunks all occur as written never pays for it. ``links``:
    autolinks, embeds, wikilinks and Markdown links; ``callout``: callout markers. Every branch starts with
    a literal '<', '!', '[' or (per line) '>', so the scan skips to those characters."""
    if kind not in _compiled:
        from vaulteval.chunks.visible import construct

        if kind == "links":
            source = "|".join(f"(?P<{name}>{construct(name)})" for name in ("autolink", "embed", "wikilink"))
            source += f"|(?P<mdlink>{_MDLINK})"
        else:
            source = f"(?P<callout>{construct('callout')})"
        _compiled[kind] = re.compile(source)
    return _compiled[kind]


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _shown(m: re.Match) -> str:
    """What reading view shows of one link or callout marker: every character of it comes from it as written."""
    from vaulteval.chunks.visible import shown

    if m.lastgroup == "mdlink":
        return m.group("label")
    if m.lastgroup == "embed" and "|" in m.group("emb"):
        return m.group()  # an embed's label may be a size or a file name: left to the visible-text pass
    return shown(m, "")


def links_shown(text: str) -> str:
    """``text`` with its links, embeds and callout markers as reading view shows them (code not told apart)."""
    if "<" in text or "[" in text:
        text = _pattern("links").sub(_shown, text)
    return _pattern("callout").sub(_shown, text) if "[!" in text else text


def chunk_in_note(raw: str, data: bytes) -> bool:
    if not raw or raw.isspace():
        return False
    # The chunker's decoding (vaulteval.chunks.chunking.decode_page); line endings and a BOM collapse away.
    text = data.decode("utf-8", errors="replace")
    # Each try first looks for the chunk as it is (most are; what occurs as is occurs collapsed too), then
    # with whitespace collapsed on both sides.
    if raw in text:
        return True
    needle = _collapse(raw)
    if needle in _collapse(text):
        return True
    linked = links_shown(text)
    if linked is not text and (raw in linked or needle in _collapse(linked)):
        return True
    from vaulteval.chunks.obsidian import visible_text

    # The whole note: its frontmatter only adds words, and the chunker's comment, link and callout rules apply.
    return needle in _collapse(visible_text(text))
