"""``vaulteval mcp`` over stdio, driven by the official SDK's own client, on a real copy of the sample vault.

One server process per test: it is started the way an agent's MCP config
starts it (``python -m vaulteval mcp --vault V``), and everything is checked
through the protocol.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from pipeline_fixtures import DESCALING_NOTE, append_text, cli_env, run_main, snapshot, write_note
from vaulteval import Vault
from vaulteval.pipeline.provision import provision

pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

TOOLS = {"search", "read", "read_many", "status"}


@contextlib.asynccontextmanager
async def session(root: Path, *extra: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "vaulteval", "mcp", "--vault", str(root), "--no-rerank", *extra],
                                   env=cli_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


def run(root: Path, script: Any, *extra: str) -> Any:
    """Run ``await script(client)`` against a fresh server for ``root``; returns what it returns."""
    async def main() -> Any:
        async with session(root, *extra) as client:
            return await script(client)

    return anyio.run(main)


def outside_meta(root: Path) -> dict:
    return {k: v for k, v in snapshot(root).items() if not k.startswith(".vault-meta")}


def test_tools_are_listed_read_only_with_closed_schemas_and_each_answers(fresh_vault: Path) -> None:
    before = outside_meta(fresh_vault)

    async def script(client: ClientSession) -> dict:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        results = {
            "search": await client.call_tool("search", {"query": "descale the espresso machine", "limit": 3}),
            "read": await client.call_tool("read", {"page": "[[Descaling]]"}),
            "range": await client.call_tool("read", {"page": DESCALING_NOTE, "start_line": 8, "end_line": 9}),
            "read_many": await client.call_tool("read_many", {"pages": ["[[Descaling]]", "wiki/nope.md"]}),
            "status": await client.call_tool("status", {}),
        }
        return {"tools": tools, **results}

    out = run(fresh_vault, script)
    tools = out.pop("tools")
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations.readOnlyHint is True and tool.annotations.idempotentHint is True
        assert tool.annotations.destructiveHint is False
        assert tool.inputSchema["additionalProperties"] is False
    assert tools["search"].inputSchema["properties"]["limit"]["maximum"] == 1000
    for name, result in out.items():
        assert result.isError is False, (name, result.content)
        assert json.loads(result.content[0].text) == result.structuredContent  # the text twin
    found = out["search"].structuredContent
    cli = json.loads(run_main("retrieve", "--vault", fresh_vault, "descale the espresso machine", "--top", "3",
                              "--no-rerank")[1])
    assert found == cli and found["schema"] == "vaulteval.retrieve.v2"  # the same JSON as retrieve
    assert DESCALING_NOTE in [c["page_path"] for c in found["candidates"]]
    assert out["read"].structuredContent["page_path"] == DESCALING_NOTE
    ranged = out["range"].structuredContent
    full_lines = out["read"].structuredContent["text"].split("\n")
    first = out["read"].structuredContent["body_first_line"]
    assert ranged["text"].split("\n") == full_lines[8 - first: 10 - first] and ranged["lines"]["first"] == 8
    notes = out["read_many"].structuredContent["notes"]
    assert notes[0]["page_path"] == DESCALING_NOTE and notes[1]["exit_code"] == 3
    status = out["status"].structuredContent
    assert status["state"] == "verified" and status["index_age_seconds"] >= 0
    assert status["doctor"]["stats"]["doc_count"] > 0
    assert outside_meta(fresh_vault) == before  # no byte outside .vault-meta/ changed


def _cli_error(*args: Any) -> str:
    code, _, err = run_main(*args)
    assert code == 2
    return err.strip().removeprefix("vaulteval: error: ")


def test_bad_parameters_are_tool_errors_with_the_clis_messages(provisioned_sample: Path) -> None:
    long_query = "espresso " * 1000  # 9,000 characters

    async def script(client: ClientSession) -> dict:
        return {
            "long": await client.call_tool("search", {"query": long_query}),
            "zero": await client.call_tool("search", {"query": "espresso", "limit": 0}),
            "unknown": await client.call_tool("search", {"query": "espresso", "top": 3}),
            "strategy": await client.call_tool("search", {"query": "espresso", "strategy": "bm25:nope=1"}),
            "status_extra": await client.call_tool("status", {"deep": True}),
        }

    out = run(provisioned_sample, script)
    for name, result in out.items():
        assert result.isError is True, name
        assert result.structuredContent["exit_code"] == 2 and result.content[0].text == result.structuredContent["error"]
    assert out["long"].content[0].text == _cli_error("retrieve", "--vault", provisioned_sample, long_query)
    top_message = _cli_error("retrieve", "--vault", provisioned_sample, "espresso", "--top", "0")
    assert out["zero"].content[0].text == top_message.replace("--top", "limit")
    assert "unknown parameter(s) for search: top" in out["unknown"].content[0].text
    assert out["strategy"].content[0].text == _cli_error("retrieve", "--vault", provisioned_sample, "espresso",
                                                         "--no-rerank", "--strategy", "bm25:nope=1")
    assert "unknown parameter(s) for status: deep" in out["status_extra"].content[0].text


def test_an_edited_note_is_not_served_stale_and_a_republished_index_is_picked_up(fresh_vault: Path) -> None:
    before = outside_meta(fresh_vault)
    word = "zyxquartzwidget"

    async def script(client: ClientSession) -> dict:
        async def pages(query: str) -> list[str]:
            result = await client.call_tool("search", {"query": query, "limit": 10})
            assert result.isError is False, result.content
            return [c["page_path"] for c in result.structuredContent["candidates"]]

        out = {"first": await pages("descale espresso machine")}
        append_text(fresh_vault, DESCALING_NOTE, "\nDescale espresso machine monthly, said nobody.\n")
        out["edited"] = await pages("descale espresso machine")
        write_note(fresh_vault, "wiki/inbox/New gadget.md", f"# New gadget\n\nThe {word} sits on the desk.\n")
        out["unindexed"] = await pages(word)
        await anyio.to_thread.run_sync(lambda: provision(Vault(fresh_vault)))
        out["republished"] = await pages(word)
        out["after"] = await pages("descale espresso machine")
        out["status"] = (await client.call_tool("status", {})).structuredContent
        return out

    out = run(fresh_vault, script)
    assert DESCALING_NOTE in out["first"]
    assert DESCALING_NOTE not in out["edited"]  # its chunk no longer matches the note: dropped, not served
    assert out["unindexed"] == []
    assert out["republished"] == ["wiki/inbox/New gadget.md"]
    assert DESCALING_NOTE in out["after"]
    assert out["status"]["server"]["reopened"] >= 1 and out["status"]["state"] == "verified"
    changed = {k for k, v in outside_meta(fresh_vault).items() if before.get(k) != v}
    assert changed == {DESCALING_NOTE, "wiki/inbox/New gadget.md"}  # the test's own edits, nothing else


def test_an_unprovisioned_vault_serves_status_and_reports_search_as_the_cli_does(unprovisioned_vault: Path) -> None:
    async def script(client: ClientSession) -> tuple:
        return (await client.call_tool("search", {"query": "espresso"}), await client.call_tool("status", {}))

    search, status = run(unprovisioned_vault, script)
    assert search.isError is True and search.structuredContent["exit_code"] == 10
    assert "rebuild with: vaulteval provision" in search.content[0].text
    assert status.isError is False and status.structuredContent["state"] == "available"
    assert not (unprovisioned_vault / ".vault-meta").exists()


def test_a_read_after_a_backlink_is_added_or_removed_sees_it(fresh_vault: Path) -> None:
    before = outside_meta(fresh_vault)
    linker = "wiki/inbox/Links here.md"
    in_place = next(rel for rel in sorted(before) if rel.startswith("wiki/") and rel.endswith(".md")
                    and rel != DESCALING_NOTE)

    async def script(client: ClientSession) -> dict:
        async def backlinks() -> list[tuple[str, int]]:
            result = await client.call_tool("read", {"page": "[[Descaling]]"})
            assert result.isError is False, result.content
            return [(b["page_path"], b["line"]) for b in result.structuredContent["backlinks"]]

        async def many() -> list[tuple[str, int]]:
            result = await client.call_tool("read_many", {"pages": ["[[Descaling]]"]})
            return [(b["page_path"], b["line"]) for b in result.structuredContent["notes"][0]["backlinks"]]

        out = {"first": await backlinks(), "again": await backlinks()}
        write_note(fresh_vault, linker, "# Links here\n\nSee [[Descaling]] first.\n")
        out["new note"] = await backlinks()
        append_text(fresh_vault, in_place, "\nAlso [[Descaling#How often]].\n")  # edited where it is
        out["edited"], out["many"] = await backlinks(), await many()
        (fresh_vault / linker).unlink()
        out["removed"] = await backlinks()
        return out

    out = run(fresh_vault, script)
    assert out["again"] == out["first"] and (linker, 3) not in out["first"]
    assert out["new note"] == sorted(out["first"] + [(linker, 3)])
    added = (in_place, (fresh_vault / in_place).read_text(encoding="utf-8").count("\n"))
    assert added in out["edited"] and (linker, 3) in out["edited"] and out["many"] == out["edited"]
    assert (linker, 3) not in out["removed"] and added in out["removed"]


def test_searches_are_logged_only_with_log_and_the_log_becomes_a_pool(fresh_vault: Path, tmp_path: Path) -> None:
    """``mcp --log FILE``: an agent's questions, as ``retrieve --log`` writes them, for ``queryset from-log``."""
    log = tmp_path / "agent-questions.jsonl"
    questions = ["how do I descale the espresso machine", "why does my bread come out flat"]

    async def script(client: ClientSession) -> list:
        served = []
        for q in questions:
            result = await client.call_tool("search", {"query": q, "limit": 3})
            assert result.isError is False, result.content
            served.append([c["page_path"] for c in result.structuredContent["candidates"]])
        await client.call_tool("read", {"page": DESCALING_NOTE})  # reads are not questions
        return served

    before = snapshot(fresh_vault)
    served = run(fresh_vault, script, "--log", str(log))
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [line["query"] for line in lines] == questions and [line["paths"] for line in lines] == served
    assert all(set(line) == {"time", "vault", "query", "strategy", "paths"} for line in lines)
    assert oct(log.stat().st_mode & 0o777) == "0o600" and served[0]
    assert snapshot(fresh_vault) == before
    code, out, err = run_main("queryset", "from-log", str(log), "--vault", fresh_vault, "--out", tmp_path / "pool.yaml")
    assert code == 0, err
    assert (tmp_path / "pool-queries.yaml").is_file()


def test_a_log_inside_the_vault_stops_the_server_before_it_starts(fresh_vault: Path) -> None:
    before = snapshot(fresh_vault)
    code, out, err = run_main("mcp", "--vault", fresh_vault, "--log", fresh_vault / "questions.jsonl")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--log" in err and "inside" in err
    assert snapshot(fresh_vault) == before


def test_a_log_that_cannot_be_written_is_said_once_and_searches_go_on(fresh_vault: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    from vaulteval.pipeline.querylog import QueryLog
    from vaulteval.server.warm import Served, WarmVault

    log = tmp_path / "questions.jsonl"
    warm = WarmVault(Vault(fresh_vault), Served(), QueryLog(log, Vault(fresh_vault)))
    assert warm.search(query="descale espresso machine")["candidates"]
    log.unlink()
    log.mkdir()  # the log became a folder while the server ran
    for _ in range(2):
        assert warm.search(query="descale espresso machine")["candidates"]
    err = capsys.readouterr().err
    assert err.count("not logged until it can be written") == 1 and str(log) in err
