"""``vaulteval mcp --http``: Streamable HTTP on 127.0.0.1, a bearer token, Host/Origin checks, bounded bodies and
sessions, 4 clients at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from pipeline_fixtures import DESCALING_NOTE

pytest.importorskip("mcp")
import httpx  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from mcp_servers import HEADERS, INIT, bearer, call_raw, launch_http, open_session, post, rpc_result  # noqa: E402


@pytest.fixture(scope="module")
def launched(provisioned_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    with launch_http(provisioned_sample, tmp_path_factory.mktemp("token") / "mcp.token") as (port, token, _):
        yield port, token


@pytest.fixture(scope="module")
def server(launched: tuple[int, str]) -> int:
    return launched[0]


@pytest.fixture(scope="module")
def token(launched: tuple[int, str]) -> str:
    return launched[1]


def test_host_and_origin_are_checked(server: int, token: str) -> None:
    assert post(server, token).status_code == 200
    assert post(server, token, Origin=f"http://localhost:{server}").status_code == 200
    assert post(server, token, Host=f"evil.example:{server}").status_code == 421  # DNS rebinding
    assert post(server, token, Host="127.0.0.1:1").status_code == 421  # another port's name
    assert post(server, token, Origin="http://evil.example").status_code == 403  # a web page's request


def test_a_body_over_the_limit_is_refused(server: int, token: str) -> None:
    big = {**INIT, "params": {**INIT["params"], "padding": "x" * (300 * 1024)}}
    assert post(server, token, big).status_code == 413


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
    with launch_http(provisioned_sample, path) as (port, second, line):
        assert second != token and len(second) >= 43
        assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"
        assert str(path) in line and second not in line  # the line names the file, never the token
        assert post(port, token).status_code == 401  # another launch's token
        assert post(port, second).status_code == 200
    assert not path.exists()  # removed when the server stopped


def test_sessions_left_open_cannot_lock_other_clients_out(server: int, token: str) -> None:
    """The issue's case: initialize after initialize, never closed. Each client keeps at most 64 sessions (its
    oldest idle one ends), 128 in all (the oldest idle of any client ends): a new client is always served."""
    from vaulteval.server.http import MAX_SESSIONS, MAX_SESSIONS_PER_CLIENT

    hog = [open_session(server, token, "hog") for _ in range(MAX_SESSIONS_PER_CLIENT + 6)]
    search = b'{"name": "search", "arguments": {"query": "descale the espresso machine", "limit": 1}}'
    assert call_raw(server, token, hog[0], search).status_code == 404  # ended to make room for the hog's own
    assert rpc_result(call_raw(server, token, hog[-1], search))["result"]["isError"] is False
    # Past the cap in all: the oldest idle sessions make room, here every hog's but the one used last.
    other = [open_session(server, token, f"other-{i}") for i in range(MAX_SESSIONS - 1)]
    assert rpc_result(call_raw(server, token, other[-1], search))["result"]["isError"] is False
    assert call_raw(server, token, hog[-2], search).status_code == 404
    assert rpc_result(call_raw(server, token, hog[-1], search, 3))["result"]["isError"] is False


def test_a_lone_surrogate_over_http_gets_a_one_line_tool_error(server: int, token: str) -> None:
    session = open_session(server, token)
    for params in (rb'{"name": "search", "arguments": {"query": "\ud800abc"}}',
                   rb'{"name": "read_many", "arguments": {"pages": ["[[Descaling]]", "\udfff"]}}'):
        result = rpc_result(call_raw(server, token, session, params))["result"]
        message = result["content"][0]["text"]
        assert result["isError"] is True and result["structuredContent"] == {"error": message, "exit_code": 2}
        assert "lone surrogate" in message and "\n" not in message
