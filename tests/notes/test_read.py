"""``vaulteval read``: one note, confined, with frontmatter, headings, links and backlinks; every exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import INJECTION
from pipeline_fixtures import assert_one_line_error, run_cli, run_main, snapshot


def read(vault: Path, *args: str) -> dict:
    code, out, err = run_main("read", "--vault", vault, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_frontmatter_headings_and_citations(notes_vault: Path) -> None:
    view = read(notes_vault, "Kettle.md")
    assert view["page_path"] == "Kettle.md" and view["link"] == "[[Kettle]]"
    assert view["frontmatter"] == {"title": "Kettle", "aliases": ["Water boiler"], "created": "2026-01-02"}
    assert [(h["level"], h["text"], h["line"]) for h in view["headings"]] == [
        (1, "Kettle", 6), (2, "Descaling", 10), (3, "Details", 14), (2, "Other", 18)]
    assert view["headings"][1]["link"] == "[[Kettle#Descaling]]"


def test_links_resolve_as_obsidian_does(notes_vault: Path) -> None:
    links = {link["raw"]: (link["page_path"], link["status"], link["line"]) for link in read(notes_vault, "Kettle.md")["links"]}
    assert links["[[Home]]"] == ("Home.md", "resolved", 20)
    assert links["[the tea](tea/%E6%8A%B9%E8%8C%B6.md)"] == ("tea/抹茶.md", "resolved", 20)
    assert links["[[Missing note]]"] == (None, "unresolved", 20)
    assert "[[Not a link]]" not in links  # code is not a link


def test_backlinks_include_aliases_embeds_and_skip_excluded_notes(notes_vault: Path) -> None:
    back = {(b["page_path"], b["raw"]) for b in read(notes_vault, "Kettle.md")["backlinks"]}
    assert back == {("Home.md", "[[Kettle]]"), ("Home.md", "![[Kettle#Descaling]]"),
                    ("tea/抹茶.md", "[[Water boiler]]")}  # not Archive/ (excluded), not .trash/


def test_heading_section_and_wikilink_page(notes_vault: Path) -> None:
    view = read(notes_vault, "Kettle.md", "--heading", "Descaling")
    assert view["text"] == "## Descaling\n\nUse citric acid monthly.\n\n### Details\n\nTwenty grams."
    assert view["section"] == {"heading": "Descaling", "first_line": 10, "last_line": 17}
    assert read(notes_vault, "[[Water boiler#Other]]")["text"].startswith("## Other")
    assert read(notes_vault, "[[Kettle#^block1]]")["text"].startswith("# Kettle")  # a block reference: whole note


def test_cjk_and_crlf(notes_vault: Path) -> None:
    cjk = read(notes_vault, "[[抹茶]]")
    assert cjk["page_path"] == "tea/抹茶.md" and "お湯は80度" in cjk["text"]
    crlf = read(notes_vault, "Windows.md")
    assert "\r" not in crlf["text"] and crlf["headings"][0] == {"level": 1, "text": "Windows note", "line": 1,
                                                                 "link": "[[Windows]]".replace("]]", "#Windows note]]")}


def test_a_prompt_injection_is_returned_as_data(notes_vault: Path) -> None:
    view = read(notes_vault, "inbox/Suspicious.md")
    assert INJECTION in view["text"]
    assert set(view) == {"schema", "page_path", "title", "link", "sha256", "truncated", "frontmatter", "headings",
                         "text", "body_first_line", "links", "backlinks"}  # no field turns note text into a directive


@pytest.mark.parametrize("page, code", [
    ("Nope.md", 3),                 # missing
    ("[[Nope]]", 3),                # unknown wikilink
    ("Kettle.md --heading Nope", 3),  # missing heading
    ("Archive/Old.md", 3),          # excluded by .obsidian/app.json
    (".trash/Gone.md", 3),          # trash is never a note
    (".obsidian/app.json", 3),      # not a note
    ("../outside/secret.md", 2),    # '..'
    ("/etc/passwd", 2),             # absolute
    ("Leak.md", 2),                 # symlink to a file outside the vault
    ("linked-dir/secret.md", 2),    # symlinked folder leading outside
])
def test_exit_codes(notes_vault: Path, page: str, code: int) -> None:
    proc = run_cli("read", "--vault", notes_vault, *page.split(" "), "--json")
    assert_one_line_error(proc, code)
    assert proc.stdout == ""


def test_read_writes_nothing(notes_vault: Path) -> None:
    before = snapshot(notes_vault)
    for page in ("Kettle.md", "tea/抹茶.md", "Windows.md"):
        read(notes_vault, page)
        assert run_main("read", "--vault", notes_vault, page)[0] == 0
    assert snapshot(notes_vault) == before
