"""The evaluation tools see the notes as they are at each call (a note added, removed or renamed while the server
runs), as ``search`` does; driven by the official SDK's client over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402

from test_mcp_stdio import run  # noqa: E402

NEW = "wiki/kitchen/Quokkaberry jam.md"


def test_eval_worksheet_sees_notes_added_removed_and_renamed_while_the_server_runs(fresh_vault: Path,
                                                                                  tmp_path: Path) -> None:
    wiki = fresh_vault / "wiki"
    gone = sorted(p for p in wiki.rglob("*.md") if p.stat().st_size > 2000)[0]
    renamed = sorted(p for p in wiki.rglob("*.md") if p.stat().st_size > 2000)[1]
    moved = renamed.with_name("Moved " + renamed.name)

    async def script(client: ClientSession) -> dict[str, Any]:
        async def paths() -> set[str]:
            sheet = await client.call_tool("eval_worksheet", {"n": 1000, "seed": 1})
            assert not sheet.isError, sheet.content[0].text
            return {n["path"] for n in sheet.structuredContent["notes"]}

        before = await paths()
        (fresh_vault / NEW).parent.mkdir(parents=True, exist_ok=True)
        (fresh_vault / NEW).write_text("# Quokkaberry jam\n\n" + "Boil the quokkaberries with sugar and lemon "
                                       "until the jam sets on a cold plate. " * 8, encoding="utf-8")
        gone.unlink()
        renamed.rename(moved)
        after = await paths()
        return {"before": before, "after": after}

    out = run(fresh_vault, script, "--eval-dir", str(tmp_path / "eval"))
    rel = lambda p: p.relative_to(fresh_vault).as_posix()  # noqa: E731
    assert {rel(gone), rel(renamed)} <= out["before"] and NEW not in out["before"]
    assert NEW in out["after"] and rel(moved) in out["after"]
    assert rel(gone) not in out["after"] and rel(renamed) not in out["after"]


def test_eval_run_sees_a_renamed_note_once_provisioned_and_refuses_a_stale_index_before(fresh_vault: Path,
                                                                                       tmp_path: Path) -> None:
    from pipeline_fixtures import DESCALING_NOTE, run_json

    folder = tmp_path / "eval"
    folder.mkdir()
    moved = DESCALING_NOTE.replace("Descaling", "Descaling moved")
    (folder / "set.yaml").write_text(
        "name: renamed\nqueries:\n  - id: q1\n    query: descaling citric acid\n"
        f"    relevant: {{\"{moved}\": 2}}\n", encoding="utf-8")
    (folder / "old.yaml").write_text(
        "name: old\nqueries:\n  - id: q1\n    query: descaling citric acid\n"
        f"    relevant: {{\"{DESCALING_NOTE}\": 2}}\n", encoding="utf-8")

    async def script(client: ClientSession) -> dict[str, Any]:
        first = await client.call_tool("eval_run", {"queryset": "old.yaml", "strategies": ["bm25"]})
        (fresh_vault / DESCALING_NOTE).rename(fresh_vault / moved)
        stale = await client.call_tool("eval_run", {"queryset": "set.yaml", "strategies": ["bm25"]})
        run_json("provision", "--vault", fresh_vault)
        fresh = await client.call_tool("eval_run", {"queryset": "set.yaml", "strategies": ["bm25"]})
        old = await client.call_tool("eval_run", {"queryset": "old.yaml", "strategies": ["bm25"]})
        return {"first": first, "stale": stale, "fresh": fresh, "old": old}

    out = run(fresh_vault, script, "--eval-dir", str(folder))
    assert not out["first"].isError and out["first"].structuredContent["strategies"][0]["mean"] > 0
    assert out["stale"].isError and out["stale"].structuredContent["exit_code"] == 10, out["stale"].content[0].text
    assert not out["fresh"].isError, out["fresh"].content[0].text
    assert out["fresh"].structuredContent["strategies"][0]["mean"] > 0
    assert out["old"].isError and "unknown page" in out["old"].content[0].text  # the old path is gone


def test_the_eval_tools_follow_a_new_notes_folder_as_search_does(tmp_path: Path) -> None:
    """A plain vault (notes at the root) that gains a ``wiki/`` folder: opening now chooses ``wiki/``, and the
    worksheet samples its notes only."""
    root = tmp_path / "plain"
    (root / ".obsidian").mkdir(parents=True)
    for i in range(3):
        (root / f"Root {i}.md").write_text(f"# Root {i}\n\n" + "Notes at the root of the vault, " * 20, "utf-8")

    async def script(client: ClientSession) -> dict[str, Any]:
        before = await client.call_tool("eval_worksheet", {"n": 100})
        (root / "wiki").mkdir()
        (root / "wiki" / "Inside.md").write_text("# Inside\n\n" + "A note inside the wiki folder, " * 20, "utf-8")
        after = await client.call_tool("eval_worksheet", {"n": 100})
        return {"before": before, "after": after}

    out = run(root, script, "--eval-dir", str(tmp_path / "eval"))
    assert not out["before"].isError and not out["after"].isError, out["after"].content[0].text
    assert {n["path"] for n in out["before"].structuredContent["notes"]} == {f"Root {i}.md" for i in range(3)}
    assert [n["path"] for n in out["after"].structuredContent["notes"]] == ["wiki/Inside.md"]
