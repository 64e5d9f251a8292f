"""Where a chunk sits in its note: the file lines it came from and the headings above it.

Usage::

    where = chunk_location(decode_page(raw), record["raw_text"])
    where   # {"heading_path": ["Descaling", "How often"], "first_line": 12, "last_line": 19} or None

    layouts = NoteLayouts()                      # kept by an open Retriever, for many queries
    layouts.locate(page_path, data, raw, snippet, signature)   # the same answer, remembered per note bytes and chunk
    layouts.locate_known(page_path, signature, raw, snippet)   # without reading: UNKNOWN unless that signature was seen

A chunk's text is the note's visible text (``vaulteval.chunks.visible``) cut at
paragraphs, with whitespace changed only where paragraphs were joined or cut;
so it is found in the visible text by its characters, whitespace aside, and
mapped back to the body and then to file lines (frontmatter counted, as
``vaulteval read`` counts them). A record another tool wrote from the raw body
is looked up in the raw body.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right

from vaulteval.chunks.obsidian import headings
from vaulteval.chunks.pagetext import decode_page, split_frontmatter
from vaulteval.chunks.visible import visible
from vaulteval.vault.digest import blake2b

_RUN = re.compile(r"\S+")  # \S is the complement of str.split()'s whitespace (both Py_UNICODE_ISSPACE)


class _Squeezed:
    """A text without its whitespace, and where each run of non-space characters came from."""

    __slots__ = ("text", "starts", "origins")

    def __init__(self, haystack: str):
        runs = list(_RUN.finditer(haystack))
        self.origins = [m.start() for m in runs]
        self.starts, at = [], 0
        for m in runs:
            self.starts.append(at)
            at += m.end() - m.start()
        self.text = "".join(m.group() for m in runs)

    def find(self, needle: str) -> tuple[int, int] | None:
        """The leftmost span of ``needle``'s words in the text with any whitespace (or none) between words,
        each word unbroken: what ``re.search(r"\\s*".join(map(re.escape, needle.split())), text)`` finds."""
        words = needle.split()
        if not words:
            return 0, 0
        joined = "".join(words)
        bounds, at = [], 0
        for word in words:
            bounds.append((at, at + len(word) - 1))  # first and last character of each word
            at += len(word)
        starts, run_of = self.starts, (lambda pos: bisect_right(self.starts, pos) - 1)
        hit = self.text.find(joined)
        while hit >= 0:
            # A word must not straddle two runs: that would put whitespace inside it.
            if all(run_of(hit + a) == run_of(hit + b) for a, b in bounds):
                first, last = run_of(hit), run_of(hit + len(joined) - 1)
                return (self.origins[first] + hit - starts[first],
                        self.origins[last] + hit + len(joined) - starts[last])
            hit = self.text.find(joined, hit + 1)
        return None


def _find(haystack: str, needle: str, squeezed: "_Squeezed | None" = None) -> tuple[int, int] | None:
    """(start, end) of ``needle`` in ``haystack``, exactly or with other whitespace between its paragraphs;
    ``squeezed`` is ``haystack``'s ``_Squeezed`` when the caller keeps one."""
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
    # A cut inside a run with no space (a long CJK paragraph) joined two pieces with "\n\n": any whitespace
    # between words is allowed, found in the text with its whitespace taken out (no pattern per chunk).
    # Each word must then lie whole in the text: a word it lacks (a chunk of the raw body looked up in the
    # visible text) answers without squeezing the text.
    if any(word not in haystack for word in needle.split()):
        return None
    return (squeezed or _Squeezed(haystack)).find(needle)


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


