"""Loopback stand-ins for LLM providers, and a guard that records off-machine connections.

Usage: ``with FakeServer([Reply(200, {...})]) as srv: ...; srv.url; srv.requests``
"""

from __future__ import annotations

import ipaddress
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    """Usage: ``Reply(200, {"response": "x"})``; one canned HTTP answer (body dict is sent as JSON)."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """Usage: ``with FakeServer(replies) as srv``; answers every request with the next reply (the last repeats)."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[Seen] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                owner.requests.append(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = owner.replies.pop(0) if len(owner.replies) > 1 else owner.replies[0]
                if reply.delay:
                    time.sleep(reply.delay)
                data = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                payload = data.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout tests)
                    pass

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _is_local(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip("[]").split("%")[0]
    if host.lower() in {"localhost", "localhost."}:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class EgressGuard:
    """Usage: ``with EgressGuard() as attempts: ...; assert attempts == []``

    While active, every socket connect or name lookup for a non-loopback host
    is recorded and blocked (PermissionError). Audit hooks cannot be removed,
    so one hook is installed per process and switched on and off.
    """

    _active: list[list[tuple[str, Any]]] = []
    _installed = False

    @classmethod
    def _hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if not cls._active:
            return
        if event == "socket.connect":
            address = args[1]
            host = address[0] if isinstance(address, tuple) else None  # AF_UNIX paths are local
        elif event == "socket.getaddrinfo":
            host = args[0]
        else:
            return
        if not _is_local(host):
            cls._active[-1].append((event, host))
            raise PermissionError(f"test egress guard: blocked {event} to {host!r}")

    def __enter__(self) -> list[tuple[str, Any]]:
        if not EgressGuard._installed:
            sys.addaudithook(EgressGuard._hook)
            EgressGuard._installed = True
        self.attempts: list[tuple[str, Any]] = []
        EgressGuard._active.append(self.attempts)
        return self.attempts

    def __exit__(self, *exc: object) -> None:
        EgressGuard._active.remove(self.attempts)


def fake_claude(bin_dir: Path, record: Path, *, stdout: str = "", exit_code: int = 0, sleep: float = 0) -> Path:
    """Usage: ``fake_claude(tmp_path / "bin", tmp_path / "ran")``; writes an executable ``claude`` shell script.

    When run it writes its arguments and then its stdin to ``record``, prints ``stdout``
    and exits with ``exit_code`` (after ``sleep`` seconds, via exec so a timeout kill reaches it).
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "claude"
    lines = ["#!/bin/sh", f"printf '%s\\n' \"$@\" > '{record}'", f"echo '--stdin--' >> '{record}'", f"cat >> '{record}'"]
    if stdout:
        lines.append(f"printf '%s' {_sh_quote(stdout)}")
    if sleep:
        lines.append(f"exec sleep {sleep}")
    lines.append(f"exit {exit_code}")
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
