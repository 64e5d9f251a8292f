"""Resources run out: a full disk during provision, a read-only vault.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_resources.py -q -s``

With mount privileges (root here) the vault lives on a small tmpfs that is
filled up, or remounted read-only, so even root cannot write. Without them the
same checks run with RLIMIT_FSIZE (a write past the limit fails with EFBIG) and
with the child dropped to user ``nobody`` over a tree without write bits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults import Guard, check_index, cli, cli_env

NOBODY = 65534
QUERY = "descaling citric acid espresso"


@contextlib.contextmanager
def tmpfs(path: Path, size_kb: int) -> Iterator[bool]:
    """Mount a tmpfs of ``size_kb`` at ``path``; yields False (and mounts nothing) without the privilege."""
    path.mkdir(parents=True, exist_ok=True)
    if os.environ.get("VAULTEVAL_RELIABILITY_NO_MOUNT"):  # exercise the fallback on a machine that can mount
        yield False
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=755", "tmpfs", str(path)],
                             capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _vault(root: Path) -> Path:
    from vaulteval.cli.sample import copy_sample
    from vaulteval.pipeline.provision import provision
    from vaulteval.vault.vault import Vault

    copy_sample(root)
    provision(Vault(root))
    with open(root / "wiki" / "howto" / "Descaling.md", "a", encoding="utf-8") as fh:
        fh.write("\nAn edit made just before the disk filled up.\n" * 20)
    return root


def _fill(folder: Path, leave: int) -> Path:
    """Write a filler file until the file system is full, then free ``leave`` bytes of it."""
    filler = folder / "filler.bin"
    block = b"\0" * 4096
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            os.write(fd, block)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    if leave:
        size = filler.stat().st_size
        os.truncate(filler, max(0, size - leave))
    return filler


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _one_line(proc: subprocess.CompletedProcess, code: int) -> str:
    assert proc.returncode == code, f"exit {proc.returncode}: {proc.stderr}"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _served(root: Path, **kw) -> list[str]:
    proc = cli("retrieve", "--vault", root, QUERY, "--no-rerank", **kw)
    assert proc.returncode == 0, proc.stderr
    return [c["page_path"] for c in json.loads(proc.stdout)["candidates"]]


@pytest.mark.parametrize("leave", [0, 96 * 1024], ids=["no-room-for-chunks", "no-room-for-the-index"])
def test_a_full_disk_fails_in_one_line_and_the_previous_index_is_served(tmp_path: Path, leave: int) -> None:
    with tmpfs(tmp_path / "disk", 4096) as mounted:
        root = _vault((tmp_path / "disk" if mounted else tmp_path) / "v")
        before = _served(root)
        guard = Guard(root, tmp_path / "outside")
        if mounted:
            filler = _fill(tmp_path / "disk", leave)
            proc = cli("provision", "--vault", root)
            cause = "No space left on device"
        else:
            filler = None
            limit = 2048 if leave == 0 else 200 * 1024
            proc = cli("provision", "--vault", root, preexec_fn=_limit_file_size(limit))
            cause = "File too large"
        line = _one_line(proc, 1)
        assert "cannot write derived state" in line and cause in line
        # The previous index is served; chunks the failed run rewrote are dropped as stale, never served.
        served = _served(root)
        assert served and set(served) <= set(before) | {"wiki/howto/Descaling.md"}
        assert guard.changed() == (0, 0)
        if filler is not None:
            filler.unlink()
        assert cli("provision", "--vault", root).returncode == 0
        assert check_index(root, require=True) is None


def test_a_read_only_vault_still_retrieves_and_provision_fails_in_one_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", 8192) as mounted:
        if mounted:
            root = _vault(tmp_path / "ro" / "v")
            guard = Guard(root, tmp_path / "outside")
            assert subprocess.run(["mount", "-o", "remount,ro", str(tmp_path / "ro")]).returncode == 0
            run = {}
            cause = "Read-only file system"
        else:
            base = Path(tempfile.mkdtemp(prefix="vaulteval-ro-", dir="/tmp"))
            os.chmod(base, 0o755)
            root = _vault(base / "v")
            guard = Guard(root, tmp_path / "outside")
            subprocess.run(["chmod", "-R", "a-w", str(root)], check=True)

            def drop() -> None:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            # Root ignores write bits: without mount it runs the children as nobody (the interpreter must be
            # readable by nobody); anyone else is already bound by them.
            run = {"preexec_fn": drop, "env": cli_env(HOME="/tmp")} if os.geteuid() == 0 else {}
            cause = "Permission denied"
        try:
            assert _served(root, **run)
            for args in (("provision",), ("prefix", "--all"), ("index", "build")):
                line = _one_line(cli(*args, "--vault", root, **run), 1)
                assert "cannot write derived state" in line and cause in line
            assert _served(root, **run)
            assert guard.changed() == (0, 0)
        finally:
            if mounted:
                subprocess.run(["mount", "-o", "remount,rw", str(tmp_path / "ro")])
            else:
                subprocess.run(["chmod", "-R", "u+w", str(root.parent)])
                shutil.rmtree(root.parent, ignore_errors=True)
