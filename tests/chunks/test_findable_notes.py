"""Every chunk provisioning makes of a current note passes the chunk-to-note check and is served.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_findable_notes.py -q``

Notes are built from Markdown blocks (fences, embeds, links, callouts, tables,
headings, comments, long runs without spaces), with LF or CRLF line endings,
with or without frontmatter and a BOM; each is provisioned in a vault of its
own and every index row must come back from the integrity check, and a query
for the note's words must serve it with no candidate skipped as stale.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vaulteval import Vault
from vaulteval.chunks.chunking import parse_page, split_chunks
from vaulteval.chunks.derived import chunk_in_note
from vaulteval.chunks.obsidian import visible_text
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import Retriever, retrieve

from hypothesis_budget import examples

# The shape a real note was lost to: a fenced block, then a media embed with a label, then a heading.
MESHLETS = ("# Meshlets\n\nMeshlets split a mesh into clusters.\n\n```cpp\nstruct Meshlet {\n    uint32_t v[64];\n"
            "};\n\nint first = data[[0]];\n```\n\n![[../assets/meshlets_data.png|meshlets_data.png]]\n"
            "## References\n")
# A paragraph of a language written without spaces, longer than a chunk may be.
UNSPACED = "# Meshlets 长段落\n\n" + "网格着色器把网格分成小簇以便剔除。" * 500 + "\n"

# Each block holds the word {w} where reading view shows it (a comment's word is hidden, so it has none).
BLOCKS = [
    "Plain prose about {w} and coffee.",
    "```cpp\nstruct {w} {{ int v[64]; }};\n\nint x = a[[b]]; // <!-- not a comment\n```",
    "```\n![[{w}.png]]\n%% kept in code %%\n```",
    "~~~python\nprint('{w}')\n~~~",
    "```js\nconst {w} = 1; // a fence never closed",
    "![[../assets/{w}_data.png|{w}_data.png]]",
    "![[{w} note]]",
    "![[picture.png|300]] {w} after a sized picture",
    "See [[./{w}|sleep pressure]] and [[../x/{w}#Heading|label]].",
    "[{w} label](https://example.org/{w}) and <https://example.org/a>",
    "> [!tip] {w} title\n> a callout with [[link]]",
    "> [!note]\n> {w} in a callout without title",
    "| a | b |\n|---|---|\n| [[x\\|{w}]] | `code` |",
    "## {w} heading",
    "## References",
    "<!-- a hidden comment -->{w} after a comment",
    "%%private%% {w} after a private aside",
    "<div>{w} in <b>HTML</b></div>",
    "Inline `[[{w}]]` code and a block id ^block-1",
    "- item [[a]] {w}\n- item ![[b.png]]",
    "{w}&amp;entity [ref]: plain",
    "![{w} words](img.png)",
    "网格着色器{w}" + "把网格分成小簇以便剔除" * 200,
    ("{w} " + "word " * 500).strip(),
]
HIDING = ["<!-- a comment -->", "%% an aside %%", "<!--\nan HTML block left open"]

blocks = st.lists(st.tuples(st.sampled_from(BLOCKS + HIDING), st.sampled_from(["\n\n", "\n", "\n\n\n"])),
                  min_size=1, max_size=8)
notes = st.builds(
    lambda parts, crlf, front, bom: (("\ufeff" if bom else "") + (front or "")
                                     + "".join(b.format(w=f"marker{i}") + sep for i, (b, sep) in enumerate(parts))
                                     ).replace("\n", "\r\n" if crlf else "\n"),
    blocks, st.booleans(), st.sampled_from([None, "---\ntitle: T\ntags: [a, b]\n---\n", "---\nnote: '```'\n---\n"]),
    st.booleans())


def _provisioned(root: Path, text: str) -> Vault:
    (root / ".obsidian").mkdir()
    (root / "note.md").write_bytes(text.encode("utf-8"))
    vault = Vault(root)
    provision(vault)
    return vault


def _assert_every_chunk_served(vault: Vault) -> None:
    retriever = Retriever(vault)
    checker = retriever.integrity()
    docs = list(retriever.index().iter_docs())
    for doc in docs:
        assert checker.current_record(doc) is not None, doc.chunk_id
    shown = visible_text(parse_page((vault.root / "note.md").read_bytes(), "note.md").body)
    # Every planted word, then the note's other words (a note of a heading alone has no planted one).
    words = list(dict.fromkeys(re.findall(r"marker\d+", shown) + re.findall(r"[A-Za-z]{3,}", shown)))
    if not docs:
        return
    result = retrieve(vault, " ".join(words[:30]), top=5, bm25_top=200, explain=True)
    assert result.explain["stale_candidates_skipped"] == 0
    assert [c.page_path for c in result.candidates] == ["note.md"]


@settings(max_examples=examples(), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes)
@example(MESHLETS)
@example(MESHLETS.replace("\n", "\r\n"))
@example("---\ntitle: Meshlets\n---\r\n" + MESHLETS.replace("\n", "\r\n"))
@example(UNSPACED)
def test_every_chunk_of_a_note_of_markdown_blocks_passes_the_check_and_is_served(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _assert_every_chunk_served(_provisioned(Path(tmp), text))


def test_a_fence_closed_by_a_crlf_line_still_closes_for_the_check() -> None:
    data = MESHLETS.replace("\n", "\r\n").encode()
    chunks = split_chunks(visible_text(parse_page(data, "meshlets.md").body))
    assert chunks and all(chunk_in_note(c, data) for c in chunks)
    # The embed is no text of the note: a chunk that shows it is refused.
    assert not chunk_in_note(chunks[-1].replace("## References", "meshlets_data.png\n\n## References"), data)


def test_a_run_without_spaces_is_cut_without_adding_whitespace() -> None:
    body = visible_text(parse_page(UNSPACED.encode(), "n.md").body)
    chunks = split_chunks(body)
    assert len(chunks) > 2
    unspaced = "".join(body.split("\n\n")[1:])
    for chunk in chunks[1:]:
        assert chunk in unspaced  # each is one stretch of the paragraph as written, overlap included
        assert chunk_in_note(chunk, UNSPACED.encode())
    # Put a space where the cut was and the chunk is not text of the note.
    forged = chunks[1][:100] + " " + chunks[1][100:]
    assert not chunk_in_note(forged, UNSPACED.encode())
