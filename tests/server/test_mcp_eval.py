"""The evaluation loop over MCP (``vaulteval mcp --eval-dir DIR``), driven by the official SDK's client over stdio:
eval_worksheet -> eval_add_questions -> tune (and eval_run) in four calls; files only under DIR, the vault unchanged,
anything else refused with one line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from pipeline_fixtures import run_main, snapshot

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402

from test_mcp_stdio import TOOLS, run  # noqa: E402

EVAL_TOOLS = {"eval_worksheet", "eval_add_questions", "eval_run", "tune"}
UNANSWERABLE = ["How do I renew a passport at the embassy in Lima?"]


def _questions(notes: list[dict[str, Any]]) -> dict[str, list[str]]:
    """One question per note from words of its text that are not in its title, as a writer who read it might."""
    out = {}
    for note in notes:
        title = {w.casefold() for w in re.findall(r"\w+", note["title"])}
        words = [w for w in re.findall(r"[A-Za-z]{5,}", note["text"]) if w.casefold() not in title]
        picked = list(dict.fromkeys(w.lower() for w in words))[:3]
        out[note["path"]] = [f"What should I know about {' and '.join(picked)} when I use this?"]
    return out


def test_the_loop_runs_end_to_end_in_four_tool_calls_and_writes_only_under_the_folder(fresh_vault: Path,
                                                                                     tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    before = {k: v for k, v in snapshot(fresh_vault).items() if not k.startswith(".vault-meta")}

    async def script(client: ClientSession) -> dict[str, Any]:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        sheet = await client.call_tool("eval_worksheet", {"n": 10, "seed": 3})
        notes = sheet.structuredContent["notes"]
        added = await client.call_tool("eval_add_questions", {"questions": _questions(notes),
                                                              "unanswerable": UNANSWERABLE, "writer": "agent"})
        verdict = await client.call_tool("tune", {"queryset": "written.yaml",
                                                  "grid": ["bm25", "bm25:k1=0.5,b=0.3"]})
        compared = await client.call_tool("eval_run", {"queryset": "written.yaml",
                                                       "strategies": ["bm25", "bm25:analyzer=english"]})
        return {"tools": tools, "sheet": sheet, "added": added, "verdict": verdict, "compared": compared}

    out = run(fresh_vault, script, "--eval-dir", str(folder))
    assert set(out["tools"]) == TOOLS | EVAL_TOOLS
    assert out["tools"]["eval_worksheet"].annotations.readOnlyHint is False
    assert out["tools"]["eval_run"].annotations.readOnlyHint is True
    for name in ("sheet", "added", "verdict", "compared"):
        assert not out[name].isError, out[name].content[0].text
    sheet = out["sheet"].structuredContent
    assert sheet["worksheet"] == "worksheet.yaml" and len(sheet["notes"]) == 10
    assert "before you run any search" in sheet["task"] and all(n["text"] for n in sheet["notes"])
    added = out["added"].structuredContent
    assert added["queryset"] == "written.yaml"
    assert added["summary"]["questions"] == 10 and added["summary"]["unanswerable"] == 1
    decision = out["verdict"].structuredContent["decision"]
    assert out["verdict"].structuredContent["verdict"] in ("adopt", "keep", "inconclusive")
    assert decision["evidence"]["basis"] == "questions" and set(decision["evidence"]["writers"]) == {"agent"}
    assert out["verdict"].structuredContent["evidence_line"].startswith(
        f"the verdict rests on {decision['n_test']} written or real test questions (agent {decision['n_test']})")
    assert out["verdict"].structuredContent["run_dir"].startswith("runs/")
    rows = out["compared"].structuredContent["strategies"]
    assert [r["strategy"] for r in rows] == ["bm25", "bm25:analyzer=english"]
    for r in rows:
        assert r["ci95"][0] <= r["mean"] <= r["ci95"][1] and r["queries"] == 10
    versus = rows[1]["vs_first"]
    assert "vs_first" not in rows[0] and versus["ci95"][0] <= versus["delta"] <= versus["ci95"][1]
    assert versus["line"].startswith("nDCG@10: Δ ") and versus["verdict"] in versus["line"]  # eval run's own words

    after = {k: v for k, v in snapshot(fresh_vault).items() if not k.startswith(".vault-meta")}
    assert after == before  # no note and no .vaulteval.json written
    filled = (folder / "worksheet.yaml").read_text(encoding="utf-8")
    assert "writer: agent" in filled and UNANSWERABLE[0] in filled  # the worksheet records what was written
    written = {p.relative_to(folder).parts[0] for p in folder.rglob("*") if p.is_file()}
    assert written == {"worksheet.yaml", "written.yaml", "runs"}


def test_paths_outside_the_folder_and_bad_input_are_one_line_tool_errors(fresh_vault: Path, tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    folder.mkdir()
    os.symlink(fresh_vault / "wiki", folder / "into-vault")
    (folder / "broken.yaml").write_text("notes: [\n  - path: x\n    questions: [unclosed\n", encoding="utf-8")
    before = snapshot(fresh_vault)

    async def script(client: ClientSession) -> list[Any]:
        calls = [("eval_worksheet", {"out": "../escape.yaml"}),
                 ("eval_worksheet", {"out": str(fresh_vault / "wiki" / "ws.yaml")}),
                 ("eval_worksheet", {"out": "into-vault/ws.yaml"}),
                 ("eval_worksheet", {"n": 0}),
                 ("eval_run", {"queryset": "/etc/passwd", "strategies": ["bm25"]}),
                 ("eval_run", {"queryset": "missing.yaml", "strategies": ["bm25"]}),
                 ("eval_run", {"queryset": "broken.yaml", "strategies": ["nosuch"]}),
                 ("eval_add_questions", {"worksheet": "broken.yaml", "questions": {"x": ["what now?"]}}),
                 ("tune", {"queryset": "written.yaml", "write": True})]
        return [await client.call_tool(name, args) for name, args in calls]

    results = run(fresh_vault, script, "--eval-dir", str(folder))
    texts = [r.content[0].text for r in results]
    assert all(r.isError and r.structuredContent["exit_code"] == 2 for r in results), texts
    assert all("\n" not in t and "Traceback" not in t for t in texts)
    assert "outside the evaluation folder" in texts[0] and "inside the vault" not in texts[0]
    assert "outside the evaluation folder" in texts[1] and "outside the evaluation folder" in texts[2]
    assert texts[3] == "n must be a whole number from 1 to 1000, got 0"
    assert "outside the evaluation folder" in texts[4] and "does not exist" in texts[5]
    assert "nosuch" in texts[6]
    assert "broken.yaml" in texts[7] and "line" in texts[7]
    assert texts[8].startswith("unknown parameter(s) for tune: write")
    assert snapshot(fresh_vault) == before and not (tmp_path / "escape.yaml").exists()


def test_without_an_eval_folder_the_tools_are_not_served_and_say_how_to_start(fresh_vault: Path) -> None:
    async def script(client: ClientSession) -> tuple[set[str], Any]:
        listed = {t.name for t in (await client.list_tools()).tools}
        return listed, await client.call_tool("eval_worksheet", {})

    listed, result = run(fresh_vault, script)
    assert listed == TOOLS and result.isError and "--eval-dir DIR" in result.content[0].text


def test_an_eval_folder_inside_the_vault_is_refused_before_the_server_starts(fresh_vault: Path) -> None:
    code, _, err = run_main("mcp", "--vault", fresh_vault, "--no-rerank", "--eval-dir", fresh_vault / "evals")
    assert code == 2 and "--eval-dir" in err and "inside the vault" in err
    assert not (fresh_vault / "evals").exists()
