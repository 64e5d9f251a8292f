"""Is a chunk's text text of its note? The check that refuses a record forged with right checksums.

Usage: ``chunk_in_note(raw_text, note_bytes)`` -> bool.

A chunk is paragraphs of the note's visible text (and the tail of the chunk
before it), joined by blank lines, so with every whitespace run collapsed to
one space it occurs in the visible text collapsed the same way. Most chunks
occur in the note as written; for the others the note goes through the
chunker's own ``visible_text`` (imported only then: this runs on the query
path, which must stay lean).
"""

from __future__ import annotations

def _collapse(text: str) -> str:
    return " ".join(text.split())


def chunk_in_note(raw: str, data: bytes) -> bool:
    needle = _collapse(raw)
    if not needle:
        return False
    # The chunker's decoding (vaulteval.chunks.chunking.decode_page); line endings and a BOM collapse away.
    text = data.decode("utf-8", errors="replace")
    if needle in _collapse(text):
        return True
    from vaulteval.chunks.obsidian import visible_text

    # The whole note: its frontmatter only adds words, and the chunker's comment, link and callout rules apply.
    return needle in _collapse(visible_text(text))
