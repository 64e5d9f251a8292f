"""Inline code spans found by a linear scan (a backtracking regex is quadratic on backtick runs).

Usage::

    spans = inline_code_spans(text)          # [(start, end), ...] in order, not overlapping
    kept = map_spans(text, spans, outside=fn, inside=lambda code: code)
    bare = map_spans(text, spans, inside=lambda code: "")  # the prose kept as it is

A span opens at a run of backticks and closes at the next run of exactly the
same length. When a run of ``k`` finds no closer, its last ``k - 1``, ``k - 2``
... backticks are tried as openers in turn; only then is the run plain text.
That is what the former pattern ``(`+)(?!`).+?(?<!`)\\1(?!`)`` matched, so the
text given to the chunker is unchanged. Each try is one bisection, so a note
of any shape costs time near-linear in its size.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

_RUN = re.compile(r"`+")


# The last text asked about and its spans: a note's layout asks twice about the same body (its visible text
# and its headings, when it has no fence). Replaced whole, so a reader in another thread sees a matching pair.
_last: tuple[str, list[tuple[int, int]]] = ("", [])


def inline_code_spans(text: str) -> list[tuple[int, int]]:
    """Usage: ``inline_code_spans("a `b` c")`` -> ``[(2, 5)]`` (a list shared with the next caller of the same
    text: read it, never change it)."""
    global _last
    if "`" not in text:
        return []
    last = _last
    if last[0] == text:
        return last[1]
    spans = _spans(text) if "``" in text else _single_ticks(text)
    _last = (text, spans)
    return spans


def _single_ticks(text: str) -> list[tuple[int, int]]:
    """``_spans`` of a text whose backtick runs are all one long: each closes at the next, so the spans are
    the backticks taken in pairs."""
    ticks = [m.start() for m in _RUN.finditer(text)]
    return [(ticks[i], ticks[i + 1] + 1) for i in range(0, len(ticks) - 1, 2)]


def _spans(text: str) -> list[tuple[int, int]]:
    runs = [(m.start(), m.end()) for m in _RUN.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        start, end = runs[index]
        closer = None
        for width in range(end - start, 0, -1):
            candidates = by_length.get(width)
            if not candidates:
                continue
            at = bisect.bisect_right(candidates, index)
            if at < len(candidates):
                closer, opened = candidates[at], end - width
                break
        if closer is None:
            index += 1
            continue
        spans.append((opened, runs[closer][1]))
        index = closer + 1
    return spans


def map_spans(text: str, spans: list[tuple[int, int]], *, inside: Callable[[str], str],
              outside: Callable[[str], str] | None = None) -> str:
    """``text`` with ``inside`` applied to each span and ``outside`` between the spans (None: kept as it is)."""
    if not spans and outside is None:
        return text
    out, last = [], 0
    for start, end in spans:
        prose = text[last:start]
        out += (prose if outside is None else outside(prose), inside(text[start:end]))
        last = end
    out.append(text[last:] if outside is None else outside(text[last:]))
    return "".join(out)
