"""Chunk locations remembered across queries, and the whitespace-tolerant search they rest on.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_location_cache.py -q``
"""

from __future__ import annotations

import random
import re

import pytest

from vaulteval.chunks.location import NoteLayouts, _find, _Squeezed, chunk_location

NOTE = "---\ntags: [coffee]\n---\n# Descaling\n\nIntro line.\n\n## How often\n\nEvery month with citric acid.\n"
CHUNK = "Every month with citric acid."


def test_a_remembered_location_is_not_reused_after_the_note_changes() -> None:
    layouts = NoteLayouts()
    before = layouts.locate("wiki/Descaling.md", NOTE.encode(), CHUNK)
    assert before == chunk_location(NOTE, CHUNK) and before["heading_path"] == ["Descaling", "How often"]
    edited = NOTE.replace("## How often\n", "## How often\n\nNew paragraph.\n\n### Monthly\n")
    after = layouts.locate("wiki/Descaling.md", edited.encode(), CHUNK)
    assert after == chunk_location(edited, CHUNK)
    assert after["first_line"] == before["first_line"] + 4 and after["heading_path"][-1] == "Monthly"
    # The same bytes again are the same answer, and a caller's change to it does not reach the cache.
    after["heading_path"].append("changed by the caller")
    assert layouts.locate("wiki/Descaling.md", edited.encode(), CHUNK) == chunk_location(edited, CHUNK)


def test_a_note_removed_from_under_a_chunk_gives_none() -> None:
    layouts = NoteLayouts()
    assert layouts.locate("a.md", NOTE.encode(), CHUNK)["first_line"] == 10
    assert layouts.locate("a.md", NOTE.replace(CHUNK, "Rewritten.").encode(), CHUNK) is None


def _regex(haystack: str, needle: str) -> tuple[int, int] | None:
    m = re.search(r"\s*".join(map(re.escape, needle.split())), haystack)
    return (m.start(), m.end()) if m else None


@pytest.mark.parametrize("seed", range(40))
def test_squeezed_search_finds_what_the_whitespace_pattern_finds(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "ab长 \n\t\u3000"
    haystack = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
    squeezed = _Squeezed(haystack)
    for _ in range(30):
        if rng.random() < 0.5 and haystack:  # a real piece of the text with its whitespace changed
            start = rng.randrange(len(haystack))
            piece = haystack[start:start + rng.randint(1, 12)]
            needle = re.sub(r"\s+", lambda _: rng.choice(["", " ", "\n\n"]), piece)
        else:
            needle = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        assert squeezed.find(needle) == _regex(haystack, needle), (haystack, needle)
        # _find tries the exact text and whole paragraphs first; with neither, it answers as the pattern does
        # (its check that every word lies whole in the text before squeezing changes no answer).
        found = _find(haystack, needle)
        if not needle.split():
            continue
        if found is None or haystack.find(needle) < 0 and "\n\n" not in needle:
            assert found == _regex(haystack, needle), (haystack, needle)
        else:
            assert re.fullmatch(r"\s*".join(map(re.escape, needle.split())), haystack[found[0]:found[1]].strip())


def test_a_layout_is_known_by_signature_only_when_that_note_was_read_with_it_out_of_the_racy_window() -> None:
    from vaulteval.chunks.location import UNKNOWN

    layouts = NoteLayouts()
    signature, old = (1, 2, len(NOTE), 10**18, 10**18), 1.0  # an mtime long past
    assert layouts.locate_known("a.md", signature, CHUNK) is UNKNOWN
    assert layouts.locate("a.md", NOTE.encode(), CHUNK, signature=signature, mtime=old) == chunk_location(NOTE, CHUNK)
    assert layouts.locate_known("a.md", signature, CHUNK) == chunk_location(NOTE, CHUNK)
    assert layouts.locate_known("a.md", signature, "Intro line.") == chunk_location(NOTE, "Intro line.")
    assert layouts.locate_known("a.md", signature[:4] + (10**18 + 1,), CHUNK) is UNKNOWN  # another ctime
    assert layouts.locate_known("b.md", signature, CHUNK) is UNKNOWN
    assert layouts.locate_known("a.md", None, CHUNK) is UNKNOWN
    # Read again with a new signature: only the new one is known.
    edited = NOTE.replace("Intro line.", "Intro line.\n\nMore.")
    newer = signature[:2] + (len(edited), 2 * 10**18, 2 * 10**18)
    assert layouts.locate("a.md", edited.encode(), CHUNK, signature=newer, mtime=old) == chunk_location(edited, CHUNK)
    assert layouts.locate_known("a.md", signature, CHUNK) is UNKNOWN
    assert layouts.locate_known("a.md", newer, CHUNK) == chunk_location(edited, CHUNK)
    # A note modified just now may change again within the same timestamp tick: not remembered by signature.
    fresh = NoteLayouts()
    import time

    fresh.locate("a.md", NOTE.encode(), CHUNK, signature=signature, mtime=time.time())
    assert fresh.locate_known("a.md", signature, CHUNK) is UNKNOWN
