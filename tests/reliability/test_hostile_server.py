"""The MCP server's doors, as issue 42 attacked them (items 2, 3 and the lone surrogate), through real processes.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_hostile_server.py -q``

- An exclusion added to ``.obsidian/app.json`` while the server runs holds for
  ``search`` and ``read`` from the next call; a corrupted ``app.json`` makes
  every tool, ``status`` included, the CLI's one-line refusal (exit 2).
- Over HTTP a request without the launch's token gets 401, and 64
  ``initialize`` requests left open by one process do not keep the next
  client out.
- A lone surrogate in an argument is answered, over stdio and HTTP.

Each wait is bounded by ``BOUND`` seconds (a hang guard: a refusal that used to
hang must come within it); nothing is timed. The parity of every open-time
rule with the CLI is in tests/server/test_mcp_vault_rules.py.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from pipeline_fixtures import DESCALING_NOTE, cli_env, run_main, snapshot

pytest.importorskip("mcp")
import httpx  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from mcp_servers import StdioLines, bearer, call_raw, launch_http, open_session, rpc_result  # noqa: E402

BOUND = 5.0
QUERY = "descale the espresso machine"


@pytest.fixture
def vault(provisioned_sample: Path, tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(provisioned_sample, root, symlinks=True)
    (root / ".obsidian").mkdir()
    return root


@contextlib.asynccontextmanager
async def stdio(root: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, env=cli_env(),
                                   args=["-m", "vaulteval", "mcp", "--vault", str(root), "--no-rerank"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def bounded(coro):
    with anyio.fail_after(BOUND):
        return await coro


def test_an_exclusion_added_while_serving_holds_for_search_and_read(vault: Path) -> None:
    async def main() -> dict:
        async with stdio(vault) as client:
            out = {"before": await client.call_tool("search", {"query": QUERY, "limit": 10})}
            (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["wiki/howto/"]}', encoding="utf-8")
            out["search"] = await bounded(client.call_tool("search", {"query": QUERY, "limit": 10}))
            out["read"] = await bounded(client.call_tool("read", {"page": DESCALING_NOTE}))
            return out

    out = anyio.run(main)
    pages = {k: [c["page_path"] for c in out[k].structuredContent["candidates"]] for k in ("before", "search")}
    assert DESCALING_NOTE in pages["before"] and not any(p.startswith("wiki/howto/") for p in pages["search"])
    code, _, err = run_main("read", "--vault", vault, DESCALING_NOTE)
    assert code == 3 and out["read"].isError is True
    assert out["read"].structuredContent == {"error": err.strip().removeprefix("vaulteval: error: "), "exit_code": 3}


def test_a_corrupted_app_json_refuses_every_tool_as_the_cli_does(vault: Path) -> None:
    async def main() -> dict:
        async with stdio(vault) as client:
            assert (await client.call_tool("status", {})).structuredContent["state"] == "verified"
            (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["wiki/howto/"', encoding="utf-8")
            before["vault"] = snapshot(vault)
            return {name: await bounded(client.call_tool(name, arguments)) for name, arguments in
                    (("status", {}), ("search", {"query": QUERY}), ("read", {"page": DESCALING_NOTE}),
                     ("read_many", {"pages": [DESCALING_NOTE]}))}

    before: dict = {}
    out = anyio.run(main)
    code, stdout, err = run_main("doctor", "--vault", vault)
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1
    line = err.strip().removeprefix("vaulteval: error: ")
    for name, result in out.items():
        assert result.isError is True and result.structuredContent == {"error": line, "exit_code": 2}, name
    assert snapshot(vault) == before["vault"]


def test_without_the_token_nothing_is_served(provisioned_sample: Path, tmp_path: Path) -> None:
    with launch_http(provisioned_sample, tmp_path / "mcp.token") as (port, token, _):
        for headers in ({}, bearer("guess"), bearer(token[:-1])):
            response = httpx.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                  headers={"Accept": "application/json, text/event-stream", **headers}, timeout=BOUND)
            assert response.status_code == 401


def test_sessions_left_open_by_one_process_do_not_keep_the_next_client_out(provisioned_sample: Path,
                                                                           tmp_path: Path) -> None:
    """The issue's case: 64 initialize requests never closed, then a client as the SDK makes one (the same
    User-Agent as the 64: httpx's)."""
    with launch_http(provisioned_sample, tmp_path / "mcp.token") as (port, token, _):
        for _ in range(64):
            open_session(port, token)

        async def client() -> list[str]:
            async with httpx.AsyncClient(headers=bearer(token), timeout=BOUND) as http, \
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write, _), \
                    ClientSession(read, write) as session:
                await bounded(session.initialize())
                result = await bounded(session.call_tool("search", {"query": QUERY, "limit": 3}))
                assert result.isError is False, result.content
                return [c["page_path"] for c in result.structuredContent["candidates"]]

        assert DESCALING_NOTE in anyio.run(client)


def test_a_lone_surrogate_is_answered_over_stdio_and_http(provisioned_sample: Path, tmp_path: Path) -> None:
    params = rb'{"name": "search", "arguments": {"query": "\ud800abc"}}'
    server = StdioLines(provisioned_sample)
    try:
        server.send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": %s}' % params.decode())
        answers = [server.answer(BOUND)]
    finally:
        server.close()
    with launch_http(provisioned_sample, tmp_path / "mcp.token") as (port, token, _):
        answers.append(rpc_result(call_raw(port, token, open_session(port, token), params, number=7)))
    for answer in answers:
        result = answer["result"]
        assert answer["id"] == 7 and result["isError"] is True
        assert result["structuredContent"]["exit_code"] == 2 and "lone surrogate" in result["content"][0]["text"]
