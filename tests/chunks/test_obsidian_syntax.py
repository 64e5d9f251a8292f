"""Obsidian markup in notes: each row is a real note and what a query can (or can no longer) find in it.

The vault is provisioned once; every row's words are unique to its note, so a hit
proves the word was indexed from that note, and a miss proves it was not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_fixtures import run_json, run_main
from vaulteval.chunks.obsidian import page_terms, visible_text

NOTES = {
    "Comments.md": "Visible gardening text.\n\n%%private marzipanic reminder%%\n\nMore text %%inline quibblefish%% here.\n",
    "Multiline comment.md": "Start.\n\n%%\nsnorkelwick hidden\n\nacross paragraphs\n%%\n\nEnd with lanternfig.\n",
    "Unclosed comment.md": "Shown burlapine words.\n\n%% from here on hidden: grotesquill\n",
    "Alias link.md": "See [[Zorblat machine|the frobnicator]] for details.\n",
    "Heading link.md": "Read [[Kettle#Descale cycle]] first.\n",
    "Embed.md": "![[Vortexium diagram.png|300]]\n\n![[Quasimodal note]]\n",
    "Callout.md": "> [!warning]+ Glimmerdust hazard\n> Wear gloves near the flumox.\n\n> [!tip]\n> Nothing titled.\n",
    "Code.md": "```python\n# %%notacomment%% stays\nprint('[[kept|verbatim]]')\n```\n\nAnd `%%inline code%%` too.\n",
    "Tags.md": "---\ntags: [espresso-maintenance, project/wobblenut]\naliases: [Percolator pal]\n---\nBody mentions #fridge-inventory inline.\n",
}

ROWS = [
    # (query, note it must find or None when nothing may match, why)
    ("gardening", "Comments.md", "text outside a comment stays"),
    ("marzipanic", None, "a block %%comment%% is not indexed"),
    ("quibblefish", None, "an inline %%comment%% is not indexed"),
    ("snorkelwick", None, "a comment over several paragraphs is not indexed"),
    ("lanternfig", "Multiline comment.md", "text after a closed comment is indexed"),
    ("grotesquill", None, "an unclosed comment hides the rest of the note, as in Obsidian"),
    ("frobnicator", "Alias link.md", "[[target|label]] indexes its label"),
    ("zorblat", None, "the hidden target of a labelled link is not visible text"),
    ("descale cycle kettle", "Heading link.md", "[[Page#Heading]] indexes page and heading"),
    ("vortexium", "Embed.md", "an embed indexes its visible name"),
    ("quasimodal", "Embed.md", "a note embed indexes the note's name"),
    ("glimmerdust", "Callout.md", "a callout keeps its title"),
    ("flumox", "Callout.md", "a callout keeps its body"),
    ("notacomment", "Code.md", "%% inside a code block is code, not a comment"),
    ("verbatim", "Code.md", "a wikilink inside code stays verbatim"),
    ("percolator", "Tags.md", "frontmatter aliases are terms"),
    ("espresso maintenance", "Tags.md", "a hyphenated frontmatter tag is split into words"),
    ("wobblenut", "Tags.md", "a nested frontmatter tag is a term"),
    ("fridge inventory", "Tags.md", "an inline #tag is split into words too"),
]


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("obs") / "v"
    (root / ".obsidian").mkdir(parents=True)
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    code, _, err = run_main("provision", "--vault", root)
    assert code == 0, err
    return root


@pytest.mark.parametrize("query, note, why", ROWS, ids=[r[0] for r in ROWS])
def test_what_a_query_finds(vault: Path, query: str, note: str | None, why: str) -> None:
    hits = [c["page_path"] for c in run_json("retrieve", "--vault", vault, query, "--no-rerank")["candidates"]]
    if note is None:
        assert hits == [], why
    else:
        assert hits[:1] == [note], why


def test_visible_text_examples() -> None:
    assert visible_text("a %%b%% c") == "a  c"
    assert visible_text("[[x/Page|label]] [[x/Page]] [[Page#^block1]]") == "label Page Page"
    assert visible_text("> [!note] Title\n> body") == "> Title\n> body"
    assert visible_text("`[[a|b]]`") == "`[[a|b]]`"
    assert visible_text("") == ""


def test_page_terms_line() -> None:
    line = page_terms({"tags": "a-b, c", "aliases": "X, Y"}, "text #d/e")
    assert line == "Tags: a-b c a b d e. Aliases: X; Y."
    assert page_terms({}, "no tags, # heading, issue #12") == ""
