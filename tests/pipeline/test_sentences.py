"""Snippet sentences: one pattern cuts a text exactly where the line-by-line split did.

Usage: ``.venv/bin/python -m pytest tests/pipeline/test_sentences.py -q``
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hypothesis_budget import examples
from vaulteval.pipeline.passages import _sentences

_LINE = re.compile(r"[^\n]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def split_by_lines(text: str) -> list[tuple[int, int]]:
    """The former split (the oracle): each line cut after . ! ? and whitespace, or after 。！？; trimmed."""
    spans = []
    for line in _LINE.finditer(text):
        start = line.start()
        for cut in _SENTENCE_END.finditer(text, line.start(), line.end()):
            spans.append((start, cut.start()))
            start = cut.end()
        spans.append((start, line.end()))
    out = []
    for start, end in spans:
        piece = text[start:end]
        lead, trail = len(piece) - len(piece.lstrip()), len(piece) - len(piece.rstrip())
        if end - trail > start + lead:
            out.append((start + lead, end - trail))
    return out


ALPHABET = list("ab .!?。！？\n\r\t\u3000\x0b\x1c\u2028\x85") + ["  ", "..", "\n\n", "?!"]


@pytest.mark.parametrize("text", ["", "   ", "One. Two!  Three?\nFour", "a.b c", "東京。大阪！ x ？y", "end.  \n\n  next ",
                                  "- `ls -la`:\n\n`ls {{path}}`\r\n", ". . .", "x\u3000\u3000\n"])
def test_sentences_are_cut_as_before(text: str) -> None:
    assert _sentences(text) == split_by_lines(text)


@settings(max_examples=examples() * 5, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join))
def test_sentences_agree_on_random_text(text: str) -> None:
    assert _sentences(text) == split_by_lines(text)


def test_long_runs_of_spaces_and_stops() -> None:
    # Runs that would make a nested, backtracking quantifier take exponential time (the pattern is possessive).
    text = "x" + " " * 5000 + "\n" + "y " * 5000 + "." * 5000 + " 。" * 100
    assert _sentences(text) == split_by_lines(text)
