"""Fuzz note text of hostile shape: deep nesting, long lines and runs of delimiters (backticks, brackets, ``%%``).

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/fuzz/test_fuzz_note_shapes.py -q``

Oracles: the inline-code scanner finds exactly the spans of the backtracking
pattern it replaced (on inputs short enough for that pattern); the chunker's
pieces keep every word, in order, and never pass the hard limit; every pass
(visible text, links, headings, tags) accepts any shape without an exception.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from vaulteval.chunks import chunking, obsidian
from vaulteval.chunks.codespans import inline_code_spans

from fuzzkit import count, fuzz_settings

# The pattern the scanner replaced: exact, but quadratic or worse on backtick runs (kept here as the oracle).
OLD_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)

DELIMITERS = ["`", "``", "```", "[", "]", "[[", "]]", "(", ")", "](", "%%", "#", "!", "|", "~~~", "> ", "[!", "<", ">",
              '"', "\\", "^", "<!--", "-->", "![", "<a href=", "</b>", "&amp;", "]: ", "![x](", "[![a](b)](c)"]
delimiter_runs = st.builds(lambda d, n: d * n, st.sampled_from(DELIMITERS), st.integers(1, 60))
words = st.sampled_from(["a", "word", "x.md", "Descaling", "#tag", " ", "\t", "\n", "\n\n", "é", "。"])
pieces = st.one_of(delimiter_runs, words, st.text(max_size=8))
short_notes = st.lists(pieces, max_size=40).map("".join)


def _nested(depth: int, marker: str, indent: str) -> str:
    return "".join(indent * i + marker + f"item {i}\n" for i in range(depth))


deep_nesting = st.builds(_nested, st.integers(1, 120), st.sampled_from(["- ", "> ", "1. ", "> [!note] ", ""]),
                         st.sampled_from(["\t", "  ", "> "]))
long_lines = st.builds(lambda unit, n, space: (unit + (" " if space else "")) * n,
                       st.sampled_from(["log", "x", "`", "[[", "%%", "#", "ab`c"]), st.integers(50, 800),
                       st.booleans())
hostile_notes = st.lists(st.one_of(short_notes, deep_nesting, long_lines), min_size=1, max_size=4).map("\n".join)


@fuzz_settings()
@given(short_notes)
def test_inline_code_scanner_matches_the_pattern_it_replaced(text: str) -> None:
    count("inline code spans")
    assert inline_code_spans(text) == [m.span() for m in OLD_INLINE_CODE.finditer(text)]


@fuzz_settings()
@given(hostile_notes, st.sampled_from([(2000, 200, 4000), (50, 10, 80), (20, 5, 30)]))
def test_chunks_keep_every_word_under_the_hard_limit(text: str, sizes: tuple[int, int, int]) -> None:
    count("chunk shapes")
    target, overlap, hard_max = sizes
    chunks = chunking.split_chunks(text, target, overlap, hard_max)
    assert all(len(c) <= hard_max for c in chunks)
    # Every character that is not whitespace survives, in order (the overlap only repeats some).
    original = "".join(text.split())
    joined = "".join("".join(c.split()) for c in chunks)
    it = iter(joined)
    assert all(ch in it for ch in original), "a chunk lost or reordered text"


@fuzz_settings()
@given(hostile_notes)
def test_every_syntax_pass_accepts_any_shape(text: str) -> None:
    count("syntax passes")
    visible = obsidian.visible_text(text)
    assert isinstance(visible, str)
    blanked = obsidian.code_and_comments_blanked(text)
    assert len(blanked) == len(text) and blanked.count("\n") == text.count("\n")
    for link in obsidian.outgoing_links(text):
        assert 1 <= link["line"] <= text.count("\n") + 1
    for heading in obsidian.headings(text):
        assert 1 <= heading["level"] <= 6
    obsidian.page_tags({}, text)


@fuzz_settings()
@given(hostile_notes)
def test_the_visible_map_points_into_the_body_in_order(text: str) -> None:
    """Every shown character maps to a body offset, never backwards; a chunk's lines can be found from it."""
    from vaulteval.chunks.location import chunk_location
    from vaulteval.chunks.visible import visible

    count("visible maps")
    shown = visible(text)
    offsets = [shown.source_offset(i) for i in range(len(shown.text))]
    assert all(0 <= o < max(len(text), 1) for o in offsets)
    assert offsets == sorted(offsets)
    for chunk in chunking.split_chunks(shown.text, 50, 10, 80):
        where = chunk_location(text, chunk)
        assert where is not None and 1 <= where["first_line"] <= where["last_line"] <= text.count("\n") + 1
