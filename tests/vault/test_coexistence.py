"""Two tools, one vault: vaulteval and claude-obsidian (played by tests/fake_claude_obsidian.py) share .vault-meta/.

Each sequence ends with both tools' retrieval working: vaulteval's through its
CLI, the other tool's records and index still there and still answering.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline_fixtures import (
    DESCALING_NOTE,
    assert_one_line_error,
    chunk_records,
    cli_env,
    index_file,
    run_cli,
    snapshot,
)
from vaulteval.vault.metadir import META_REL

FAKE = Path(__file__).resolve().parents[1] / "fake_claude_obsidian.py"
LOCK = Path(".vault-meta") / "mutation.lock"
TIMEOUT = 120


def fake(command: str, root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FAKE), command, str(root), *args], capture_output=True, text=True,
                          timeout=TIMEOUT)


def fake_hold(root: Path, tmp: Path) -> tuple[subprocess.Popen, Path]:
    """The other tool holding its lock until the returned file is created."""
    ready, release = tmp / "held", tmp / "release"
    proc = subprocess.Popen([sys.executable, str(FAKE), "hold", str(root), str(ready), str(release)])
    deadline = time.monotonic() + TIMEOUT
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the fake tool never took its lock"
        time.sleep(0.02)
    return proc, release


def other_tool_state(root: Path) -> dict:
    """The other tool's files: its chunk records and its index, with their bytes."""
    meta = root / ".vault-meta"
    files = sorted(meta.glob("chunks/*/chunk-*.json")) + sorted(meta.glob("bm25/index.json"))
    return {str(p.relative_to(meta)): p.read_bytes() for p in files}


