"""Streamable HTTP for the MCP server: loopback only, Host and Origin checked, request bodies bounded.

Usage: ``serve(build_server(warm), port=8765)`` serves ``http://127.0.0.1:8765/mcp`` until interrupted.

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

LOOPBACK = "127.0.0.1"
PATH = "/mcp"
MAX_BODY_BYTES = 256 * 1024
MAX_SESSIONS = 64
DEFAULT_PORT = 8765


def security(port: int) -> TransportSecuritySettings:
    """The Host and Origin values a local client sends, for this port only."""
    hosts = [f"{LOOPBACK}:{port}", f"localhost:{port}"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"http://{h}" for h in hosts])


def asgi_app(server: Server, port: int) -> Any:
    """The Starlette app: ``/mcp`` served by the SDK's session manager, which it starts and stops."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    manager = StreamableHTTPSessionManager(app=server, security_settings=security(port),
                                           max_request_body_size=MAX_BODY_BYTES, max_sessions=MAX_SESSIONS)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route(PATH, endpoint=_Endpoint(manager))], lifespan=lifespan)


class _Endpoint:
    """An ASGI app (not a function), so Starlette hands it the raw request as the SDK expects."""

    def __init__(self, manager: StreamableHTTPSessionManager):
        self.manager = manager

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)


def serve(server: Server, port: int = DEFAULT_PORT) -> None:
    """Listen on 127.0.0.1:``port`` until interrupted (port 0: the system picks one, printed on stderr)."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(asgi_app(server, port), log_level="warning", lifespan="on", access_log=False)
    sys.stderr.write(f"vaulteval: mcp: serving http://{LOOPBACK}:{port}{PATH} (loopback only)\n")
    sys.stderr.flush()
    uvicorn.Server(config).run(sockets=[sock])
