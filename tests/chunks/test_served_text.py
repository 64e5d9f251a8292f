"""The served-text check (``chunks.derived.chunk_in_note``): every chunk the chunker makes passes, a forged one does not.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_served_text.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vaulteval.chunks.chunking import parse_page, split_chunks
from vaulteval.chunks.derived import NoteText, chunk_in_note, links_shown
from vaulteval.chunks.obsidian import visible_text

SAMPLE = Path(__file__).resolve().parents[2] / "vaulteval" / "data" / "sample-vault" / "wiki"

# Each markup form the quick tries rewrite, plus forms only the visible-text pass handles (entity, HTML, comment).
NOTE = """---
tags: [coffee]
---
# Descaling

> [!tip]
> More information: <https://example.org/descale>.

> [!warning] Never use vinegar
> It damages the seals; see [[Machines/Gaggia Classic.md|the Gaggia]] and [the manual](https://example.org/m).

![[boiler.png]] Fill the tank, then ![[Citric acid]] dissolves in [[Water#Hardness]].

Rinse twice &amp; run <b>two</b> empty shots. %%a private aside%% Done.
"""


def _chunks(data: bytes) -> list[str]:
    page = parse_page(data, "wiki/x.md")
    return split_chunks(visible_text(page.body), target=120, overlap=30, hard_max=400)


def test_every_chunk_of_a_note_with_links_callouts_and_embeds_is_text_of_it() -> None:
    data = NOTE.encode()
    chunks = _chunks(data)
    assert len(chunks) >= 2
    for chunk in chunks:
        assert chunk_in_note(chunk, data), chunk
    # The rewrite the quick try uses shows what reading view shows of these forms.
    shown = links_shown(NOTE)
    for words in ("> Tip", "More information: https://example.org/descale.", "> Never use vinegar",
                  "see the Gaggia and the manual.", " Fill the tank, then Citric acid dissolves in Water Hardness."):
        assert words in shown, words


@pytest.mark.parametrize("forged", [
    "Rinse twice with bleach.",                                      # a word the note does not hold
    "More information: https://evil.example/descale.",               # an address the note does not hold
    "see the Saeco and the manual.",                                 # a label the note does not hold
    "It damages the seals; see [[Machines/Gaggia Classic.md|the Gaggia]] and the manual.\n\nNever use vinegar",
    "Fill the tank, then dissolves in Water Hardness.",              # an embed's name left out
    "   ",
])
def test_a_chunk_the_note_does_not_hold_is_refused(forged: str) -> None:
    assert not chunk_in_note(forged, NOTE.encode())


def test_only_the_visible_text_pass_finds_entities_tags_and_comments() -> None:
    data = NOTE.encode()
    chunk = "Rinse twice & run two empty shots. Done."
    assert chunk not in links_shown(NOTE) and chunk_in_note(chunk, data)
    assert not chunk_in_note("Rinse twice & run three empty shots. Done.", data)


def test_every_chunk_of_the_sample_vault_passes_and_a_changed_word_does_not() -> None:
    notes = sorted(SAMPLE.rglob("*.md"))
    assert len(notes) > 10
    checked = 0
    for path in notes:
        data = path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        for chunk in _chunks(data):
            assert chunk_in_note(chunk, data), (path.name, chunk[:80])
            words = chunk.split()
            absent = "zqxjvwordnotinanynote"
            assert absent not in text
            forged = chunk.replace(words[len(words) // 2], absent, 1)
            assert not chunk_in_note(forged, data), (path.name, forged[:80])
            checked += 1
    assert checked > 20


def test_a_note_checked_chunk_by_chunk_in_bulk_gives_the_one_check_s_answers() -> None:
    """``NoteText.holds(bulk=True)`` (doctor: the note's forms kept, its visible text tried second) accepts and
    refuses exactly what ``chunk_in_note`` does, whichever try finds a chunk."""
    tried = [*_chunks(NOTE.encode()), "Rinse twice & run two empty shots. Done.", "see the Gaggia and the manual.",
             "More information: https://example.org/descale.", "Rinse twice with bleach.", "see the Saeco", "  ", ""]
    notes = [NOTE.encode(), *(p.read_bytes() for p in sorted(SAMPLE.rglob("*.md"))[:8])]
    for data in notes:
        note = NoteText(data)
        for raw in tried + _chunks(data):
            assert note.holds(raw, bulk=True) == chunk_in_note(raw, data) == note.holds(raw), raw[:60]
    assert 4 <= sum(NoteText(NOTE.encode()).holds(raw, bulk=True) for raw in tried) < len(tried)  # both answers
