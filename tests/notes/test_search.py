"""``vaulteval search``: read-only text search with line numbers and context, confined, bounded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import INJECTION
from pipeline_fixtures import assert_one_line_error, run_cli, run_main, snapshot


def search(vault: Path, *args: str) -> dict:
    code, out, err = run_main("search", "--vault", vault, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_only_notes_are_searched(notes_vault: Path) -> None:
    result = search(notes_vault, "okapi")
    # Archive/ (excluded), .trash/, the symlinked file and folder leading outside: none of them.
    assert [(m["page_path"], m["line"]) for m in result["matches"]] == [("Windows.md", 3)]
    assert result["notes_searched"] == 5 and result["complete"] is True


def test_context_crlf_and_case(notes_vault: Path) -> None:
    m = search(notes_vault, "CRLF MARKER", "--context", "1")["matches"][0]
    assert m == {"page_path": "Windows.md", "line": 3, "text": "Line with crlf marker okapi.",
                 "before": [""], "after": ["Second line."]}


def test_cjk_and_regex(notes_vault: Path) -> None:
    assert search(notes_vault, "お湯")["matches"][0]["page_path"] == "tea/抹茶.md"
    hits = search(notes_vault, r"\[\[(Kettle|Home)\]\]", "--regex")["matches"]
    assert {(m["page_path"], m["line"]) for m in hits} == {("Home.md", 6), ("Kettle.md", 20)}


def test_top_limits_and_an_empty_result_is_exit_0(notes_vault: Path) -> None:
    assert len(search(notes_vault, "e", "--top", "2")["matches"]) == 2
    assert search(notes_vault, "no such words anywhere")["matches"] == []


def test_injection_text_is_a_match_like_any_other(notes_vault: Path) -> None:
    m = search(notes_vault, "previous instructions")["matches"]
    assert len(m) == 1 and INJECTION in m[0]["text"]


def test_a_catastrophic_regex_stops_with_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "v"
    (root / ".obsidian").mkdir(parents=True)
    (root / "Slow.md").write_text("a" * 40 + "!", encoding="utf-8")
    proc = run_cli("search", "--vault", root, "(a|aa)+$", "--regex", timeout=120)
    assert "took over" in assert_one_line_error(proc, 2)


@pytest.mark.parametrize("args", [["[unclosed", "--regex"], ["x" * 501], ["x", "--top", "0"], ["x", "--top", "1001"],
                                  ["x", "--context", "9"], ["   "]])
def test_usage_errors(notes_vault: Path, args: list[str]) -> None:
    assert_one_line_error(run_cli("search", "--vault", notes_vault, *args), 2)


def test_huge_notes_are_searched_in_their_first_part(tmp_path: Path) -> None:
    root = tmp_path / "v"
    (root / ".obsidian").mkdir(parents=True)
    (root / "Huge.md").write_bytes(b"start needle\n" + b"x" * (5 << 20) + b"\nlate needle\n")
    result = search(root, "needle")
    assert [m["line"] for m in result["matches"]] == [1] and result["truncated_pages"] == ["Huge.md"]


def test_search_writes_nothing(notes_vault: Path) -> None:
    before = snapshot(notes_vault)
    search(notes_vault, "kettle")
    assert snapshot(notes_vault) == before


def test_a_scan_that_gives_up_at_its_limit_without_saying_so_is_not_taken_as_complete(monkeypatch) -> None:
    """The regex package sometimes ends a scan at its time limit with no error: its matches would look complete."""
    import time

    from vaulteval.errors import UsageError
    from vaulteval.notes import search as notes_search

    class GivesUpQuietly:
        def finditer(self, text: str, timeout: float):
            time.sleep(timeout * 0.99)
            return iter(())

    monkeypatch.setattr(notes_search, "REGEX_SECONDS_PER_NOTE", 0.05)
    with pytest.raises(UsageError, match="took over"):
        notes_search._matching_lines(GivesUpQuietly(), True, ["a" * 40 + "!"], "Slow.md")


def test_a_slow_scan_that_ends_within_its_limit_is_taken_as_complete(monkeypatch) -> None:
    import time

    from vaulteval.notes import search as notes_search

    class Match:
        def start(self) -> int:
            return 3

    class SlowButDone:
        def finditer(self, text: str, timeout: float):
            time.sleep(timeout * 0.6)
            return iter((Match(),))

    monkeypatch.setattr(notes_search, "REGEX_SECONDS_PER_NOTE", 0.05)
    assert notes_search._matching_lines(SlowButDone(), True, ["ab", "cd"], "Slow.md") == [1]
