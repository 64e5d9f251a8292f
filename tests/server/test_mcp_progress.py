"""``tune`` over MCP sends progress notifications when the client asks for them (the official client's
``progress_callback``), one per strategy run as it ends, so a client can tell a long tune from a stuck one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402

from test_mcp_eval import UNANSWERABLE, _questions  # noqa: E402
from test_mcp_stdio import run  # noqa: E402

GRID = ["bm25", "bm25:k1=0.5,b=0.3", "bm25:k1=2.0,b=0.9"]


def test_tune_reports_each_run_as_progress_and_only_when_asked(fresh_vault: Path, tmp_path: Path) -> None:
    async def script(client: ClientSession) -> dict[str, Any]:
        sheet = await client.call_tool("eval_worksheet", {"n": 10, "seed": 3})
        await client.call_tool("eval_add_questions", {"questions": _questions(sheet.structuredContent["notes"]),
                                                      "unanswerable": UNANSWERABLE, "writer": "agent"})
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        told = await client.call_tool("tune", {"queryset": "written.yaml", "grid": GRID},
                                      progress_callback=on_progress)
        quiet = await client.call_tool("tune", {"queryset": "written.yaml", "grid": GRID, "seed": 1})
        return {"told": told, "seen": seen, "quiet": quiet}

    out = run(fresh_vault, script, "--eval-dir", str(tmp_path / "eval"))
    assert not out["told"].isError and not out["quiet"].isError, out["told"].content[0].text
    seen = out["seen"]
    # The search runs every grid strategy, then the confirmation runs the default and (when it differs) the best.
    assert len(seen) >= len(GRID) + 1, seen
    assert [p for p, _, _ in seen] == list(range(1, len(seen) + 1))
    assert all(total is None and message.startswith("tune: ran ") for _, total, message in seen)
    assert len({m for _, _, m in seen[:len(GRID)]}) == len(GRID)  # each grid strategy's run, by its name
    assert "tune: ran default" in {m for _, _, m in seen[len(GRID):]}


def test_a_progress_argument_from_the_client_is_refused_not_taken_for_the_reporter(fresh_vault: Path,
                                                                                   tmp_path: Path) -> None:
    async def script(client: ClientSession) -> Any:
        return await client.call_tool("tune", {"queryset": "written.yaml", "progress": "x"})

    result = run(fresh_vault, script, "--eval-dir", str(tmp_path / "eval"))
    assert result.isError and result.structuredContent["exit_code"] == 2
    assert result.content[0].text.startswith("unknown parameter(s) for tune: progress")
