"""claude-obsidian's vault mutation lock, taken by vaulteval before it writes a vault.

Usage::

    with shared_lock(vault.root, wait=10.0) as held:     # VaultBusy (exit 11) when still held after `wait`
        with held.meta.sub("vaulteval", create=True) as own: ...

claude-obsidian serialises its writers with two locks, and so does vaulteval
whenever it writes derived state inside a vault:

1. ``flock(LOCK_EX | LOCK_NB)`` on a descriptor of the vault root folder,
   retried until the wait runs out;
2. then ``mkdir .vault-meta/mutation.lock`` (a folder holding ``owner.json``:
   pid, host, start time, a random token), removed again on release.

A lock folder left by a writer that died (same host, its pid gone or reused
since the lock was taken) is removed so the vault does not stay locked. A live
owner's lock, an owner on another host and a folder without a readable owner
record are never removed: the caller waits, then fails closed. Release removes
the folder only when it is still the one this process made, with its token.

Everything below the vault root is reached through the root descriptor pinned
here, never through the path again; ``HeldLock.check_root`` (every change made
through the opened folders calls it first) stops a run whose vault folder or
``.vault-meta`` was moved, replaced or swapped for a symlink meanwhile.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from vaulteval.errors import UnsafeMetaPath, UsageError, VaultBusy, VaultReplaced
from vaulteval.vault.metadir import META_NAME, MetaDir, open_dir

LOCK_DIR = "mutation.lock"
OWNER_FILE = "owner.json"
OWNER_SCHEMA = "claude-obsidian.mutation-lock.v1"  # the fields claude-obsidian reads to judge a stale lock
MAX_OWNER_BYTES = 64 * 1024
POLL_SECONDS = 0.05
REUSE_MARGIN_SECONDS = 60.0
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class HeldLock:
    """The locks while held: the pinned vault root and its ``.vault-meta`` folder (a MetaDir)."""

    def __init__(self, root: Path, root_fd: int, meta: MetaDir):
        self.root, self.root_fd, self.meta = root, root_fd, meta

    def check_root(self) -> None:
        """Raise VaultReplaced unless the vault's path still names the pinned root folder and ``.vault-meta``
        in it is still the pinned folder (not moved, replaced, or swapped for a symlink)."""
        if not (same_object(str(self.root), None, self.root_fd, follow=True)
                and same_object(META_NAME, self.root_fd, self.meta.fd)):
            raise replaced(self.root)


def replaced(root: Path) -> VaultReplaced:
    return VaultReplaced(f"the vault folder {root} or its {META_NAME} was moved, replaced or swapped for a symlink "
                         "while vaulteval was writing; it stopped before its next change and wrote nothing through "
                         "the new path (run provision again)")


def same_object(name: str, dir_fd: int | None, fd: int, *, follow: bool = False) -> bool:
    """True when ``name`` (relative to ``dir_fd``) is still the very folder opened as ``fd``."""
    try:
        entry = os.stat(name, dir_fd=dir_fd, follow_symlinks=follow)
        pinned = os.fstat(fd)
    except OSError:
        return False
    return stat.S_ISDIR(entry.st_mode) and (entry.st_dev, entry.st_ino) == (pinned.st_dev, pinned.st_ino)


def lock_wait() -> float:
    """Seconds a writer waits for the other tool's lock: ``VAULTEVAL_LOCK_WAIT`` (default 10, 0 = fail at once)."""
    raw = os.environ.get("VAULTEVAL_LOCK_WAIT", "").strip()
    if not raw:
        return 10.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 3600.0:  # also refuses nan and inf
        raise UsageError(f"VAULTEVAL_LOCK_WAIT must be a number of seconds from 0 to 3600, got {raw!r}")
    return value


def _busy(root: Path, holder: str) -> VaultBusy:
    return VaultBusy(f"{holder} is writing the vault {root} (claude-obsidian's lock, {META_NAME}/{LOCK_DIR}); "
                     "wait for it to finish and retry (nothing was changed)")


