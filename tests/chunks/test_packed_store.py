"""The packed chunk store: a segment of another format, compaction, stat signatures, kills mid-write.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_packed_store.py -q``
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import (  # noqa: F401
    assert_one_line_error,
    record_frame,
    DESCALING_NOTE,
    LONG_NOTE,
    chunk_locations,
    chunk_records,
    cli_env,
    fresh_vault,
    records_for,
    retrieve_json,
    run_cli,
    run_json,
    snapshot,
)

STORE = Path(META_REL) / "store"
TIMEOUT = 120


def _segments(root: Path) -> set[str]:
    return {p.name for p in (root / STORE).iterdir()}


def test_a_segment_of_another_format_is_refused_in_one_line_and_provision_rebuilds_it(fresh_vault: Path) -> None:
    """A segment whose magic names another format is not read: retrieve says to provision (exit 10), and the
    next provision writes its records again and leaves the notes as they were."""
    root = fresh_vault
    before = chunk_records(root)
    for segment in _segments(root):
        path = root / STORE / segment
        data = bytearray(path.read_bytes())
        assert data[7] == 2
        data[7] = 1
        path.write_bytes(bytes(data))
    notes = snapshot(root / "wiki")
    line = assert_one_line_error(run_cli("retrieve", "--vault", root, "descaling citric acid", "--no-rerank"), 10)
    assert "vaulteval provision" in line
    proc = run_cli("provision", "--vault", root)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout)["prefix"]["chunks_written"] == 54
    def unstamped(records: list[dict]) -> list[dict]:
        return [{k: v for k, v in rec.items() if k != "created_at"} for rec in records]
    assert unstamped(chunk_records(root)) == unstamped(before)  # written again, the same but for the time
    assert retrieve_json(root, "descaling citric acid")["candidates"][0]["page_path"] == DESCALING_NOTE
    assert snapshot(root / "wiki") == notes


def test_files_of_earlier_store_layouts_are_not_read(fresh_vault: Path) -> None:
    """A JSON catalog and loose record files (layouts vaulteval no longer reads) are not trusted: without the
    binary catalog provision reads every note again and indexes only the packed store."""
    root, meta = fresh_vault, fresh_vault / META_REL
    (meta / "chunk-catalog.vcc").unlink()
    (meta / "chunk-catalog.json").write_text(json.dumps({"schema": 3, "pages": {}}), encoding="utf-8")
    loose = meta / "chunks" / "c-000103" / "chunk-000.json"
    loose.parent.mkdir(parents=True)
    loose.write_text(json.dumps({"page_path": DESCALING_NOTE, "raw_text": "a loose record"}), encoding="utf-8")
    report = run_json("provision", "--vault", root)
    assert report["prefix"]["pages_skipped"] == 0 and report["prefix"]["pages_seen"] == 53
    assert report["index"]["rejected"] == {} and report["index"]["docs"] == 54
    assert all(loc[0].startswith("store/") for loc in chunk_locations(root))
    assert retrieve_json(root, "descaling citric acid")["candidates"][0]["page_path"] == DESCALING_NOTE


def test_compaction_when_most_of_the_store_is_dead(fresh_vault: Path) -> None:
    root = fresh_vault
    query = "descaling citric acid"
    first = _segments(root)
    pages = sorted(p for p in (root / "wiki").rglob("*.md") if p.relative_to(root).as_posix() != DESCALING_NOTE)
    for page in pages[: len(pages) * 2 // 3]:
        page.unlink()
    report = run_json("provision", "--vault", root)
    assert report["prefix"]["chunks_compacted"] > 0 and report["prefix"]["chunks_written"] == 0
    (live,) = {loc[0].split("@")[0].removeprefix("store/") for loc in chunk_locations(root)}
    assert live not in first and first <= _segments(root)  # the old one stays for the readers of its generation
    assert report["index"]["reused"] == report["index"]["docs"]  # moved records keep their postings
    run_json("provision", "--vault", root)
    assert _segments(root) == {live}
    assert all(r is not None for r in chunk_records(root))
    assert retrieve_json(root, query)["candidates"][0]["page_path"] == DESCALING_NOTE


def test_an_unchanged_note_is_not_read_again(fresh_vault: Path, monkeypatch) -> None:
    """Change detection by stat signature (size, mtime_ns, inode): only notes whose signature moved are read."""
    from vaulteval import Vault
    from vaulteval.chunks import packing
    from vaulteval.pipeline.provision import provision

    past = time.time() - 3600
    for page in (fresh_vault / "wiki").rglob("*.md"):
        os.utime(page, (past, past))
    provision(Vault(fresh_vault))  # records the signatures, now older than the catalog
    read: list[str] = []
    real = packing.read_note
    monkeypatch.setattr(packing, "read_note", lambda page, sig=None: read.append(page.rel) or real(page, sig))
    provision(Vault(fresh_vault))
    assert read == []
    with open(fresh_vault / DESCALING_NOTE, "a", encoding="utf-8") as fh:
        fh.write("\nA quokkaberry descaler.\n")
    os.utime(fresh_vault / LONG_NOTE, (past + 10, past + 10))  # touched, same bytes: read, not re-chunked
    report = provision(Vault(fresh_vault))
    assert sorted(read) == sorted([DESCALING_NOTE, LONG_NOTE])
    assert report["prefix"]["changed_pages"] == [DESCALING_NOTE]
    assert retrieve_json(fresh_vault, "quokkaberry")["candidates"][0]["page_path"] == DESCALING_NOTE


def test_a_note_swapped_for_a_symlink_while_provisioning_is_not_copied(fresh_vault: Path, tmp_path: Path) -> None:
    from vaulteval.chunks.store import note_signature, read_note
    from vaulteval.vault.vault import Page

    secret = tmp_path / "secret.md"
    secret.write_text("secretword outside the vault\n")
    page = Page(DESCALING_NOTE, str(fresh_vault / DESCALING_NOTE))
    sig = note_signature(page)
    os.unlink(page.abspath)
    os.symlink(secret, page.abspath)
    assert read_note(page, sig) is None


def _kill_at(root: Path, point: str) -> None:
    flag = root.parent / f"paused-{point.replace('#', '-')}"
    env = cli_env(VAULTEVAL_TEST_PAUSE_AT=point, VAULTEVAL_TEST_PAUSE_FILE=str(flag))
    proc = subprocess.Popen([sys.executable, "-m", "vaulteval", "provision", "--vault", str(root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + TIMEOUT
    while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert flag.exists(), f"never reached {point}: {proc.stderr.read()}"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=TIMEOUT)


def test_kill_during_a_compaction_keeps_the_previous_generation(fresh_vault: Path) -> None:
    root = fresh_vault
    query = "descaling citric acid"
    pages = sorted(p for p in (root / "wiki").rglob("*.md") if p.relative_to(root).as_posix() != DESCALING_NOTE)
    for page in pages[: len(pages) * 2 // 3]:
        page.unlink()
    before = retrieve_json(root, query)["candidates"]
    notes = snapshot(root / "wiki")
    for point in ("record-compacted#3", "segment-written"):
        _kill_at(root, point)
        assert retrieve_json(root, query)["candidates"] == before  # the previous generation, whole
        assert list((root / STORE).glob(".*.tmp")) or point != "segment-written"
    report = run_json("provision", "--vault", root)
    assert report["prefix"]["chunks_compacted"] > 0 and report["store"]["temporary"] >= 1
    assert not list((root / META_REL).rglob("*.tmp"))
    assert retrieve_json(root, query)["candidates"][0]["page_path"] == DESCALING_NOTE
    assert snapshot(root / "wiki") == notes


def _damage_block(path: Path, offset: int, length: int, how: str) -> None:
    """A flipped bit, a cut, or a stream that inflates past its block behind the right table and CRCs."""
    from vaulteval.chunks.blocks import ENTRY, HEAD

    data = bytearray(path.read_bytes())
    if how == "flip":
        data[offset + length - 3] ^= 0x10
    elif how == "cut":
        data = data[:offset + length // 2]
    else:
        n, c, u, _ = HEAD.unpack_from(data, offset)
        table = bytes(data[offset + HEAD.size:offset + HEAD.size + n * ENTRY])
        bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
        stream = bomb.compress(b"\0" * (64 * u)) + bomb.flush()
        assert len(stream) <= c
        stream += b"\0" * (c - len(stream))
        data[offset:offset + length] = HEAD.pack(n, c, u, zlib.crc32(table + stream)) + table + stream
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["flip", "cut", "forged-stream"])
def test_a_damaged_block_is_dropped_named_and_repaired(fresh_vault: Path, how: str) -> None:
    """A block that is bit-flipped, cut, or whose stream was replaced with right CRCs (a bomb that inflates past
    its table): its records are not served, index verify and doctor --deep name it, and provision writes them
    again (the notes untouched)."""
    root = fresh_vault
    query = "descaling citric acid"
    assert retrieve_json(root, query)["candidates"][0]["page_path"] == DESCALING_NOTE
    path, offset, length = record_frame(root, "c-000103:0")
    _damage_block(path, offset, length, how)
    notes = snapshot(root / "wiki")
    result = retrieve_json(root, query)
    assert DESCALING_NOTE not in [c["page_path"] for c in result["candidates"]]
    assert result["explain"]["stale_candidates_skipped"] >= 1
    line = assert_one_line_error(run_cli("index", "verify", "--vault", root), 10)
    assert "chunk store" in line and "provision" in line
    doctor = run_cli("doctor", "--json", "--deep", "--vault", root)
    assert doctor.returncode == 1 and any(f"block at byte {offset}" in p or "truncated" in p
                                          for p in json.loads(doctor.stdout)["problems"]), doctor.stdout
    report = run_json("provision", "--vault", root)
    assert report["prefix"]["chunks_written"] >= 1 and report["index"]["rejected"] == {}
    assert all(r is not None for r in chunk_records(root)) and len(chunk_records(root)) == 54
    assert run_cli("index", "verify", "--vault", root).returncode == 0
    assert retrieve_json(root, query)["candidates"][0]["page_path"] == DESCALING_NOTE
    assert snapshot(root / "wiki") == notes
