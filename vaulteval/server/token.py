"""The HTTP server's bearer token: a new one at each launch, in a file only the user can read.

Usage::

    token = LaunchToken.new()
    path = token.write(token_path(None, port))      # ~/.cache/vaulteval or $XDG_RUNTIME_DIR/vaulteval, 0600
    verifier = token.verifier()                     # for the mcp SDK's BearerAuthBackend
    token.remove(path)                              # when the server stops

The token is 32 random bytes from ``secrets`` (43 URL-safe characters). It
is written to a new file created with mode 0600 in a folder of the user's
(created with mode 0700) and renamed over the old one, never written through a
symlink. A request's token is compared with ``hmac.compare_digest``.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from vaulteval.errors import UsageError

CLIENT_ID = "vaulteval-local"


def token_path(explicit: str | None, port: int) -> Path:
    """``--token-file`` when given, else ``mcp-PORT.token`` in ``$XDG_RUNTIME_DIR/vaulteval`` (a folder only the
    user can enter, by the XDG spec) or ``~/.cache/vaulteval``."""
    if explicit:
        from vaulteval.vault.paths import home_path

        return home_path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        base = Path(runtime)
    else:
        try:
            base = Path.home() / ".cache"
        except RuntimeError:
            raise UsageError("no home folder to keep the MCP token in; pass --token-file FILE") from None
    return base / "vaulteval" / f"mcp-{port}.token"


def _own_folder(folder: Path) -> None:
    """Create ``folder`` (0700) when missing; refuse one that is a symlink, another user's, or writable by others."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError as exc:
        raise UsageError(f"cannot create the folder for the MCP token {folder}: {exc.strerror}; "
                         "pass --token-file FILE") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise UsageError(f"{folder} is not a folder of yours that only you can write to, so the MCP token is not "
                         "written there; pass --token-file FILE in a folder of your own")


class LaunchToken:
    """The token of one launch."""

    def __init__(self, value: str):
        self.value = value
        self._bytes = value.encode("ascii")

    @classmethod
    def new(cls) -> "LaunchToken":
        return cls(secrets.token_urlsafe(32))

    def matches(self, presented: str) -> bool:
        # Starlette decodes header bytes as latin-1, so this encoding never fails and keeps every byte.
        return hmac.compare_digest(presented.encode("latin-1", "replace"), self._bytes)

    def verifier(self) -> "_Verifier":
        return _Verifier(self)

    def write(self, path: Path) -> Path:
        """Write the token to ``path`` (mode 0600, atomically); UsageError (exit 2) when it cannot be."""
        path = Path(path)
        _own_folder(path.parent)
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         0o600)
            try:
                os.write(fd, self._bytes + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)  # replaces a symlink at ``path`` instead of writing through it
        except OSError as exc:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise UsageError(f"cannot write the MCP token to {path}: {exc.strerror}; pass --token-file FILE") \
                from None
        return path

    def remove(self, path: Path) -> None:
        """Remove the token file when it still holds this launch's token (another server may have replaced it)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            try:
                mine = hmac.compare_digest(os.read(fd, len(self._bytes) + 2).strip(), self._bytes)
            finally:
                os.close(fd)
            if mine:
                os.unlink(path)
        except OSError:
            pass


class _Verifier:
    """The SDK's ``TokenVerifier``: this launch's token, or nothing."""

    def __init__(self, token: LaunchToken):
        self.token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if not self.token.matches(token):
            return None
        return AccessToken(token="", client_id=CLIENT_ID, scopes=[])
