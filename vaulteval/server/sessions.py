"""Session rules for the HTTP server: a cap per client and in all, and the oldest idle session makes room.

Usage::

    door = SessionDoor(manager.handle_request, max_sessions=64, per_client=32, idle_seconds=300)
    await door(scope, receive, send)          # an ASGI app in front of the SDK's session manager

The SDK's ``StreamableHTTPSessionManager`` opens a session for each
``initialize`` and keeps it until the client ends it (DELETE) or it has been
idle for ``session_idle_timeout``; at its limit it refuses new ones (503), so
clients that never close their sessions could lock every other client out.
This door sees every request, learns each new session's id from the response
that opens it, and keeps, per session, its client (the ``User-Agent`` header),
when it last had a request, and how many of its POSTs are being served.

A session is idle while none of its POSTs is being served (an open GET
stream carries nothing from this server, so it does not count). When a new
session would go over the client's cap, that client's oldest idle session is
ended; over the cap in all, the oldest idle session of any client. Ending one
is the protocol's own DELETE, sent to the session manager as if its client
had sent it; the client's next request is answered 404, and MCP clients then
open a new session. Only when no session that could be ended is idle is a new
one refused with 503, and that ends as soon as a request completes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

SESSION_HEADER = b"mcp-session-id"
MAX_CLIENT_CHARS = 200
ASGI = Callable[[Any, Any, Any], Awaitable[None]]


@dataclass
class _Session:
    client: str
    scope: dict[str, Any]  # the request that opened it: the credential and Host to end it with
    last: float
    posts: int = 0


@dataclass
class SessionDoor:
    """An ASGI app that admits new sessions by the rules above, then hands every request to ``app``."""

    app: ASGI
    max_sessions: int
    per_client: int
    idle_seconds: float
    clock: Callable[[], float] = time.monotonic
    sessions: dict[str, _Session] = field(default_factory=dict)
    _opening: dict[str, int] = field(default_factory=dict)
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        session_id = _header(scope, SESSION_HEADER)
        if session_id is None and scope.get("method") == "POST":
            await self._open(scope, receive, send)
            return
        session = self.sessions.get(session_id or "")
        if session is None:
            await self.app(scope, receive, send)  # the SDK answers: 404 for an unknown session, 400 and so on
            return
        counted = scope.get("method") == "POST"
        status: list[int] = []

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        session.posts += counted
        try:
            await self.app(scope, receive, watch)
        finally:
            session.posts -= counted
            session.last = self.clock()
            if scope.get("method") == "DELETE" or status == [404]:  # ended by its client, or by the manager
                self.sessions.pop(session_id, None)

    async def _open(self, scope: Any, receive: Any, send: Any) -> None:
        client = (_header(scope, b"user-agent") or "")[:MAX_CLIENT_CHARS]
        async with self._lock:
            victim, refusal = self._make_room(client)
            self._opening[client] = self._opening.get(client, 0) + 1
        if refusal:
            self._opening[client] -= 1
            await _refuse(refusal, scope, receive, send)
            return
        if victim is not None:
            await self._end(*victim)
        opened: list[str] = []

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for name, value in message.get("headers", ()):
                    if name.lower() == SESSION_HEADER:
                        opened.append(value.decode("latin-1"))
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self._opening[client] -= 1
            if opened:
                self.sessions[opened[0]] = _Session(client, dict(scope), self.clock())

    def _make_room(self, client: str) -> tuple[tuple[str, _Session] | None, str | None]:
        """(the session to end for a new one of ``client``, or None; a refusal, or None)."""
        now = self.clock()
        for sid, s in list(self.sessions.items()):
            if not s.posts and now - s.last >= self.idle_seconds:
                del self.sessions[sid]  # the session manager ends it at its idle timeout
        mine = [item for item in self.sessions.items() if item[1].client == client]
        if len(mine) + self._opening.get(client, 0) >= self.per_client:
            pool, why = mine, f"this client ({client or 'no User-Agent'}) has {self.per_client} sessions open"
        elif len(self.sessions) + sum(self._opening.values()) >= self.max_sessions:
            pool, why = list(self.sessions.items()), f"{self.max_sessions} sessions are open"
        else:
            return None, None
        idle = [item for item in pool if not item[1].posts]
        if not idle:
            return None, f"Too many open sessions: {why}, each serving a request; try again when one is answered"
        sid, session = min(idle, key=lambda item: item[1].last)
        del self.sessions[sid]
        return (sid, session), None

    async def _end(self, session_id: str, session: _Session) -> None:
        """End a session as its client would: DELETE with its id, the credential and Host it was opened with."""
        headers = [(k, v) for k, v in session.scope.get("headers", ()) if k.lower() in (b"host", b"authorization")]
        scope = {**session.scope, "method": "DELETE", "headers": [*headers, (SESSION_HEADER, session_id.encode())],
                 "query_string": b""}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: dict[str, Any]) -> None:
            return None

        await self.app(scope, receive, discard)


def _header(scope: Any, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _refuse(message: str, scope: Any, receive: Any, send: Any) -> None:
    """503 with a JSON-RPC error body, as the SDK refuses a session over its own limit."""
    from mcp.types import INTERNAL_ERROR, ErrorData, JSONRPCError
    from starlette.responses import Response

    body = JSONRPCError(jsonrpc="2.0", id="server-error", error=ErrorData(code=INTERNAL_ERROR, message=message))
    await Response(body.model_dump_json(by_alias=True, exclude_none=True), status_code=503,
                   media_type="application/json")(scope, receive, send)