class _Layout:
    """One note's text worked out once: body, frontmatter lines, visible text, headings, squeezed forms."""

    def __init__(self, text: str):
        _, self.body = split_frontmatter(text)
        self.offset = text[: len(text) - len(self.body)].count("\n")  # body line 1 is file line offset + 1
        self.shown = visible(self.body)
        self._heads: list[dict] | None = None
        self._squeezed: dict[str, _Squeezed] = {}
        self.located: dict[tuple[str, str | None], dict | None] = {}

    def heads(self) -> list[dict]:
        if self._heads is None:
            self._heads = headings(self.body)
        return self._heads

    def squeezed(self, which: str) -> _Squeezed:
        if which not in self._squeezed:
            self._squeezed[which] = _Squeezed(self.shown.text if which == "shown" else self.body)
        return self._squeezed[which]

    def locate(self, raw: str, snippet: str | None) -> dict | None:
        body, offset = self.body, self.offset
        source = self.shown.source_offset
        span = _find(self.shown.text, raw, _Lazy(self, "shown"))
        if span is None:
            shown_text, span, source = body, _find(body, raw, _Lazy(self, "body")), (lambda pos: pos)
            if span is None:
                return None
        else:
            shown_text = self.shown.text
        start, end = source(span[0]), source(max(span[1] - 1, span[0]))
        first = body.count("\n", 0, start) + 1
        last = first + body.count("\n", start, end)
        heads = self.heads()
        out = {"heading_path": heading_path(heads, first), "first_line": first + offset, "last_line": last + offset}
        if snippet is not None:
            piece = _find(shown_text[span[0]:span[1]], snippet)
            line = body.count("\n", 0, source(span[0] + piece[0])) + 1 if piece else first
            out["snippet_line"], out["snippet_heading_path"] = line + offset, heading_path(heads, line)
        return out


class _Lazy:
    """A layout's squeezed text, made only when the slow way is reached."""

    __slots__ = ("layout", "which")

    def __init__(self, layout: _Layout, which: str):
        self.layout, self.which = layout, which

    def find(self, needle: str) -> tuple[int, int] | None:
        return self.layout.squeezed(self.which).find(needle)


def chunk_location(text: str, raw: str, snippet: str | None = None) -> dict | None:
    """``{"heading_path", "first_line", "last_line"}`` of the chunk ``raw`` in the decoded note ``text``, with
    ``snippet_line`` and ``snippet_heading_path`` for ``snippet`` (a piece of ``raw``) when given."""
    return _Layout(text).locate(raw, snippet)


def _copy(where: dict | None) -> dict | None:
    if where is None:
        return None
    return {key: list(value) if isinstance(value, list) else value for key, value in where.items()}


UNKNOWN = object()  # locate_known: no layout is known for that signature (read the note and call locate)


class NoteLayouts:
    """``chunk_location`` remembered per note and chunk, for a Retriever kept open over many queries.

    A note is keyed by a hash of the bytes just read, so an edited note (whatever its stat signature says)
    is worked out afresh; at most ``limit`` notes are kept, the oldest dropped first. ``locate`` given the
    stat signature of the bytes it was given (from the descriptor they were read through) also remembers
    the layout under that signature, as the integrity checker remembers verdicts: ``locate_known`` then
    answers without reading the note while a stat gives the same signature, and never for a note modified
    within the last ``RACY_SECONDS`` when it was read (it may change again within the same timestamp tick).
    Safe to share across threads: a race computes the same answer twice.
    """

    RACY_SECONDS = 2.0

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self._notes: dict[tuple[str, bytes], _Layout] = {}
        self._by_signature: dict[str, tuple[tuple, _Layout]] = {}

    def locate_known(self, page_path: str, signature: tuple | None, raw: str, snippet: str | None = None):
        """``locate``'s answer when the note was read before with this very signature, else ``UNKNOWN``."""
        known = self._by_signature.get(page_path)
        if signature is None or known is None or known[0] != signature:
            return UNKNOWN
        return self._answer(known[1], raw, snippet)

    def locate(self, page_path: str, data: bytes, raw: str, snippet: str | None = None,
               signature: tuple | None = None, mtime: float | None = None) -> dict | None:
        """``mtime`` (seconds) goes with ``signature``: the note's modification time when it was read."""
        key = (page_path, blake2b(data, digest_size=16).digest())
        layout = self._notes.get(key)
        if layout is None:
            layout = _Layout(decode_page(data))
            if len(self._notes) >= self.limit:
                self._notes.pop(next(iter(self._notes), None), None)
            self._notes[key] = layout
        if signature is not None and mtime is not None and time.time() - mtime > self.RACY_SECONDS:
            if len(self._by_signature) >= self.limit:
                self._by_signature.pop(next(iter(self._by_signature), None), None)
            self._by_signature[page_path] = (signature, layout)
        return self._answer(layout, raw, snippet)

    @staticmethod
    def _answer(layout: "_Layout", raw: str, snippet: str | None) -> dict | None:
        memo = (raw, snippet)
        if memo not in layout.located:
            if len(layout.located) >= 256:  # a note has a handful of chunks; snippets vary per query
                layout.located.clear()
            layout.located[memo] = layout.locate(raw, snippet)
        return _copy(layout.located[memo])
