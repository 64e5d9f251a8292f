"""The HTTP server's session door (``vaulteval.server.sessions``), against a stand-in for the SDK's manager.

The stand-in opens a session for each POST without a session id (answering with a new ``mcp-session-id``),
records every request it is handed, and can hold a request open until the test lets it go, so the door's
choices (which session ends, when a new one is refused) are checked one by one. The real server is checked
in test_mcp_http.py.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
from vaulteval.server.sessions import SessionDoor  # noqa: E402


class Manager:
    def __init__(self) -> None:
        self.opened = 0
        self.seen: list[tuple[str, str | None, dict]] = []
        self.hold: anyio.Event | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        sid = headers.get(b"mcp-session-id")
        self.seen.append((scope["method"], sid.decode() if sid else None, headers))
        if self.hold is not None and scope["method"] == "POST" and sid:
            await self.hold.wait()
        out = []
        if sid is None:
            self.opened += 1
            out = [(b"mcp-session-id", f"s{self.opened}".encode())]
        await send({"type": "http.response.start", "status": 200, "headers": out})
        await send({"type": "http.response.body", "body": b"{}"})


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def request(method: str, agent: str = "a", session: str | None = None) -> dict:
    headers = [(b"host", b"127.0.0.1:1"), (b"authorization", b"Bearer t"), (b"user-agent", agent.encode())]
    if session:
        headers.append((b"mcp-session-id", session.encode()))
    return {"type": "http", "method": method, "path": "/mcp", "headers": headers, "query_string": b"",
            "user": "the credential"}


async def ask(door: SessionDoor, method: str, agent: str = "a", session: str | None = None) -> tuple[int, dict]:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await door(request(method, agent, session), receive, send)
    start = sent[0]
    return start["status"], dict(start.get("headers", ()))


def opened(headers: dict) -> str:
    return headers[b"mcp-session-id"].decode()


def make(**limits: Any) -> tuple[SessionDoor, Manager, Clock]:
    manager, clock = Manager(), Clock()
    settings = {"max_sessions": 4, "per_client": 2, "idle_seconds": 100.0, **limits}
    return SessionDoor(manager, clock=clock, **settings), manager, clock


def test_a_client_over_its_cap_ends_its_own_oldest_idle_session() -> None:
    async def main() -> None:
        door, manager, clock = make()
        first = opened((await ask(door, "POST"))[1])
        clock.now = 1
        second = opened((await ask(door, "POST"))[1])
        clock.now = 2
        await ask(door, "POST", session=first)  # used again: now the newer of the two
        other = opened((await ask(door, "POST", agent="b"))[1])
        clock.now = 3
        third = opened((await ask(door, "POST"))[1])
        assert manager.seen[-2][:2] == ("DELETE", second)  # the client's own oldest idle one, not b's
        ended = manager.seen[-2][2]
        assert ended[b"host"] == b"127.0.0.1:1" and ended[b"authorization"] == b"Bearer t"
        assert set(door.sessions) == {first, other, third}

    anyio.run(main)


def test_over_the_cap_in_all_the_oldest_idle_session_of_any_client_ends() -> None:
    async def main() -> None:
        door, manager, clock = make(per_client=4)
        ids = []
        for i, agent in enumerate("abcd"):
            clock.now = i
            ids.append(opened((await ask(door, "POST", agent=agent))[1]))
        status, headers = await ask(door, "POST", agent="e")
        assert status == 200 and ("DELETE", ids[0]) == manager.seen[-2][:2]
        assert set(door.sessions) == set(ids[1:]) | {opened(headers)}

    anyio.run(main)


def test_only_when_every_session_that_could_end_is_busy_is_a_new_one_refused() -> None:
    async def main() -> None:
        door, manager, clock = make(max_sessions=2, per_client=2)
        ids = [opened((await ask(door, "POST"))[1]) for _ in range(2)]
        manager.hold = anyio.Event()
        async with anyio.create_task_group() as group:
            for sid in ids:
                group.start_soon(ask, door, "POST", "a", sid)
            await anyio.wait_all_tasks_blocked()
            status, _ = await ask(door, "POST", agent="b")
            assert status == 503
            manager.hold.set()
        assert (await ask(door, "POST", agent="b"))[0] == 200  # a request answered: its session is idle again
        assert [m for m, *_ in manager.seen].count("DELETE") == 1

    anyio.run(main)


def test_a_session_idle_past_the_timeout_is_forgotten_and_one_ended_by_its_client_too() -> None:
    async def main() -> None:
        door, manager, clock = make()
        old = opened((await ask(door, "POST"))[1])
        clock.now = 50
        mine = opened((await ask(door, "POST"))[1])
        await ask(door, "DELETE", session=mine)
        assert set(door.sessions) == {old}
        clock.now = 150  # the manager has ended it at its idle timeout: nothing to send it
        opened((await ask(door, "POST"))[1])
        assert old not in door.sessions and [m for m, *_ in manager.seen].count("DELETE") == 1

    anyio.run(main)


def test_the_refusal_is_one_json_rpc_error() -> None:
    async def main() -> None:
        door, manager, _ = make(max_sessions=1, per_client=1)
        sid = opened((await ask(door, "POST"))[1])
        manager.hold = anyio.Event()
        body: list[bytes] = []

        async def send(message: dict) -> None:
            body.append(message.get("body", b""))

        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async with anyio.create_task_group() as group:
            group.start_soon(ask, door, "POST", "a", sid)
            await anyio.wait_all_tasks_blocked()
            await door(request("POST"), receive, send)
            manager.hold.set()
        error = json.loads(b"".join(body))["error"]
        assert error["message"].startswith("Too many open sessions") and "\n" not in error["message"]

    anyio.run(main)
