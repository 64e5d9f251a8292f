"""Every CLI exit code (0, 2, 3, 10, 11, 12) and the one-line error contract, through real subprocesses.

Usage: ``.venv/bin/python -m pytest tests/cli/test_cli.py -q``
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from vaulteval import Vault

from vaulteval.pipeline.retrieve import Retriever
from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import (  # noqa: F401
    CRLF_NOTE,
    assert_one_line_error,
    cli_env,
    fresh_vault,
    index_file,
    make_vault,
    provisioned_sample,
    run_cli,
    run_json,
    run_main,
    snapshot,
    unprovisioned_vault,
    write_note,
)

REBUILD = "vaulteval provision --vault"


# -- 0 ----------------------------------------------------------------------------

def test_exit_0_hit_and_honest_empty_result(provisioned_sample: Path) -> None:
    hit = run_cli("retrieve", "--vault", provisioned_sample, "descale espresso machine", "--no-rerank")
    assert hit.returncode == 0, hit.stderr
    data = json.loads(hit.stdout)
    assert data["candidates"], "a term in the vault must find something"
    assert any(c["page_path"] == "wiki/howto/Descaling.md" for c in data["candidates"])

    for query in ("xylophonequux zzyzzyva", "the of and"):  # unknown words; only stopwords
        empty = run_cli("retrieve", "--vault", provisioned_sample, query, "--no-rerank", "--explain")
        assert empty.returncode == 0, empty.stderr
        data = json.loads(empty.stdout)
        assert data["candidates"] == []
        assert data["explain"]["bm25_candidate_count"] == 0
        assert empty.stderr == ""


def test_query_length_boundary(provisioned_sample: Path) -> None:
    ok = run_cli("retrieve", "--vault", provisioned_sample, ("espresso " * 1000)[:8000], "--no-rerank")
    assert ok.returncode == 0, ok.stderr
    over = run_cli("retrieve", "--vault", provisioned_sample, ("espresso " * 1000)[:8001], "--no-rerank")
    assert_one_line_error(over, 2)
    # The bound is on NFKC-normalised characters: U+FB00 (ﬀ) normalises to "ff".
    wide = run_cli("retrieve", "--vault", provisioned_sample, "\ufb00" * 4001, "--no-rerank")
    assert_one_line_error(wide, 2)


# -- 2 ----------------------------------------------------------------------------

USAGE_CASES = {
    "top-0": ["--top", "0"],
    "top-1001": ["--top", "1001"],
    "top-negative": ["--top", "-1"],
    "top-abc": ["--top", "abc"],
    "bm25-top-0": ["--bm25-top", "0"],
    "bm25-top-1001": ["--bm25-top", "1001"],
    "unknown-flag": ["--frobnicate"],
}


@pytest.mark.parametrize("extra", list(USAGE_CASES.values()), ids=list(USAGE_CASES))
def test_exit_2_bad_flags(provisioned_sample: Path, extra: list[str]) -> None:
    proc = run_cli("retrieve", "--vault", provisioned_sample, "espresso", "--no-rerank", *extra)
    assert_one_line_error(proc, 2)
    assert proc.stdout == ""


@pytest.mark.parametrize("query", ["", "   \t "], ids=["empty", "blank"])
def test_exit_2_empty_query(provisioned_sample: Path, query: str) -> None:
    assert_one_line_error(run_cli("retrieve", "--vault", provisioned_sample, query, "--no-rerank"), 2)


def test_exit_2_long_query(provisioned_sample: Path) -> None:
    proc = run_cli("retrieve", "--vault", provisioned_sample, "espresso " * 1000, "--no-rerank")
    line = assert_one_line_error(proc, 2)
    assert "8000" in line.replace(",", "")


def test_exit_2_remote_ollama_without_permission(provisioned_sample: Path) -> None:
    env = cli_env(OLLAMA_HOST="http://203.0.113.9:11434")
    t0 = time.monotonic()
    # A plain retrieve on a vault without stored embeddings asks no embedder; naming Ollama does.
    proc = run_cli("retrieve", "--vault", provisioned_sample, "espresso", "--embedder", "ollama", env=env)
    line = assert_one_line_error(proc, 2)
    assert time.monotonic() - t0 < 15, "refusal must not wait on a connection"
    assert "allow-remote-ollama" in line
    assert proc.stdout == ""


def test_exit_2_usage_errors_of_other_commands(provisioned_sample: Path) -> None:
    assert_one_line_error(run_cli("prefix", "--vault", provisioned_sample), 2)  # neither page nor --all
    assert_one_line_error(run_cli("prefix", "--vault", provisioned_sample, "--all", "wiki/hot.md"), 2)
    assert_one_line_error(run_cli("prefix", "--vault", provisioned_sample, "--peek", "../escape.md"), 2)
    assert_one_line_error(run_cli("index", "--vault", provisioned_sample), 2)  # no action
    assert_one_line_error(run_cli("index", "query", "--vault", provisioned_sample, "x", "--top", "0"), 2)
    assert_one_line_error(run_cli("nosuchcommand"), 2)


def test_no_command_is_a_one_line_usage_error() -> None:
    # An error path too: exit 2 with one line (pointing at --help), not a dump of the whole help text.
    assert_one_line_error(run_cli(), 2)


# -- 3 ----------------------------------------------------------------------------

def test_exit_3_page_missing(provisioned_sample: Path) -> None:
    before = snapshot(provisioned_sample)
    proc = run_cli("prefix", "wiki/nope.md", "--vault", provisioned_sample)
    line = assert_one_line_error(proc, 3)
    assert "wiki/nope.md" in line
    assert snapshot(provisioned_sample) == before


# -- 10 ---------------------------------------------------------------------------

def _assert_not_provisioned(root: Path, *, stats: bool = True) -> None:
    proc = run_cli("retrieve", "--vault", root, "espresso", "--no-rerank")
    line = assert_one_line_error(proc, 10)
    assert f"{REBUILD} {root}" in line
    assert proc.stdout == ""
    if stats:  # an unusable index file is unusable for diagnostics too (in-process: same code path, faster)
        code, out, err = run_main("index", "stats", "--vault", root)
        assert code == 10 and out == "" and len(err.splitlines()) == 1, (code, err)


def test_exit_10_unprovisioned(unprovisioned_vault: Path) -> None:
    _assert_not_provisioned(unprovisioned_vault)
    assert not (unprovisioned_vault / ".vault-meta").exists(), "retrieve must not create state"


def test_exit_10_missing_index(fresh_vault: Path) -> None:
    index_file(fresh_vault).unlink()
    _assert_not_provisioned(fresh_vault)


def test_exit_10_truncated_index(fresh_vault: Path) -> None:
    path = index_file(fresh_vault)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _assert_not_provisioned(fresh_vault)
    path.write_bytes(data[:-1])
    _assert_not_provisioned(fresh_vault)
    path.write_bytes(data + b"\x00")  # trailing bytes are as wrong as missing ones
    _assert_not_provisioned(fresh_vault)


@pytest.mark.parametrize("where", ["middle", "near-end", "header"])
def test_exit_10_bit_flipped_index(fresh_vault: Path, where: str) -> None:
    path = index_file(fresh_vault)
    data = bytearray(path.read_bytes())
    pos = {"middle": len(data) // 2, "near-end": len(data) - 3, "header": 40}[where]
    data[pos] ^= 0x10
    path.write_bytes(bytes(data))
    _assert_not_provisioned(fresh_vault)
    code, out, _err = run_main("doctor", "--json", "--vault", fresh_vault)
    assert code == 1 and json.loads(out)["state"] == "degraded"


def test_exit_10_index_of_another_format(fresh_vault: Path) -> None:
    path = index_file(fresh_vault)
    data = path.read_bytes()
    path.write_bytes(b"NOTANIDX" + data[8:])  # foreign magic
    _assert_not_provisioned(fresh_vault)
    path.write_bytes(data[:6] + b"\x00\x63" + data[8:])  # our magic, another format version
    _assert_not_provisioned(fresh_vault)
    path.write_text('{"version": 1, "docs": {}, "df": {}}')  # a seed-style JSON index in our place
    _assert_not_provisioned(fresh_vault)


def test_exit_10_index_of_another_schema(fresh_vault: Path) -> None:
    """A well-formed file (valid checksums) whose header says schema 3 is refused."""
    path = index_file(fresh_vault)
    data = path.read_bytes()
    magic, head_len, _crc = struct.unpack("<8sII", data[:16])
    head = data[16 : 16 + head_len]
    assert b'"schema_version": 2' in head
    head = head.replace(b'"schema_version": 2', b'"schema_version": 3')
    path.write_bytes(struct.pack("<8sII", magic, head_len, zlib.crc32(head)) + head + data[16 + head_len :])
    _assert_not_provisioned(fresh_vault)


def test_exit_10_index_without_chunks(tmp_path: Path) -> None:
    root = tmp_path / "v"
    write_note(root, "wiki/empty.md", "")
    write_note(root, "wiki/stub.md", "---\ntitle: Stub\n---\n")
    report = run_json("provision", "--vault", root)
    assert report["index"]["docs"] == 0
    _assert_not_provisioned(root, stats=False)  # the empty index itself is valid


def test_rebuild_command_is_exact_for_a_path_with_spaces(tmp_path: Path) -> None:
    """The printed rebuild command must work when pasted, even for a vault path with spaces."""
    root = make_vault(tmp_path / "my vault", provision=False)
    proc = run_cli("retrieve", "--vault", root, "espresso", "--no-rerank")
    line = assert_one_line_error(proc, 10)
    command = line.split("rebuild with: ", 1)[1]
    assert shlex.split(command) == ["vaulteval", "provision", "--vault", str(root)]


# -- 11 ---------------------------------------------------------------------------

def test_exit_11_when_lock_is_held(fresh_vault: Path) -> None:
    # Give the writers something to do, so "nothing changed" means something.
    with open(fresh_vault / "wiki/howto/Descaling.md", "ab") as fh:
        fh.write(b"\nAdded after provisioning: oxalic.\n")
    before = snapshot(fresh_vault)
    fd = os.open(fresh_vault / META_REL / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for args in (["index", "build"], ["provision"], ["prefix", "--all"], ["prefix", "wiki/howto/Descaling.md"]):
            t0 = time.monotonic()
            proc = run_cli(*args, "--vault", fresh_vault)
            assert_one_line_error(proc, 11)
            assert time.monotonic() - t0 < 15, "a busy vault fails at once, it does not wait"
            assert snapshot(fresh_vault) == before, f"{args} changed the vault while the lock was held"
        # Readers do not take the writer lock.
        assert run_cli("retrieve", "--vault", fresh_vault, "espresso", "--no-rerank").returncode == 0
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert run_cli("provision", "--vault", fresh_vault).returncode == 0


def test_concurrent_provision_never_corrupts(tmp_path: Path) -> None:
    for round_ in range(2):
        root = make_vault(tmp_path / f"v{round_}", provision=False)
        cmd = [sys.executable, "-m", "vaulteval", "provision", "--vault", str(root)]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env())
                 for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        codes = sorted(p.returncode for p in procs)
        assert codes in ([0, 0], [0, 11]), (codes, [o[1] for o in outs])
        for p, (_out, err) in zip(procs, outs):
            if p.returncode == 11:
                assert len(err.splitlines()) == 1
        index = Retriever(Vault(root)).index()  # opens and passes its checksum
        assert index.n_docs == 54
        doctor = run_cli("doctor", "--json", "--vault", root)
        assert doctor.returncode == 0 and json.loads(doctor.stdout)["state"] == "verified", doctor.stdout
        assert not list((root / ".vault-meta").rglob("*.tmp")), "temporary files left behind"


# -- 12 ---------------------------------------------------------------------------

def test_exit_12_duplicate_address_changes_nothing(fresh_vault: Path) -> None:
    # Grinder.md has no address; give it the Espresso machine's.
    grinder = fresh_vault / "wiki/coffee/Grinder.md"
    text = grinder.read_text(encoding="utf-8")
    assert text.startswith("---\n") and "address:" not in text
    grinder.write_text("---\naddress: c-000101\n" + text[4:], encoding="utf-8")
    meta = fresh_vault / ".vault-meta"
    before = snapshot(meta)
    index_bytes = index_file(fresh_vault).read_bytes()
    for args in (["prefix", "--all"], ["provision"], ["prefix", "wiki/coffee/Grinder.md"], ["prefix", "--all", "--rebuild"]):
        proc = run_cli(*args, "--vault", fresh_vault)
        line = assert_one_line_error(proc, 12)
        assert "c-000101" in line
        assert snapshot(meta) == before, f"{args} changed .vault-meta"
        assert index_file(fresh_vault).read_bytes() == index_bytes


def test_exit_12_duplicate_between_two_new_pages(unprovisioned_vault: Path) -> None:
    write_note(unprovisioned_vault, "wiki/a/one.md", "---\naddress: dup-1\n---\nfirst page\n")
    write_note(unprovisioned_vault, "wiki/b/two.md", "---\naddress: dup-1\n---\nsecond page\n")
    proc = run_cli("provision", "--vault", unprovisioned_vault)
    assert_one_line_error(proc, 12)
    assert not (unprovisioned_vault / META_REL / "store").exists()
    assert not index_file(unprovisioned_vault).exists()


# -- the CRLF page in CLI terms (see also tests/pipeline/test_integrity.py) --------------

def test_crlf_page_found_via_cli(provisioned_sample: Path) -> None:
    assert b"\r\n" in (provisioned_sample / CRLF_NOTE).read_bytes()
    data = run_json("retrieve", "--vault", provisioned_sample, "zyxel router factory reset", "--no-rerank",
                    "--explain")
    assert data["candidates"][0]["page_path"] == CRLF_NOTE
    assert data["explain"]["stale_candidates_skipped"] == 0


@pytest.mark.parametrize("name", ["no\x1b[2Jvault", "no\nvault", "no\x1evault", "no\u202evault"])
def test_an_error_naming_a_control_character_stays_one_safe_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                 name: str) -> None:
    from vaulteval.cli.main import main

    assert main(["retrieve", "--vault", str(tmp_path / name), "hello"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a directory" in err
    assert not any(ch in err.rstrip("\n") for ch in "\x1b\n\x1e\u202e")
