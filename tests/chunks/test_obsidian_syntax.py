"""Obsidian markup in notes: each row is a real note and what a query can (or can no longer) find in it.

The vault is provisioned once; every row's words are unique to its note, so a hit
proves the word was indexed from that note, and a miss proves it was not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_fixtures import chunk_records, run_json, run_main
from vaulteval.chunks.obsidian import page_terms, visible_text

NOTES = {
    "Comments.md": "Visible gardening text.\n\n%%private marzipanic reminder%%\n\nMore text %%inline quibblefish%% here.\n",
    "Multiline comment.md": "Start.\n\n%%\nsnorkelwick hidden\n\nacross paragraphs\n%%\n\nEnd with lanternfig.\n",
    "Unclosed comment.md": "Shown burlapine words.\n\n%% from here on hidden: grotesquill\n",
    "Alias link.md": "See [[Zorblat machine|the frobnicator]] for details.\n",
    "Heading link.md": "Read [[Kettle#Descale cycle]] first.\n",
    "Embed.md": "![[Vortexium diagram.png|300]]\n\n![[Quasimodal note]]\n\n![[harbour.jpg|Lighthouse at dusk]]\n",
    "Callout.md": "> [!warning]+ Glimmerdust hazard\n> Wear gloves near the flumox.\n\n> [!tip]\n> Nothing titled.\n",
    "Code.md": "```python\n# %%notacomment%% stays\nprint('[[kept|verbatim]]')\n```\n\nAnd `%%inline code%%` too.\n",
    # A community plugin page as the hub writes it: badges first, a commented-out sponsor line, HTML, links.
    "Badges.md": (
        "%% ----- Badges ----- %%\n\n"
        "![Quibbleton stars](https://img.shields.io/github/stars/x/y?color=573E7A&logo=github)   \n"
        "[![Sponsor](https://img.shields.io/badge/sponsor-yes-red)](https://example.com/zeppelinade)\n\n"
        "Sorts your marmaladon lists by date.\n\n"
        "<!-- - [[Patreon]]: <https://www.patreon.com/zanzibarq> ^patreon-->\n"
        "<span class=\"snorfle\">Tiddlywink</span> settings live in [Gallivant docs](https://example.com/flibbertigib).\n\n"
        "![Harbour crane at noon](pics/crane%20photo.png)\n\n"
        "[wibble]: https://example.com/wobbleref \"Title\"\n"
    ),
    "Mapping alias.md": "---\naliases:\n- Lawlistia: Custom Listing Styles\ntags: {area: [pomology]}\n---\nBody text only.\n",
    "Tags.md": "---\ntags: [espresso-maintenance, project/wobblenut]\naliases: [Percolator pal]\n---\nBody mentions #fridge-inventory inline.\n",
    "Key case.md": "---\nAliases: [Quixotrope]\nTAG: snarfblat gubbinsworth\n---\nPlain body.\n",
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
    ("vortexium", None, "an image embed shows the picture, not its file name"),
    ("lighthouse", "Embed.md", "an image embed's caption is shown"),
    ("quasimodal", "Embed.md", "a note embed indexes the note's name"),
    ("glimmerdust", "Callout.md", "a callout keeps its title"),
    ("flumox", "Callout.md", "a callout keeps its body"),
    ("notacomment", "Code.md", "%% inside a code block is code, not a comment"),
    ("verbatim", "Code.md", "a wikilink inside code stays verbatim"),
    ("percolator", "Tags.md", "frontmatter aliases are terms"),
    ("espresso maintenance", "Tags.md", "a hyphenated frontmatter tag is split into words"),
    ("wobblenut", "Tags.md", "a nested frontmatter tag is a term"),
    ("fridge inventory", "Tags.md", "an inline #tag is split into words too"),
    ("marmaladon", "Badges.md", "a plugin page's own words are indexed"),
    ("quibbleton", None, "a badge image's label is not shown text"),
    ("zeppelinade", None, "a linked badge's target is not shown text"),
    ("zanzibarq", None, "an <!-- HTML comment --> is not indexed"),
    ("tiddlywink", "Badges.md", "the text inside an HTML tag is indexed"),
    ("snorfle", None, "an HTML tag's attributes are not indexed"),
    ("gallivant", "Badges.md", "a Markdown link indexes its text"),
    ("flibbertigib", None, "a Markdown link's target is not indexed"),
    ("harbour crane", "Badges.md", "an image's alt text that reads as words is indexed"),
    ("wobbleref", None, "a reference-style link definition is not indexed"),
    ("lawlistia", "Mapping alias.md", "an alias that YAML read as a mapping is a term"),
    ("quixotrope", "Key case.md", "an Aliases: key with a capital is the aliases property, as in Obsidian"),
    ("gubbinsworth", "Key case.md", "a TAG: key is the tags property; its text splits at spaces into tags"),
    ("custom listing styles", "Mapping alias.md", "the mapping's value is a term too"),
    ("pomology", "Mapping alias.md", "a tag inside a mapping is a term"),
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


def test_prefixes_hold_only_visible_text(vault: Path) -> None:
    """The synthetic prefix is the title and the first sentence Obsidian shows, aliases flattened into words."""
    records = {rec["page_path"]: rec for rec in chunk_records(vault)}
    assert records["Badges.md"]["prefix"] == "Badges. Sorts your marmaladon lists by date."
    assert records["Mapping alias.md"]["prefix"] == ("Mapping alias. Body text only. Tags: area pomology. "
                                                     "Aliases: Lawlistia: Custom Listing Styles.")
    for rec in records.values():
        if rec["page_path"] == "Code.md":
            continue  # code is kept as written
        for markup in ("![", "](", "<!--", "<span", "http", "{'", "%%"):
            assert markup not in rec["contextualized_text"], (rec["page_path"], markup)


def test_retrieve_snippet_skips_badges(vault: Path) -> None:
    hit = run_json("retrieve", "--vault", vault, "marmaladon lists", "--no-rerank")["candidates"][0]
    assert hit["page_path"] == "Badges.md" and hit["snippet"].startswith("Sorts your marmaladon lists")


def test_visible_text_drops_what_reading_view_hides() -> None:
    assert visible_text("a<br>b <span class=x>c</span> &amp; d") == "a b c & d"
    assert visible_text("<!--\nan unclosed block runs to the end\n\nstill hidden") == ""
    assert visible_text("inline <!-- unclosed stays") == "inline <!-- unclosed stays"
    assert visible_text("- site: <https://example.org> ^site") == "- site: https://example.org"
    assert visible_text("![[pic.png|300]]![[pic.png|A caption]] ![[Note]]") == "A caption Note"
    assert visible_text("![Kanban.png](https://x.org/k.png) ![|400](a.png) ![Screenshot of the graph|400](a.png)") \
        == "  Screenshot of the graph"
    assert visible_text("[^1]: a footnote stays\n[ref]: https://x.org") == "[^1]: a footnote stays\n"
    assert visible_text("<style>p {}</style>shown<script>x()</script>") == "shown"
    code = "```html\n<!-- kept --> <b>kept</b> ![a](b.png)\n```\n`<i>also</i>`"
    assert visible_text(code) == code


def test_visible_map_points_back_into_the_body() -> None:
    from vaulteval.chunks.visible import visible

    body = "intro %%hidden%% [[Target|label]] text\n<!-- gone -->\n![badge](https://img.shields.io/x)last words"
    shown = visible(body)
    assert shown.text == "intro  label text\n\nlast words"
    for word in ("intro", "text", "last words"):
        at = shown.text.index(word)
        assert body[shown.source_offset(at):].startswith(word), word
    assert shown.source_offset(shown.text.index("label")) == body.index("[[Target")


def test_page_terms_line() -> None:
    line = page_terms({"tags": "a-b, c", "aliases": "X, Y"}, "text #d/e")
    assert line == "Tags: a-b c a b d e. Aliases: X; Y."
    assert page_terms({}, "no tags, # heading, issue #12") == ""
    assert page_terms({"aliases": [{"LawList": "Custom List Styles"}, ["Nested", None]]}, "") == \
        "Aliases: LawList: Custom List Styles; Nested."
    assert page_terms({"aliases": {"A": None}, "tags": {"area": ["x-y", 3]}}, "") == "Tags: area x-y 3 x y. Aliases: A."


@pytest.mark.parametrize("frontmatter, aliases, tags", [
    ({"Aliases": ["A b"]}, ["A b"], []),
    ({"ALIAS": "A, B"}, ["A", "B"], []),
    ({"alias": "One"}, ["One"], []),
    ({"Tags": "x y,z"}, [], ["x", "y", "z"]),
    ({"tag": ["#x"]}, [], ["x"]),
    # Obsidian takes the first key that names the property, in the note's order; later ones are other properties.
    ({"aliases": ["first"], "Alias": ["second"], "TAGS": ["t1"], "tags": ["t2"]}, ["first"], ["t1"]),
    ({"aliases_extra": ["no"], "my tags": "no", 3: "no"}, [], []),
])
def test_default_properties_are_read_as_obsidian_reads_them(frontmatter: dict, aliases: list, tags: list) -> None:
    from vaulteval.chunks.obsidian import page_aliases, page_tags, property_value

    assert page_aliases(frontmatter) == aliases
    assert page_tags(frontmatter, "")[0] == tags
    assert property_value({"CSSClass": "wide", "cssclasses": ["narrow"]}, "cssclasses") == "wide"


def test_a_mapping_alias_is_in_the_alias_field(vault: Path) -> None:
    out = run_json("retrieve", "--vault", vault, "lawlistia custom listing", "--no-rerank", "--explain",
                   "--strategy", "bm25:w_aliases=3")
    assert out["label"] == {"first_stage": "bm25+fields", "reranker": None, "fallbacks": []}
    assert [c["page_path"] for c in out["candidates"]][:1] == ["Mapping alias.md"]
    from vaulteval.index.fieldbuild import _aliases

    assert _aliases({"aliases": [{"LawList": "Custom List Styles"}]}) == "LawList: Custom List Styles"
