"""Streamable HTTP for the MCP server: loopback only, a bearer token, Host and Origin checked, bounded sessions.

Usage: ``serve(build_server(warm), port=8765)`` serves ``http://127.0.0.1:8765/mcp`` until interrupted.

Every request needs ``Authorization: Bearer TOKEN``, the token made for this
launch (``vaulteval.server.token``; written to a file only the user can read),
or it is answered 401 by the SDK's bearer-auth middleware. Sessions are
admitted by ``vaulteval.server.sessions.SessionDoor``: at most
``MAX_SESSIONS_PER_CLIENT`` per client and ``MAX_SESSIONS`` in all, the oldest
idle one ended to make room, and a session idle for ``IDLE_SECONDS`` ended by
the SDK's session manager.

The listening socket is bound to 127.0.0.1 and nothing else. A request whose
``Host`` is not this address or ``localhost`` with this port is refused (421),
and one whose ``Origin`` is another site is refused (403), so a web page the
user opens cannot reach the vault through DNS rebinding. Bodies are limited to
``MAX_BODY_BYTES`` (a query is at most 8,000 characters). Every client gets its
own session; tool calls run on worker threads, so clients do not wait for
each other.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from vaulteval.server.sessions import SessionDoor
from vaulteval.server.token import LaunchToken, token_path

LOOPBACK = "127.0.0.1"
PATH = "/mcp"
MAX_BODY_BYTES = 256 * 1024
MAX_SESSIONS = 128
MAX_SESSIONS_PER_CLIENT = 64
IDLE_SECONDS = 300.0
DEFAULT_PORT = 8765


def security(port: int) -> TransportSecuritySettings:
    """The Host and Origin values a local client sends, for this port only."""
    hosts = [f"{LOOPBACK}:{port}", f"localhost:{port}"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"http://{h}" for h in hosts])


def asgi_app(server: Server, port: int, token: LaunchToken, *, max_sessions: int = MAX_SESSIONS,
             per_client: int = MAX_SESSIONS_PER_CLIENT, idle_seconds: float = IDLE_SECONDS) -> Any:
    """The Starlette app: ``/mcp`` behind the token and the session door, served by the SDK's session manager,
    which it starts and stops."""
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    # The manager's own limit is a backstop above the door's (which ends idle sessions before it is reached).
    manager = StreamableHTTPSessionManager(app=server, security_settings=security(port),
                                           max_request_body_size=MAX_BODY_BYTES, max_sessions=2 * max_sessions,
                                           session_idle_timeout=idle_seconds)
    door = SessionDoor(manager.handle_request, max_sessions=max_sessions, per_client=per_client,
                       idle_seconds=idle_seconds)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    # An ASGI app (not a function) as the endpoint, so Starlette hands it the raw request as the SDK expects.
    endpoint = RequireAuthMiddleware(door, required_scopes=[])
    return Starlette(routes=[Route(PATH, endpoint=endpoint)], lifespan=lifespan,
                     middleware=[Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(token.verifier()))])


def serve(server: Server, port: int = DEFAULT_PORT, token_file: str | None = None) -> None:
    """Listen on 127.0.0.1:``port`` until interrupted (port 0: the system picks one, printed on stderr), with a
    new token written to ``token_file`` (default: ``token_path``) and removed again when the server stops."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, port))
    port = sock.getsockname()[1]
    token = LaunchToken.new()
    path = token.write(token_path(token_file, port))
    _remove_on_sigterm(token, path)
    try:
        config = uvicorn.Config(asgi_app(server, port, token), log_level="warning", lifespan="on",
                                access_log=False)
        sys.stderr.write(f"vaulteval: mcp: serving http://{LOOPBACK}:{port}{PATH} (loopback only; send "
                         f"'Authorization: Bearer TOKEN' with the token in {path})\n")
        sys.stderr.flush()
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        token.remove(path)


def _remove_on_sigterm(token: LaunchToken, path: Any) -> None:
    """Remove the token file on SIGTERM too. uvicorn stops on SIGTERM and then raises it again with the handler
    that was there before it started: this one removes the file, then lets the signal end the process as before."""
    import signal

    def stop(signum: int, _frame: Any) -> None:
        token.remove(path)
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    try:
        signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: the ``finally`` of ``serve`` still removes it on a normal stop
        pass
