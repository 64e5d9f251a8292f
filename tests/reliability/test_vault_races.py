"""Races with the vault's folders while a writer runs: the run stops with one line and writes nothing elsewhere.

Each writer is paused at a named point (``VAULTEVAL_TEST_PAUSE_AT``), the vault
folder, its ``.vault-meta`` or vaulteval's ``bm25`` folder is swapped under it,
and it is let go (``VAULTEVAL_TEST_RESUME_FILE``). The new path must receive
nothing, and the moved vault must lose nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline_fixtures import DESCALING_NOTE, append_text, chunk_locations, chunk_records, cli_env, make_vault, snapshot
from vaulteval.vault.metadir import META_REL

TIMEOUT = 120


def paused(root: Path, tmp: Path, point: str, *args: str) -> tuple[subprocess.Popen, Path]:
    """A CLI writer on ``root`` stopped at ``point``; create the returned file to let it go on."""
    flag, resume = tmp / "paused", tmp / "resume"
    env = cli_env(VAULTEVAL_TEST_PAUSE_AT=point, VAULTEVAL_TEST_PAUSE_FILE=str(flag),
                  VAULTEVAL_TEST_RESUME_FILE=str(resume))
    proc = subprocess.Popen([sys.executable, "-m", "vaulteval", *args, "--vault", str(root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    while not flag.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, f"never reached {point}"
        time.sleep(0.02)
    return proc, resume


def finish(proc: subprocess.Popen, resume: Path) -> tuple[int, str]:
    resume.touch()
    err = proc.communicate(timeout=TIMEOUT)[1]
    return proc.returncode, err


def records(root: Path) -> dict[str, dict]:
    return {loc[3]: rec for loc, rec in zip(chunk_locations(root), chunk_records(root))}


@pytest.mark.parametrize("command,point", [
    (("prefix", "--all", "--rebuild"), "locked"),
    (("prefix", "--all", "--rebuild"), "chunk-written"),
    (("index", "build"), "locked"),
    (("index", "build"), "index-serialised"),
    (("provision",), "locked"),
    (("provision", "--rebuild"), "chunk-written"),
])
def test_a_vault_folder_replaced_mid_run_stops_the_run(tmp_path: Path, command: tuple, point: str) -> None:
    root = make_vault(tmp_path / "vault")
    append_text(root, DESCALING_NOTE, "\nA paragraph about the quokkaberry descaler.\n")
    before = records(root)
    proc, resume = paused(root, tmp_path, point, *command)
    moved = tmp_path / "moved"
    root.rename(moved)
    shutil.copytree(moved / "wiki", root / "wiki")  # a new vault at the old path, without derived state
    (root / "wiki" / "Only here.md").write_text("A note that exists only in the new folder.\n")
    new_before = snapshot(root)
    code, err = finish(proc, resume)
    assert code == 3 and len(err.splitlines()) == 1 and "replaced" in err and "Traceback" not in err, err
    assert snapshot(root) == new_before, "something was written through the new path"
    assert not (root / ".vault-meta").exists()
    after = records(moved)
    assert set(after) >= set(before), "a chunk record of the moved vault was deleted"
    if point == "locked":
        assert after == before, "the moved vault changed although the run stopped before its first change"
    assert not (moved / ".vault-meta" / "mutation.lock").exists(), "the lock was left in the moved vault"


@pytest.mark.parametrize("alias", [".vault-meta", META_REL, f"{META_REL}/bm25"])
def test_derived_folders_swapped_for_a_symlink_mid_build(tmp_path: Path, alias: str) -> None:
    root = make_vault(tmp_path / "vault")
    before = records(root)
    proc, resume = paused(root, tmp_path, "index-serialised", "index", "build")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not vaulteval's\n")
    aside = tmp_path / "aside"
    (root / alias).rename(aside)
    os.symlink(outside, root / alias)
    code, err = finish(proc, resume)
    assert code in (2, 3) and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "symlink" in err
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"], "written through the symlink"
    (root / alias).unlink()
    aside.rename(root / alias)
    assert records(root) == before, "a chunk record was changed or deleted"
