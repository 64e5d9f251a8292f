"""Where a chunk sits in its note: the file lines it came from and the headings above it.

Usage::

    where = chunk_location(decode_page(raw), record["raw_text"])
    where   # {"heading_path": ["Descaling", "How often"], "first_line": 12, "last_line": 19} or None

A chunk's text is the note's visible text (``vaulteval.chunks.visible``) cut at
paragraphs, with whitespace changed only where paragraphs were joined or cut;
so it is found in the visible text by its characters, whitespace aside, and
mapped back to the body and then to file lines (frontmatter counted, as
``vaulteval read`` counts them). A record another tool wrote from the raw body
is looked up in the raw body.
"""

from __future__ import annotations

import re

from vaulteval.chunks.obsidian import headings
from vaulteval.chunks.pagetext import split_frontmatter
from vaulteval.chunks.visible import visible


def _find(haystack: str, needle: str) -> tuple[int, int] | None:
    """(start, end) of ``needle`` in ``haystack``, exactly or with other whitespace between its paragraphs."""
    at = haystack.find(needle)
    if at >= 0:
        return at, at + len(needle)
    pieces = [p for p in needle.split("\n\n") if p]
    if not pieces:
        return None
    # Each paragraph (or piece of one) is verbatim in the note; only what joins them may differ.
    start = haystack.find(pieces[0])
    for _ in range(8):  # a few repeats of the first paragraph (a "---" line) before the slow way
        if start < 0:
            break
        end = start + len(pieces[0])
        for piece in pieces[1:]:
            nxt = haystack.find(piece, end)
            if nxt < 0 or haystack[end:nxt].strip():
                break
            end = nxt + len(piece)
        else:
            return start, end
        start = haystack.find(pieces[0], start + 1)
    # A cut inside a run with no space (a long CJK paragraph) joined two pieces with "\n\n": \s* allows that.
    m = re.search(r"\s*".join(map(re.escape, needle.split())), haystack)
    return (m.start(), m.end()) if m else None


def heading_path(heads: list[dict], line: int) -> list[str]:
    """The headings enclosing body line ``line``, outermost first (a deeper one replaces its siblings)."""
    path: list[tuple[int, str]] = []
    for head in heads:
        if head["line"] > line:
            break
        while path and path[-1][0] >= head["level"]:
            path.pop()
        path.append((head["level"], head["text"]))
    return [text for _, text in path]


def chunk_location(text: str, raw: str, snippet: str | None = None) -> dict | None:
    """``{"heading_path", "first_line", "last_line"}`` of the chunk ``raw`` in the decoded note ``text``, with
    ``snippet_line`` and ``snippet_heading_path`` for ``snippet`` (a piece of ``raw``) when given."""
    _, body = split_frontmatter(text)
    offset = text[: len(text) - len(body)].count("\n")  # body line 1 is file line offset + 1
    shown = visible(body)
    source = shown.source_offset
    span = _find(shown.text, raw)
    if span is None:
        shown_text, span, source = body, _find(body, raw), (lambda pos: pos)
        if span is None:
            return None
    else:
        shown_text = shown.text
    start, end = source(span[0]), source(max(span[1] - 1, span[0]))
    first = body.count("\n", 0, start) + 1
    last = first + body.count("\n", start, end)
    heads = headings(body)
    out = {"heading_path": heading_path(heads, first), "first_line": first + offset, "last_line": last + offset}
    if snippet is not None:
        piece = _find(shown_text[span[0]:span[1]], snippet)
        line = body.count("\n", 0, source(span[0] + piece[0])) + 1 if piece else first
        out["snippet_line"], out["snippet_heading_path"] = line + offset, heading_path(heads, line)
    return out
