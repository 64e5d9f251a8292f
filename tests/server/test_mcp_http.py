"""``vaulteval mcp --http``: Streamable HTTP on 127.0.0.1, Host/Origin checks, bounded bodies, 4 clients at once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from pipeline_fixtures import DESCALING_NOTE, cli_env

pytest.importorskip("mcp")
import httpx  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server(provisioned_sample: Path) -> Iterator[int]:
    """A server on a free loopback port; yields the port."""
    proc = subprocess.Popen([sys.executable, "-m", "vaulteval", "mcp", "--vault", str(provisioned_sample),
                             "--no-rerank", "--http", "--port", "0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=cli_env())
    try:
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert match, f"no address on stderr: {line!r}"
        port = int(match.group(1))
        with httpx.Client(timeout=10) as client:  # uvicorn accepts once its startup is done
            for _ in range(100):
                try:
                    client.get(f"http://127.0.0.1:{port}/nothing-here")
                    break
                except httpx.TransportError:
                    import time

                    time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _post(port: int, **headers: str) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json=INIT, headers={**HEADERS, **headers}, timeout=10)


def test_host_and_origin_are_checked(server: int) -> None:
    assert _post(server).status_code == 200
    assert _post(server, Origin=f"http://localhost:{server}").status_code == 200
    assert _post(server, Host=f"evil.example:{server}").status_code == 421  # DNS rebinding
    assert _post(server, Host="127.0.0.1:1").status_code == 421  # another port's name
    assert _post(server, Origin="http://evil.example").status_code == 403  # a web page's request


def test_a_body_over_the_limit_is_refused(server: int) -> None:
    big = {**INIT, "params": {**INIT["params"], "padding": "x" * (300 * 1024)}}
    response = httpx.post(f"http://127.0.0.1:{server}/mcp", content=json.dumps(big), headers=HEADERS, timeout=10)
    assert response.status_code == 413


def test_it_listens_on_loopback_only(server: int) -> None:
    """The kernel's table of listening sockets: this port is bound to 127.0.0.1 and to nothing else."""
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].is_file():
        pytest.skip("no /proc/net/tcp on this system")
    bound = []
    for table in tables:
        if table.is_file():
            for row in table.read_text().splitlines()[1:]:
                local, state = row.split()[1], row.split()[3]
                address, port = local.rsplit(":", 1)
                if state == "0A" and int(port, 16) == server:  # 0A: LISTEN
                    bound.append(address)
    assert bound == ["0100007F"]  # 127.0.0.1, little-endian


def test_four_clients_at_once_each_get_their_own_answers(server: int) -> None:
    queries = ["descale the espresso machine", "reset the router", "pu-erh tea brewing", "home server build"]
    answers: dict[str, list] = {}

    async def one(query: str) -> None:
        async with streamable_http_client(f"http://127.0.0.1:{server}/mcp") as (read, write, _), \
                ClientSession(read, write) as client:
            await client.initialize()
            assert {t.name for t in (await client.list_tools()).tools} >= {"search", "read"}
            results = []
            for _ in range(3):
                result = await client.call_tool("search", {"query": query, "limit": 3})
                assert result.isError is False, result.content
                results.append(result.structuredContent)
            answers[query] = results

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for query in queries:
                group.start_soon(one, query)

    anyio.run(main)
    assert set(answers) == set(queries)
    for query, results in answers.items():
        assert all(r["query"] == query for r in results)
        assert results[0] == results[1] == results[2]  # idempotent
    assert DESCALING_NOTE in [c["page_path"] for c in answers[queries[0]][0]["candidates"]]
