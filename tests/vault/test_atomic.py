"""One atomic write for every derived file: old or new content, never a part; nothing left behind.

Usage: ``.venv/bin/python -m pytest tests/vault/test_atomic.py -q``
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vaulteval.vault.atomic import temp_sibling, write_atomic


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_bytes(b"old")
    write_atomic(target, b"new", durable=True)
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_write_atomic_relative_to_an_open_directory(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        write_atomic("g.bin", b"\x00" * 70_000, dir_fd=fd, durable=True)
    finally:
        os.close(fd)
    assert (tmp_path / "g.bin").read_bytes() == b"\x00" * 70_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.bin"]


def test_a_failure_before_the_rename_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "cache.sqlite"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), temp_sibling(target) as tmp:
        Path(tmp).write_bytes(b"half")
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.sqlite"]


def test_a_symlink_at_the_temporary_name_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep")
    (tmp_path / "d").mkdir()
    os.symlink(outside, tmp_path / "d" / f".f.{os.getpid()}.tmp")
    with pytest.raises(OSError):
        write_atomic(tmp_path / "d" / "f", b"new")
    assert outside.read_bytes() == b"keep"
