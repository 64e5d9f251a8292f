"""The packed chunk store: migration from one file per record, compaction, stat signatures, kills mid-write.

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
    to_loose_layout,
    to_segment_format_1,
)

STORE = Path(META_REL) / "store"
TIMEOUT = 120


def _segments(root: Path) -> set[str]:
    return {p.name for p in (root / STORE).iterdir()}


def test_the_one_file_per_record_layout_migrates_with_one_provision(fresh_vault: Path) -> None:
    root = fresh_vault
    assert to_loose_layout(root) == 54
    served = retrieve_json(root, "descaling citric acid")  # the old layout is served until the migration
    assert served["candidates"][0]["page_path"] == DESCALING_NOTE
    # A record whose prefix came from elsewhere (an LLM, say) must be carried over, not written again.
    path = root / META_REL / "chunks" / "c-000103" / "chunk-000.json"
    rec = json.loads(path.read_text())
    rec["prefix"] = "Carried over prefix."
    rec["contextualized_text"] = f"{rec['prefix']}\n\n{rec['raw_text']}"
    path.write_text(json.dumps(rec), encoding="utf-8")
    theirs = root / ".vault-meta" / "chunks" / "c-000103" / "chunk-000.json"  # claude-obsidian's own record
    theirs.parent.mkdir(parents=True)
    theirs.write_text('{"page_path": "wiki/howto/Descaling.md", "raw_text": "theirs"}')
    notes, shared = snapshot(root / "wiki"), snapshot(root / ".vault-meta" / "chunks")

    proc = run_cli("provision", "--vault", root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "vaulteval: migrated the chunk records to the packed store (.vault-meta/vaulteval/store/): carried over "
        "54, removed 54 loose record file(s) of the old layout"]
    assert json.loads(proc.stdout)["migrated_store"] == {"records": 54, "removed": 54}
    assert not (root / META_REL / "chunks").exists() and len(_segments(root)) == 1
    assert records_for(root, DESCALING_NOTE)[0]["prefix"] == "Carried over prefix."
    assert snapshot(root / "wiki") == notes and snapshot(root / ".vault-meta" / "chunks") == shared
    after = retrieve_json(root, "descaling citric acid")["candidates"]
    assert [c["chunk_id"] for c in after][1:] == [c["chunk_id"] for c in served["candidates"]][1:]
    assert after[0]["page_path"] == DESCALING_NOTE
    again = run_cli("provision", "--vault", root)
    assert again.returncode == 0 and again.stderr == ""


def test_a_store_of_segment_format_1_is_converted_with_one_provision(fresh_vault: Path) -> None:
    """The uncompressed store of the previous format is served until the next provision, which copies every
    record into compressed blocks, says so in one line and leaves the notes and the rankings as they were."""
    root = fresh_vault
    before = chunk_records(root)
    assert to_segment_format_1(root) == 54
    (old,) = _segments(root)
    assert chunk_records(root) == before
    query = "descaling citric acid"
    served = retrieve_json(root, query)["candidates"]  # format 1 is still read
    assert served[0]["page_path"] == DESCALING_NOTE
    notes = snapshot(root / "wiki")

    proc = run_cli("provision", "--vault", root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "vaulteval: converted the packed chunk store to compressed blocks (segment format 2): carried over 54 "
        "record(s)"]
    assert json.loads(proc.stdout)["converted_store"] == {"records": 54}
    assert all("#" in loc[0] and old not in loc[0] for loc in chunk_locations(root))
    assert chunk_records(root) == before  # every record carried over as it was (LLM prefixes included)
    assert snapshot(root / "wiki") == notes
    # The same provision migrated the JSON catalog of that time (schema 3) to the binary one.
    assert not (root / META_REL / "chunk-catalog.json").exists() and (root / META_REL / "chunk-catalog.vcc").is_file()
    after = retrieve_json(root, query)["candidates"]
    assert [(c["chunk_id"], c["score"]) for c in after] == [(c["chunk_id"], c["score"]) for c in served]
    again = run_cli("provision", "--vault", root)
    assert again.returncode == 0 and again.stderr == ""
    assert old not in _segments(root)  # removed once no generation reads it
    assert (root / STORE / next(iter(_segments(root)))).read_bytes()[:8] == b"VEVCHS\x00\x02"


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
