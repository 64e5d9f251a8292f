"""Answers an agent can use: the passage that matched, the words that matched, and where the chunk is.

Usage: ``.venv/bin/python -m pytest tests/pipeline/test_passages.py -q``
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline_fixtures import (  # noqa: F401
    CHINESE_NOTE,
    DESCALING_NOTE,
    LONG_NOTE,
    records_for,
    provisioned_sample,
    retrieve_json,
    run_json,
    snapshot,
    write_note,
)
from vaulteval.chunks.location import chunk_location, heading_path
from vaulteval.pipeline.passages import SNIPPET_CHARS, _cut


def _hit(result: dict, page: str) -> dict:
    (hit,) = [c for c in result["candidates"] if c["page_path"] == page]
    return hit


def _file_lines(root: Path, page: str) -> list[str]:
    return (root / page).read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")


def test_snippet_is_the_matching_section_not_the_intro(provisioned_sample: Path) -> None:
    hit = _hit(retrieve_json(provisioned_sample, "how often should I descale"), DESCALING_NOTE)
    raw = records_for(provisioned_sample, DESCALING_NOTE)[0]["raw_text"]
    assert not raw.startswith(hit["snippet"]), "the snippet is still the note's intro"
    assert "How often" in hit["snippet"] and hit["snippet"] in raw
    assert hit["snippet_heading_path"][-1] == "How often"
    assert _file_lines(provisioned_sample, DESCALING_NOTE)[hit["snippet_line"] - 1] == hit["snippet"].split("\n")[0]
    assert {"often", "descale"} <= set(hit["matched_terms"])


def test_matched_terms_say_why_a_page_was_found(provisioned_sample: Path) -> None:
    query = "router keeps dropping wifi"
    for hit in retrieve_json(provisioned_sample, query, "--top", "5")["candidates"]:
        assert hit["matched_terms"], hit["page_path"]
        assert set(hit["matched_terms"]) <= set(query.split()), hit["matched_terms"]


def test_snippets_are_bounded_and_cut_between_words(provisioned_sample: Path) -> None:
    for query in ("espresso grinder burr", "zfs scrub schedule", "ssh key", "熟普和生普"):
        for hit in retrieve_json(provisioned_sample, query, "--top", "10")["candidates"]:
            raw = records_for(provisioned_sample, hit["page_path"])[hit["chunk_index"]]["raw_text"]
            snippet = hit["snippet"]
            assert 0 < len(snippet) <= SNIPPET_CHARS and snippet == snippet.strip()
            at = raw.index(snippet)
            end = at + len(snippet)
            if snippet.isascii():  # CJK text has no spaces to cut at
                assert at == 0 or raw[at - 1].isspace() or not raw[at - 1].isalnum(), (query, snippet)
                assert end == len(raw) or raw[end].isspace() or not raw[end - 1].isalnum(), (query, snippet)


def test_line_range_and_headings_of_each_chunk(provisioned_sample: Path) -> None:
    result = retrieve_json(provisioned_sample, "burn-in badblocks smart test", "--top", "5")
    for hit in result["candidates"] + retrieve_json(provisioned_sample, "server build log")["candidates"]:
        lines = _file_lines(provisioned_sample, hit["page_path"])
        raw = records_for(provisioned_sample, hit["page_path"])[hit["chunk_index"]]["raw_text"]
        first, last = hit["first_line"], hit["last_line"]
        assert 1 <= first <= last <= len(lines)
        # Link syntax around a word is hidden from the chunk, the word itself is on the line.
        assert raw.split()[0].strip(".,;:!?()*") in lines[first - 1], (hit["page_path"], first)
        assert raw.split()[-1].strip(".,;:!?()*") in lines[last - 1], (hit["page_path"], last)
        assert first <= hit["snippet_line"] <= last
        above = [ln.lstrip("#").strip() for ln in lines[:first] if ln.startswith("#")]
        assert all(h in above for h in hit["heading_path"]), hit["heading_path"]
        mtime = (provisioned_sample / hit["page_path"]).stat().st_mtime
        assert hit["modified"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime))


def test_later_chunks_of_a_long_note_start_further_down(provisioned_sample: Path) -> None:
    from vaulteval.chunks.pagetext import decode_page

    text = decode_page((provisioned_sample / LONG_NOTE).read_bytes())
    places = [chunk_location(text, rec["raw_text"]) for rec in records_for(provisioned_sample, LONG_NOTE)]
    assert all(p is not None for p in places)
    firsts = [p["first_line"] for p in places]
    assert firsts == sorted(firsts) and firsts[0] < firsts[-1]  # a paragraph on one long line may give two
    assert places[-1]["last_line"] == len(text.rstrip("\n").split("\n"))
    for a, b in zip(places, places[1:]):
        assert b["first_line"] <= a["last_line"] + 1  # chunks overlap or touch, never skip lines with text


def test_lines_count_from_the_file_past_hidden_markup(tmp_path: Path) -> None:
    root = tmp_path / "v"
    note = ("---\ntags: [x]\n---\n%% ----- Badges ----- %%\n\n![GitHub Repo stars](https://img.shields.io/x)\n\n"
            "<!--\n- [[Patreon]]: <https://> ^patreon\n-->\n\n# Lawlist\n\n## Styles\n\nCustom list styles for "
            "[[legal]] documents.\n")
    write_note(root, "wiki/Lawlist.md", note)
    run_json("provision", "--vault", root)
    before = snapshot(root / "wiki")
    hit = _hit(retrieve_json(root, "custom list styles"), "wiki/Lawlist.md")
    assert snapshot(root / "wiki") == before
    assert (hit["first_line"], hit["last_line"]) == (12, 16)  # "# Lawlist" .. the sentence; lines 4-10 are hidden
    assert hit["snippet_line"] == 16 and hit["snippet_heading_path"] == ["Lawlist", "Styles"]
    assert hit["snippet"] == "Custom list styles for legal documents."
    assert hit["matched_terms"] == ["custom", "list", "styles"]


def test_a_record_from_another_tool_is_found_in_the_raw_body() -> None:
    text = "---\na: 1\n---\nIntro [[X|label]].\n\nSecond paragraph.\n"
    assert chunk_location(text, "Intro [[X|label]].\n\nSecond paragraph.") == \
        {"heading_path": [], "first_line": 4, "last_line": 6}
    assert chunk_location(text, "text that is not in the note") is None


def test_a_hard_cut_cjk_paragraph_is_still_found() -> None:
    body = "很" * 50 + "长" * 50
    assert chunk_location(body, "很" * 50 + "\n\n" + "长" * 50)["first_line"] == 1


def test_heading_path_keeps_the_enclosing_levels() -> None:
    heads = [{"level": 1, "text": "A", "line": 1}, {"level": 2, "text": "B", "line": 3},
             {"level": 3, "text": "C", "line": 5}, {"level": 2, "text": "D", "line": 9}]
    assert heading_path(heads, 6) == ["A", "B", "C"]
    assert heading_path(heads, 9) == ["A", "D"]
    assert heading_path(heads, 0) == []


@pytest.mark.parametrize("text, start, end, want", [
    ("alpha beta gamma delta", 0, 22, "alpha beta"),   # limit 12: ends before the word it would split
    ("alpha beta gamma delta", 2, 22, "beta gamma"),   # a start inside a word moves to the next one
    ("alpha beta", 0, 10, "alpha beta"),
])
def test_cut_keeps_whole_words(text: str, start: int, end: int, want: str) -> None:
    assert _cut(text, start, end, 12) == want
