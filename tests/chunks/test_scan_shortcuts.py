"""Shortcuts of the served JSON's note scans give what the general scans give.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_scan_shortcuts.py -q``

- inline code in a text whose backtick runs are all single: the backticks in pairs (``codespans``);
- headings found by one multi-line pattern over the blanked text, against the former line-by-line match;
- code and comments blanked without the fence pattern when no fence can open, and without a callback per span.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from hypothesis_budget import examples
from vaulteval.chunks.codespans import _single_ticks, _spans, inline_code_spans, map_spans
from vaulteval.chunks.obsidian import _COMMENT, _FENCE, _blank, _blank_text, code_and_comments_blanked, headings

_LINE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+)$")


def headings_by_line(text: str) -> list[dict]:
    """The former scan (the oracle): the heading pattern tried on every line of the blanked text."""
    clean = code_and_comments_blanked(text)
    original = text.split("\n")
    out = []
    for number, line in enumerate(clean.split("\n"), start=1):
        m = _LINE.match(line)
        if m:
            own = original[number - 1]
            start = m.end(1)
            while start < len(own) and own[start] in " \t":
                start += 1
            rest = own[start:]
            out.append({"level": len(m.group(1)), "text": (rest.rstrip(" \t#") or rest[:1]).strip(), "line": number})
    return out


TICKS = ["a", " ", "\n", "{{p}}", "`a", "`\n"]  # every backtick followed by something else: runs of one
HEADINGS = list("# \t\nx`~%\r") + ["```\n", "~~~\n", "%%", "## a", "\n# ", "    #", "####### x", "# `c` #"]


@settings(max_examples=examples() * 5, deadline=None)
@given(st.lists(st.sampled_from(TICKS), max_size=30).map("".join))
def test_single_backticks_pair_up_as_the_general_scan_finds(text: str) -> None:
    assert _single_ticks(text) == _spans(text)


@settings(max_examples=examples() * 5, deadline=None)
@given(st.lists(st.sampled_from(HEADINGS), max_size=30).map("".join))
def test_headings_are_the_lines_the_line_scan_finds(text: str) -> None:
    assert headings(text) == headings_by_line(text)


def test_headings_of_a_note_with_code_and_comments() -> None:
    text = "# Title\n\n```\n# not a heading\n```\n%% # hidden %%\n  ## Two `x` ##\n#no\n### Three\r\n"
    assert headings(text) == headings_by_line(text) == [
        {"level": 1, "text": "Title", "line": 1}, {"level": 2, "text": "Two `x`", "line": 7},
        {"level": 3, "text": "Three", "line": 9}]


def blanked_as_before(text: str) -> str:
    text = _FENCE.sub(_blank, text)
    text = map_spans(text, inline_code_spans(text), outside=lambda prose: prose, inside=_blank_text)
    return _COMMENT.sub(_blank, text) if "%%" in text else text


@settings(max_examples=examples() * 5, deadline=None)
@given(st.lists(st.sampled_from(HEADINGS + ["`x\ny`", "``a`b``", "~~"]), max_size=30).map("".join))
def test_blanking_is_what_it_was(text: str) -> None:
    assert code_and_comments_blanked(text) == blanked_as_before(text)