def vaulteval_finds(root: Path, query: str = "descaling citric acid") -> list[str]:
    proc = run_cli("retrieve", "--vault", root, query, "--no-rerank", timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return [c["page_path"] for c in json.loads(proc.stdout)["candidates"]]


def provision(root: Path, **env: str) -> subprocess.CompletedProcess:
    return run_cli("provision", "--vault", root, env=cli_env(**env), timeout=TIMEOUT)


def assert_both_work(root: Path) -> None:
    assert DESCALING_NOTE in vaulteval_finds(root)
    proc = fake("retrieve", root, "citric")
    assert proc.returncode == 0 and DESCALING_NOTE in json.loads(proc.stdout), proc.stderr
    names = {Path(p).parent.name for p in other_tool_state(root) if p.startswith("chunks/")}
    assert any(n.startswith("syn-") and len(n) == 4 + 64 for n in names), "the other tool's synthetic records"
    assert not (root / LOCK).exists(), "a lock was left behind"


@pytest.mark.parametrize("order", ["vaulteval-first", "claude-obsidian-first"])
def test_both_orders_leave_both_tools_working(unprovisioned_vault: Path, order: str) -> None:
    root = unprovisioned_vault
    steps = ["vaulteval", "claude-obsidian"] * 2
    if order == "claude-obsidian-first":
        steps.reverse()
    for step in steps:
        theirs, ours = other_tool_state(root), snapshot(root / META_REL, mtimes=False)
        if step == "vaulteval":
            assert provision(root).returncode == 0
            assert other_tool_state(root) == theirs, "vaulteval changed the other tool's records or index"
        else:
            assert fake("prefix", root).returncode == 0 and fake("index", root).returncode == 0
            if ours:
                assert snapshot(root / META_REL, mtimes=False) == ours, "the other tool changed vaulteval's state"
    assert_both_work(root)
    assert len(chunk_records(root)) == 54


def test_both_at_once_end_with_both_working(unprovisioned_vault: Path) -> None:
    """Started together, each either finishes or fails closed (busy); a retry then finishes, and nothing is lost."""
    root = unprovisioned_vault
    for _ in range(3):
        ours = subprocess.Popen([sys.executable, "-m", "vaulteval", "provision", "--vault", str(root)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=cli_env())
        theirs = subprocess.Popen([sys.executable, str(FAKE), "prefix", str(root)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        our_err = ours.communicate(timeout=TIMEOUT)[1]
        their_code = theirs.wait(timeout=TIMEOUT)
        assert ours.returncode in (0, 11) and their_code in (0, 6), our_err
        if ours.returncode == 11:
            assert len(our_err.splitlines()) == 1 and "mutation.lock" in our_err
            assert provision(root).returncode == 0
        if their_code == 6:
            assert fake("prefix", root).returncode == 0
        assert fake("index", root).returncode == 0
        assert_both_work(root)


def test_a_held_mutation_lock_fails_closed_and_is_never_removed(unprovisioned_vault: Path, tmp_path: Path) -> None:
    root = unprovisioned_vault
    holder, release = fake_hold(root, tmp_path)
    try:
        owner = (root / LOCK / "owner.json").read_bytes()
        for args in (("provision",), ("prefix", "--all"), ("index", "build")):
            proc = run_cli(*args, "--vault", root, env=cli_env(VAULTEVAL_LOCK_WAIT="0"), timeout=TIMEOUT)
            line = assert_one_line_error(proc, 11)
            assert "mutation.lock" in line and "nothing was changed" in line
            assert (root / LOCK / "owner.json").read_bytes() == owner, "vaulteval touched the other tool's lock"
            assert not (root / META_REL).exists(), "vaulteval wrote while the vault was locked"
    finally:
        release.touch()
        holder.wait(timeout=TIMEOUT)
    assert provision(root, VAULTEVAL_LOCK_WAIT="0").returncode == 0


def test_provision_waits_for_the_other_tool(unprovisioned_vault: Path, tmp_path: Path) -> None:
    root = unprovisioned_vault
    holder, release = fake_hold(root, tmp_path)
    ours = subprocess.Popen([sys.executable, "-m", "vaulteval", "provision", "--vault", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=cli_env(VAULTEVAL_LOCK_WAIT="600"))
    try:
        time.sleep(1.0)  # long enough for an unlocked provision to have started writing
        assert ours.poll() is None and not (root / META_REL).exists(), "provision did not wait for the lock"
    finally:
        release.touch()
        holder.wait(timeout=TIMEOUT)
    assert ours.wait(timeout=TIMEOUT) == 0, ours.stderr.read()
    assert index_file(root).is_file() and not (root / LOCK).exists()


@pytest.mark.parametrize("owner", ["no owner record", "a live owner", "another host", "not JSON"])
def test_a_lock_that_may_be_live_is_never_reaped(unprovisioned_vault: Path, owner: str) -> None:
    root = unprovisioned_vault
    (root / LOCK).mkdir(parents=True)
    if owner == "not JSON":
        (root / LOCK / "owner.json").write_text("{")
    elif owner != "no owner record":
        # This test's own process: alive, and started before the lock was taken.
        record = {"pid": os.getpid(), "host": "elsewhere" if owner == "another host" else socket.gethostname(),
                  "started_epoch": time.time(), "token": "t"}
        (root / LOCK / "owner.json").write_text(json.dumps(record))
    before = snapshot(root / ".vault-meta")
    assert_one_line_error(provision(root, VAULTEVAL_LOCK_WAIT="0"), 11)
    assert snapshot(root / ".vault-meta") == before


@pytest.mark.parametrize("waited", [True, False], ids=["reaped", "zombie"])
def test_a_killed_writers_lock_is_taken_over(fresh_vault: Path, tmp_path: Path, waited: bool) -> None:
    """vaulteval killed while it holds both locks: the other tool is busy meanwhile; the next provision
    removes the dead writer's lock (its pid is gone, or a zombie not yet waited for) and finishes."""
    root = fresh_vault
    flag = tmp_path / "paused"
    env = cli_env(VAULTEVAL_TEST_PAUSE_AT="locked", VAULTEVAL_TEST_PAUSE_FILE=str(flag))
    proc = subprocess.Popen([sys.executable, "-m", "vaulteval", "provision", "--vault", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not flag.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        assert json.loads((root / LOCK / "owner.json").read_text())["pid"] == proc.pid
        theirs = fake("prefix", root)
        assert theirs.returncode == 6 and not (root / ".vault-meta" / "chunks").exists()
        proc.kill()
        if waited:
            proc.wait(timeout=TIMEOUT)
        else:
            deadline = time.monotonic() + TIMEOUT
            while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                assert time.monotonic() < deadline
                time.sleep(0.02)
        assert provision(root, VAULTEVAL_LOCK_WAIT="0").returncode == 0
    finally:
        proc.kill()
        proc.wait(timeout=TIMEOUT)
    assert not (root / LOCK).exists() and DESCALING_NOTE in vaulteval_finds(root)


def test_retrieve_exits_10_when_the_chunk_records_are_gone(fresh_vault: Path) -> None:
    assert DESCALING_NOTE in vaulteval_finds(fresh_vault)
    for segment in (fresh_vault / META_REL / "store").glob("seg-*.vcs"):
        segment.write_bytes(b"")  # emptied: every record the index names is gone
    line = assert_one_line_error(run_cli("retrieve", "--vault", fresh_vault, "descaling citric acid",
                                         "--no-rerank", timeout=TIMEOUT), 10)
    assert "chunk records" in line and "vaulteval provision" in line
    shutil.rmtree(fresh_vault / META_REL / "store")
    assert_one_line_error(run_cli("retrieve", "--vault", fresh_vault, "descaling", "--no-rerank",
                                  timeout=TIMEOUT), 10)


def test_doctor_names_the_other_tools_state(fresh_vault: Path) -> None:
    proc = run_cli("doctor", "--vault", fresh_vault, "--json", timeout=TIMEOUT)
    assert proc.returncode == 0 and json.loads(proc.stdout)["coexistence"] is None
    assert fake("prefix", fresh_vault).returncode == 0 and fake("index", fresh_vault).returncode == 0
    report = json.loads(run_cli("doctor", "--vault", fresh_vault, "--json", timeout=TIMEOUT).stdout)
    assert report["state"] == "verified"
    assert ".vault-meta/chunks/" in report["coexistence"] and "bm25/index.json" in report["coexistence"]
    text = run_cli("doctor", "--vault", fresh_vault, timeout=TIMEOUT).stdout
    assert [line for line in text.splitlines() if "claude-obsidian" in line] == [f"  note: {report['coexistence']}"]


def test_files_of_another_layout_are_not_read_and_provision_builds_the_namespace(fresh_vault: Path) -> None:
    """vaulteval's files directly in .vault-meta/ (not its namespace) are not vaulteval's state: retrieve says to
    provision in one line, and provision builds .vault-meta/vaulteval/ without touching them."""
    root, meta = fresh_vault, fresh_vault / ".vault-meta"
    for entry in sorted((root / META_REL).iterdir()):
        shutil.move(str(entry), str(meta / entry.name))
    (root / META_REL).rmdir()
    before = snapshot(meta)
    line = assert_one_line_error(run_cli("retrieve", "--vault", root, "descaling", "--no-rerank", timeout=TIMEOUT), 10)
    assert "index file is missing" in line and "vaulteval provision" in line
    proc = provision(root)
    assert proc.returncode == 0 and proc.stderr == ""
    assert {k: v for k, v in snapshot(meta).items() if k.partition("/")[0] != "vaulteval"} == before
    assert DESCALING_NOTE in vaulteval_finds(root)


def test_the_other_tools_lock_left_by_a_dead_writer_is_removed(unprovisioned_vault: Path) -> None:
    root = unprovisioned_vault
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=TIMEOUT)
    (root / LOCK).mkdir(parents=True)
    record = {"schema": "claude-obsidian.mutation-lock.v1", "pid": gone.pid, "host": socket.gethostname(),
              "started_epoch": time.time(), "token": "t"}
    (root / LOCK / "owner.json").write_text(json.dumps(record))
    assert provision(root, VAULTEVAL_LOCK_WAIT="0").returncode == 0
    assert not (root / LOCK).exists() and not list((root / ".vault-meta").glob("mutation.lock*"))


def test_a_bad_lock_wait_is_a_usage_error(unprovisioned_vault: Path) -> None:
    line = assert_one_line_error(provision(unprovisioned_vault, VAULTEVAL_LOCK_WAIT="soon"), 2)
    assert "VAULTEVAL_LOCK_WAIT" in line and not (unprovisioned_vault / ".vault-meta").exists()
