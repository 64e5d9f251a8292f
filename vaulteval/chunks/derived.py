"""Is a chunk's text text of its note? The check that refuses a record forged with right checksums.

Usage: ``chunk_in_note(raw_text, note_bytes, "wiki/a.md")`` -> bool.

A chunk is paragraphs of the note's visible text (and the tail of the chunk
before it), joined by blank lines, so with every whitespace run collapsed to one
space it occurs in the note's visible text collapsed the same way. The quick
test decodes the whole note as the chunker does; a note whose markup the
quick test cannot see through (Obsidian syntax, frontmatter) is re-read by the
chunker's own parser. Nothing here imports the parser unless it is needed: the
check runs on the query path.
"""

from __future__ import annotations


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _decoded(data: bytes) -> str:
    # The chunker's decoding (vaulteval.chunks.chunking.decode_page): only whitespace differs otherwise.
    text = data.decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def chunk_in_note(raw: str, data: bytes, rel: str) -> bool:
    needle = _collapse(raw)
    if not needle:
        return False
    text = _decoded(data)
    if "%%" not in text and "[[" not in text and "[!" not in text and needle in _collapse(text):
        return True
    from vaulteval.chunks import chunking
    from vaulteval.chunks.store import visible_body

    parsed = chunking.parse_page(chunking.indexable_bytes(data, rel, chunking.max_note_bytes()), rel)
    return needle in _collapse(visible_body(parsed))
