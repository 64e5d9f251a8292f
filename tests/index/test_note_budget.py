"""What one note may add to the index is bounded like its bytes: postings and distinct terms, one warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from vaulteval.index.notecap import cap_note_terms, note_budgets

from pipeline_fixtures import make_vault, run_main


def test_budgets_follow_the_note_size_bound(monkeypatch) -> None:
    monkeypatch.setenv("VAULTEVAL_MAX_NOTE_BYTES", "8192")
    assert note_budgets() == (1024, 256)


def test_chunks_past_a_notes_budget_are_dropped_in_chunk_order(monkeypatch, caplog) -> None:
    monkeypatch.setenv("VAULTEVAL_MAX_NOTE_BYTES", "8192")  # 1,024 postings, 256 distinct terms
    fresh = [[f"w{c}x{i}" for i in range(100)] for c in range(4)]  # 100 new terms a chunk
    prose = [["the", "cat", "sat"] * 50 for _ in range(10)]  # many postings of few terms: within both
    pages = ["hostile.md"] * 4 + ["prose.md"] * 10
    indexes = [3, 0, 2, 1] + list(range(10))  # listed out of chunk order
    with caplog.at_level(logging.WARNING):
        dropped = cap_note_terms(pages, indexes, fresh + prose)
    # chunks 0 and 1 (positions 1 and 3) fit 200 terms; chunk 2 would make 300: it and chunk 3 are left out
    assert dropped == {0, 2}
    assert sum("hostile.md adds more than" in r.getMessage() for r in caplog.records) == 1
    assert "prose.md" not in caplog.text


def test_a_note_past_its_budget_is_indexed_up_to_it_and_the_rest_served(tmp_path: Path, monkeypatch,
                                                                        caplog) -> None:
    root = make_vault(tmp_path / "vault", provision=False)
    words = [f"zq{i:05d}" for i in range(6000)]  # every word new: distinct terms grow with the text
    paragraphs = ["\n\n".join(" ".join(words[p:p + 100]) for p in range(0, len(words), 100))]
    (root / "wiki" / "wordlist.md").write_text(paragraphs[0] + "\n", encoding="utf-8")
    monkeypatch.setenv("VAULTEVAL_MAX_NOTE_BYTES", str(64 * 1024))  # 2,048 distinct terms a note
    with caplog.at_level(logging.WARNING):
        code, _out, err = run_main("provision", "--vault", root, "--no-embed")
    assert code == 0, err
    said = [r.getMessage() for r in caplog.records if "adds more than" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("wiki/wordlist.md adds more than"), said
    first = run_main("retrieve", "--vault", root, "--no-rerank", "zq00001")
    last = run_main("retrieve", "--vault", root, "--no-rerank", "zq05999")
    assert first[0] == 0 and "wiki/wordlist.md" in first[1]
    assert last[0] == 0 and "wiki/wordlist.md" not in last[1]
    descale = run_main("retrieve", "--vault", root, "--no-rerank", "descale the espresso machine")
    assert "wiki/howto/Descaling.md" in descale[1]
    doctor = run_main("doctor", "--vault", root)
    assert doctor[0] == 0, doctor
