"""``vaulteval mcp --http``: Streamable HTTP on 127.0.0.1, a bearer token, Host/Origin checks, bounded bodies and
sessions, 4 clients at once."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@contextlib.contextmanager
def launch(root: Path, token_file: Path) -> Iterator[tuple[int, str, str]]:
    """A server on a free loopback port: (port, its token, its line on stderr); stopped on leaving."""
    proc = subprocess.Popen([sys.executable, "-m", "vaulteval", "mcp", "--vault", str(root), "--no-rerank", "--http",
                             "--port", "0", "--token-file", str(token_file)],
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
        yield port, token_file.read_text(encoding="ascii").strip(), line
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def launched(provisioned_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    with launch(provisioned_sample, tmp_path_factory.mktemp("token") / "mcp.token") as (port, token, _):
        yield port, token


@pytest.fixture(scope="module")
def server(launched: tuple[int, str]) -> int:
    return launched[0]


@pytest.fixture(scope="module")
def token(launched: tuple[int, str]) -> str:
    return launched[1]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _post(port: int, token: str, body: Any = INIT, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"http://127.0.0.1:{port}/mcp", content=content,
                      headers={**HEADERS, **bearer(token), **headers}, timeout=10)


def test_host_and_origin_are_checked(server: int, token: str) -> None:
    assert _post(server, token).status_code == 200
    assert _post(server, token, Origin=f"http://localhost:{server}").status_code == 200
    assert _post(server, token, Host=f"evil.example:{server}").status_code == 421  # DNS rebinding
    assert _post(server, token, Host="127.0.0.1:1").status_code == 421  # another port's name
    assert _post(server, token, Origin="http://evil.example").status_code == 403  # a web page's request


def test_a_body_over_the_limit_is_refused(server: int, token: str) -> None:
    big = {**INIT, "params": {**INIT["params"], "padding": "x" * (300 * 1024)}}
    assert _post(server, token, big).status_code == 413


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


def test_four_clients_at_once_each_get_their_own_answers(server: int, token: str) -> None:
    queries = ["descale the espresso machine", "reset the router", "pu-erh tea brewing", "home server build"]
    answers: dict[str, list] = {}

    async def one(query: str) -> None:
        async with httpx.AsyncClient(headers=bearer(token), timeout=httpx.Timeout(30, read=300)) as http, \
                streamable_http_client(f"http://127.0.0.1:{server}/mcp", http_client=http) as (read, write, _), \
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


def _session(port: int, token: str, agent: str = "test") -> str:
    """Open a session (initialize) and never close it; its id."""
    response = _post(port, token, **{"User-Agent": agent})
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def _call(port: int, token: str, session: str, params: bytes, number: int = 2) -> httpx.Response:
    body = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}' % (number, params)
    return _post(port, token, body, **{"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})


def _result(response: httpx.Response) -> dict:
    """The JSON-RPC result in a response (a JSON body or one SSE event)."""
    assert response.status_code == 200, response.text
    text = response.text
    if "data:" in text:
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


@pytest.mark.parametrize("authorization", [None, "Bearer", "Bearer nope", "Basic dXNlcjpwYXNz", "TOKEN", "Bearer TOKENx",
                                           "Bearer  TOKEN"])
def test_a_request_without_this_launchs_token_gets_401(server: int, token: str, authorization: str | None) -> None:
    headers = {**HEADERS}
    if authorization is not None:
        headers["Authorization"] = authorization.replace("TOKEN", token)
    url = f"http://127.0.0.1:{server}/mcp"
    for method in ("POST", "GET", "DELETE"):
        response = httpx.request(method, url, content=json.dumps(INIT), headers=headers, timeout=10)
        assert response.status_code == 401, (method, response.status_code)
        assert response.headers["www-authenticate"].startswith("Bearer ")
        assert "mcp-session-id" not in response.headers


def test_the_token_is_new_at_each_launch_and_only_the_user_can_read_it(provisioned_sample: Path, tmp_path: Path,
                                                                       token: str) -> None:
    path = tmp_path / "private" / "mcp.token"
    with launch(provisioned_sample, path) as (port, second, line):
        assert second != token and len(second) >= 43
        assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"
        assert str(path) in line and second not in line  # the line names the file, never the token
        assert _post(port, token).status_code == 401  # another launch's token
        assert _post(port, second).status_code == 200
    assert not path.exists()  # removed when the server stopped


def test_sessions_left_open_cannot_lock_other_clients_out(server: int, token: str) -> None:
    """The issue's case: initialize after initialize, never closed. Each client keeps at most 64 sessions (its
    oldest idle one ends), 128 in all (the oldest idle of any client ends): a new client is always served."""
    from vaulteval.server.http import MAX_SESSIONS, MAX_SESSIONS_PER_CLIENT

    hog = [_session(server, token, "hog") for _ in range(MAX_SESSIONS_PER_CLIENT + 6)]
    search = b'{"name": "search", "arguments": {"query": "descale the espresso machine", "limit": 1}}'
    assert _call(server, token, hog[0], search).status_code == 404  # ended to make room for the hog's own
    assert _result(_call(server, token, hog[-1], search))["result"]["isError"] is False
    # Past the cap in all: the oldest idle sessions make room, here every hog's but the one used last.
    other = [_session(server, token, f"other-{i}") for i in range(MAX_SESSIONS - 1)]
    assert _result(_call(server, token, other[-1], search))["result"]["isError"] is False
    assert _call(server, token, hog[-2], search).status_code == 404
    assert _result(_call(server, token, hog[-1], search, 3))["result"]["isError"] is False


def test_a_lone_surrogate_over_http_gets_a_one_line_tool_error(server: int, token: str) -> None:
    session = _session(server, token)
    for params in (rb'{"name": "search", "arguments": {"query": "\ud800abc"}}',
                   rb'{"name": "read_many", "arguments": {"pages": ["[[Descaling]]", "\udfff"]}}'):
        result = _result(_call(server, token, session, params))["result"]
        message = result["content"][0]["text"]
        assert result["isError"] is True and result["structuredContent"] == {"error": message, "exit_code": 2}
        assert "lone surrogate" in message and "\n" not in message