def _flock_root(root_fd: int, root: Path, deadline: float) -> None:
    while True:
        try:
            fcntl.flock(root_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
        if time.monotonic() >= deadline:
            raise _busy(root, "another writer (claude-obsidian or vaulteval)")
        time.sleep(POLL_SECONDS)


def read_owner(lock_fd: int) -> dict | None:
    """The owner record of a lock folder, or None when it is missing, not a small regular file, or not JSON."""
    try:
        fd = os.open(OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                     dir_fd=lock_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_OWNER_BYTES:
            return None
        value = json.loads(os.read(fd, MAX_OWNER_BYTES + 1))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return value if isinstance(value, dict) else None


def _process_start(pid: int) -> float | None:
    """When ``pid`` started (epoch seconds), from /proc; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as fh:
            boot = next(float(line.split()[1]) for line in fh if line.startswith(b"btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _process_state(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def owner_is_dead(owner: dict | None) -> bool:
    """True only when the record proves its writer is gone: same host, and the pid is not running
    (or is a zombie, or started after the lock was taken, so the pid was reused)."""
    if owner is None:
        return False
    pid, host, started = owner.get("pid"), owner.get("host"), owner.get("started_epoch")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # EPERM: a live process of another user
    if _process_state(pid) == b"Z":
        return True
    begun = _process_start(pid)
    # A generous margin: /proc start times follow wall-clock steps, and a reused pid starts much later.
    return (isinstance(started, (int, float)) and not isinstance(started, bool) and begun is not None
            and begun > float(started) + REUSE_MARGIN_SECONDS)


def _remove_lock_dir(parent_fd: int, name: str, lock_fd: int) -> bool:
    """Remove the pinned lock folder ``name`` (owner record, then the folder); False when it was replaced."""
    if not same_object(name, parent_fd, lock_fd):
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(OWNER_FILE, dir_fd=lock_fd)
    if not same_object(name, parent_fd, lock_fd):
        return False
    try:
        os.rmdir(name, dir_fd=parent_fd)
    except OSError:
        return False  # something else inside: left for a person to look at
    return True


def _reap_if_dead(parent_fd: int) -> tuple[bool, dict | None]:
    """(True when a dead writer's lock folder was removed, the owner record seen)."""
    try:
        lock_fd = os.open(LOCK_DIR, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return True, None  # released meanwhile: try again at once
    except OSError:
        return False, None  # a symlink or file at the lock's name: never removed, never followed
    try:
        owner = read_owner(lock_fd)
        if not owner_is_dead(owner):
            return False, owner
        # Renamed aside first, so a writer that takes the lock meanwhile never loses its folder.
        aside = f"{LOCK_DIR}.reaping-{os.getpid()}-{secrets.token_hex(8)}"
        if not same_object(LOCK_DIR, parent_fd, lock_fd):
            return False, owner
        os.rename(LOCK_DIR, aside, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        _remove_lock_dir(parent_fd, aside, lock_fd)
        return True, owner
    finally:
        os.close(lock_fd)


def _write_owner(lock_fd: int, owner: dict) -> None:
    tmp = f".{OWNER_FILE}.tmp-{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                 dir_fd=lock_fd)
    try:
        try:
            os.write(fd, json.dumps(owner, sort_keys=True).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, OWNER_FILE, src_dir_fd=lock_fd, dst_dir_fd=lock_fd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=lock_fd)


def _make_lock_dir(parent_fd: int, root: Path, deadline: float) -> tuple[int, str]:
    """Create ``mutation.lock`` with this process's owner record; (its pinned descriptor, the token)."""
    while True:
        try:
            os.mkdir(LOCK_DIR, 0o700, dir_fd=parent_fd)
            break
        except FileExistsError:
            reaped, owner = _reap_if_dead(parent_fd)
            if reaped:
                continue
        if time.monotonic() >= deadline:
            pid = owner.get("pid") if owner else None
            raise _busy(root, f"another writer (pid {pid})" if isinstance(pid, int) else "another writer")
        time.sleep(POLL_SECONDS)
    lock_fd = os.open(LOCK_DIR, _DIR_FLAGS, dir_fd=parent_fd)
    token = secrets.token_hex(16)
    owner = {"schema": OWNER_SCHEMA, "tool": "vaulteval", "pid": os.getpid(), "token": token,
             "host": socket.gethostname(), "started_epoch": time.time()}
    try:
        if not same_object(LOCK_DIR, parent_fd, lock_fd):
            raise _busy(root, "another writer")
        _write_owner(lock_fd, owner)
    except BaseException:
        _remove_lock_dir(parent_fd, LOCK_DIR, lock_fd)
        os.close(lock_fd)
        raise
    return lock_fd, token


def _release(parent_fd: int, lock_fd: int, token: str) -> None:
    """Remove the lock folder only while it still holds this process's token (never another writer's)."""
    owner = read_owner(lock_fd)
    if owner is not None and owner.get("token") == token:
        _remove_lock_dir(parent_fd, LOCK_DIR, lock_fd)


@contextlib.contextmanager
def shared_lock(root: Path, *, wait: float) -> Iterator[HeldLock]:
    """Hold claude-obsidian's two locks on the vault at ``root``; VaultBusy (exit 11) when they stay taken."""
    deadline = time.monotonic() + wait
    try:
        root_fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeMetaPath(f"the vault folder {root} was replaced by a symlink or file; nothing was changed") \
                from None
        raise
    try:
        _flock_root(root_fd, root, deadline)
        try:
            if not same_object(str(root), None, root_fd, follow=True):
                raise replaced(root)  # while waiting for the lock
            meta_fd = open_dir(root_fd, META_NAME, str(root / META_NAME), create=True)
            with MetaDir(meta_fd, root / META_NAME) as meta:
                lock_fd, token = _make_lock_dir(meta.fd, root, deadline)
                try:
                    held = HeldLock(root, root_fd, meta)
                    meta.guard = held.check_root
                    yield held
                finally:
                    try:
                        _release(meta.fd, lock_fd, token)
                    finally:
                        os.close(lock_fd)
        finally:
            fcntl.flock(root_fd, fcntl.LOCK_UN)
    finally:
        os.close(root_fd)
