"""A published garden as a new user brings it: notes under content/, no .obsidian/, relative-path links.

``read`` takes paths relative to the notes folder, resolves links as Obsidian does and finds their backlinks;
confinement is unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline_fixtures import assert_one_line_error, run_cli, run_main

NOTES = {
    "content/Concepts/coffee nap.md": (
        "# Coffee nap\n\nCaffeine blocks [[./adenosine|sleep pressure]] for a while.\n\n"
        "See [[./adenosine#Effects|its effects]], the block [[./adenosine.md#^b1]] and [[../Index]].\n\n"
        "![[../assets/nap.png|nap.png]]\n\n[Stages](./sleep/Stages.md) and [[/Concepts/sleep/Stages]].\n"),
    "content/Concepts/adenosine.md": "# Adenosine\n\n## Effects\n\nBuilds up while awake. ^b1\n",
    "content/Concepts/sleep/Stages.md": "# Stages\n\nBack to [[../coffee nap]] and [[missing]].\n",
    "content/Index.md": "# Index\n\n- [[Concepts/coffee nap]]\n- ![[assets/nap.png]]\n",
}


@pytest.fixture(scope="module")
def garden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("garden") / "garden"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "content/assets").mkdir()
    (root / "content/assets/nap.png").write_bytes(b"\x89PNG")
    outside = root.parent / "outside.md"
    outside.write_text("secret", encoding="utf-8")
    os.symlink(outside, root / "content/Leak.md")
    return root


def read(root: Path, *args: str) -> dict:
    code, out, err = run_main("read", "--vault", root, "--notes-dir", "content", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_relative_links_resolve_and_give_backlinks(garden: Path) -> None:
    view = read(garden, "Concepts/coffee nap.md")
    assert view["page_path"] == "content/Concepts/coffee nap.md"
    links = [(link["target"], link["heading"], link["label"], link["page_path"], link["status"])
             for link in view["links"]]
    assert links == [
        ("./adenosine", None, "sleep pressure", "content/Concepts/adenosine.md", "resolved"),
        ("./adenosine", "Effects", "its effects", "content/Concepts/adenosine.md", "resolved"),
        ("./adenosine.md", "^b1", None, "content/Concepts/adenosine.md", "resolved"),
        ("../Index", None, None, "content/Index.md", "resolved"),
        ("../assets/nap.png", None, "nap.png", "content/assets/nap.png", "not-a-note"),
        ("/Concepts/sleep/Stages", None, None, "content/Concepts/sleep/Stages.md", "resolved"),
        ("./sleep/Stages.md", None, "Stages", "content/Concepts/sleep/Stages.md", "resolved"),
    ]
    back = read(garden, "content/Concepts/adenosine.md")["backlinks"]
    assert [b["page_path"] for b in back] == ["content/Concepts/coffee nap.md"] * 3
    back = {(b["page_path"], b["raw"]) for b in read(garden, "[[coffee nap]]")["backlinks"]}
    assert back == {("content/Concepts/sleep/Stages.md", "[[../coffee nap]]"),
                    ("content/Index.md", "[[Concepts/coffee nap]]")}
    stages = read(garden, "Concepts/sleep/Stages.md")["links"]
    assert [(link["page_path"], link["status"]) for link in stages] == [
        ("content/Concepts/coffee nap.md", "resolved"), (None, "unresolved")]


@pytest.mark.parametrize("page", ["Concepts/coffee nap.md", "content/Concepts/coffee nap.md",
                                  "./Concepts/coffee nap.md", "Concepts\\coffee nap.md", "Concepts/coffee nap"])
def test_a_path_relative_to_the_notes_folder_names_the_note(garden: Path, page: str) -> None:
    assert read(garden, page)["page_path"] == "content/Concepts/coffee nap.md"


@pytest.mark.parametrize("page, code", [
    ("../outside.md", 2),                    # '..'
    ("Concepts/../../outside.md", 2),        # '..' inside the path
    ("/etc/passwd", 2),                      # absolute
    ("Leak.md", 2),                          # a symlink leading out of the notes folder
    ("Concepts/nothing.md", 3),              # missing
])
def test_confinement_is_unchanged(garden: Path, page: str, code: int) -> None:
    proc = run_cli("read", "--vault", garden, "--notes-dir", "content", page, "--json")
    assert_one_line_error(proc, code)


def test_a_query_set_names_pages_relative_to_the_notes_folder(garden: Path) -> None:
    from vaulteval.querysets.links import LinkResolver, resolve_key
    from vaulteval.vault.vault import Vault

    resolver = LinkResolver.from_vault(Vault(garden, notes_dir="content"))
    assert resolve_key(resolver, "Concepts/adenosine.md") == "content/Concepts/adenosine.md"
    assert resolve_key(resolver, "content/Index.md") == "content/Index.md"


def test_the_mcp_read_tool_takes_the_same_paths(garden: Path) -> None:
    from vaulteval.server.warm import Served, WarmVault
    from vaulteval.vault.vault import Vault

    warm = WarmVault(Vault(garden, notes_dir="content"), Served())
    view = warm.read(page="Concepts/adenosine.md")
    assert view["page_path"] == "content/Concepts/adenosine.md"
    assert {b["raw"] for b in view["backlinks"]} == {"[[./adenosine|sleep pressure]]",
                                                     "[[./adenosine#Effects|its effects]]", "[[./adenosine.md#^b1]]"}
    many = warm.read_many(pages=["Index.md", "../outside.md"])["notes"]
    assert many[0]["page_path"] == "content/Index.md" and many[1]["exit_code"] == 2
