"""``vaulteval mcp`` in a real process, for the server tests and the reliability suite.

Usage::

    with launch_http(root, tmp / "mcp.token") as (port, token, line): ...   # --http on a free port
    server = StdioLines(root); server.send('{"jsonrpc": ...}'); server.answer(); server.close()

``StdioLines`` speaks JSON-RPC line by line, for what the SDK's own client
cannot send (a lone surrogate escape). Every wait is bounded: a server that
does not answer fails the test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from pipeline_fixtures import cli_env

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@contextlib.contextmanager
def launch_http(root: Path, token_file: Path) -> Iterator[tuple[int, str, str]]:
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
                    time.sleep(0.1)
        yield port, token_file.read_text(encoding="ascii").strip(), line
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def post(port: int, token: str, body: object = INIT, *, timeout: float = 10, **headers: str) -> httpx.Response:
    """One POST to /mcp with the token (a dict body is sent as JSON, bytes as they are)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"http://127.0.0.1:{port}/mcp", content=content,
                      headers={**HEADERS, **bearer(token), **headers}, timeout=timeout)


def open_session(port: int, token: str, agent: str | None = None) -> str:
    """Open a session (initialize) and never close it; its id."""
    response = post(port, token, **({"User-Agent": agent} if agent else {}))
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def call_raw(port: int, token: str, session: str, params: bytes, number: int = 2) -> httpx.Response:
    """tools/call with ``params`` as raw JSON text (so it may hold a lone surrogate escape)."""
    body = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}' % (number, params)
    return post(port, token, body, **{"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})


def rpc_result(response: httpx.Response) -> dict:
    """The JSON-RPC message in a response (a JSON body or one SSE event)."""
    assert response.status_code == 200, response.text
    text = response.text
    if "data:" in text:
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


class StdioLines:
    """``vaulteval mcp`` over stdio, spoken to line by line, initialized."""

    def __init__(self, root: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "vaulteval", "mcp", "--vault", str(root), "--no-rerank"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=cli_env())
        self.send(json.dumps({**INIT, "id": 0}))
        assert self.answer()["id"] == 0
        self.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode("ascii") + b"\n")
        self.proc.stdin.flush()

    def answer(self, seconds: float = 60) -> dict:
        """The next message that answers a request (log notifications are skipped); fails instead of hanging."""
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
            assert ready, "no answer from the server"
            message = json.loads(self.proc.stdout.readline())
            if "id" in message:
                return message

    def close(self) -> str:
        """Close stdin (the server ends) and return what it wrote on stderr."""
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read().decode("utf-8", "replace")
