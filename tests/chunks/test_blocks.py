"""Compressed blocks of the packed store (segment format 2): round trips, damage, forgeries, bounded inflation.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_blocks.py -q``
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest

from vaulteval.chunks.blocks import ENTRY, HEAD, MAX_BLOCK_RAW, block_payloads, held_record, inflate_blocks, \
    pack_block, read_record, scan_blocks
from vaulteval.chunks.segcheck import scan_segment
from vaulteval.chunks.segments import MAGIC, decode_payload, encode, parse_location


def _record(i: int, text: str = "Descale the machine with citric acid.") -> dict:
    raw = f"{text} ({i})"
    return {"schema_version": 1, "chunk_id": f"c-{i:06d}:0", "page_path": f"wiki/n{i}.md", "page_address": f"c-{i:06d}",
            "chunk_index": 0, "raw_text": raw, "contextualized_text": f"Note {i}.\n\n{raw}", "prefix": f"Note {i}.",
            "prefix_source": "synthetic", "char_count": len(raw), "body_hash": "sha256:" + "ab" * 32,
            "page_body_hash": "sha256:" + "cd" * 32, "created_at": "2026-12-02T07:00:00Z"}


def _segment(tmp_path: Path, payloads: list[bytes]) -> tuple[int, bytes]:
    data = MAGIC + pack_block(payloads)
    path = tmp_path / "seg"
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY), data


def test_records_round_trip_through_a_block(tmp_path: Path) -> None:
    records = [_record(i) for i in range(5)]
    payloads = [encode(r) for r in records]
    fd, data = _segment(tmp_path, payloads)
    try:
        for i, (rec, payload) in enumerate(zip(records, payloads)):
            got = read_record(fd, len(MAGIC), i, len(payload), zlib.crc32(payload))
            assert got == payload and decode_payload(got) == rec
        found, problem = scan_blocks(data, len(MAGIC), deep=True)
        assert problem is None and [f[0] for f in found] == [(len(MAGIC), i) for i in range(5)]
        assert block_payloads(data, len(MAGIC)) == payloads
        # A record asked for with another length or CRC than its row holds is refused.
        assert read_record(fd, len(MAGIC), 1, len(payloads[1]) + 1, zlib.crc32(payloads[1])) is None
        assert read_record(fd, len(MAGIC), 1, len(payloads[1]), zlib.crc32(payloads[1]) ^ 1) is None
        assert read_record(fd, len(MAGIC), 5, len(payloads[1]), zlib.crc32(payloads[1])) is None
    finally:
        os.close(fd)


def test_derived_fields_are_stored_once_and_rebuilt() -> None:
    rec = _record(7)
    rec["body_hash"] = "sha256:" + hashlib.sha256(rec["raw_text"].encode()).hexdigest()
    payload = json.loads(encode(rec))
    assert {"contextualized_text", "chunk_id", "char_count", "body_hash"}.isdisjoint(payload)
    assert decode_payload(encode(rec)) == rec
    # A field that is not what the others give is kept as written, never "repaired" (the build refuses a body
    # hash that is not its text's, as before).
    odd = dict(rec, chunk_id="other:3", char_count=1, contextualized_text="elsewhere", body_hash="sha256:" + "0" * 64)
    assert decode_payload(encode(odd)) == odd
    for bad in ({"~id": 2}, {"~id": 1, "chunk_id": "x"}, {"~n": 1, "raw_text": 5}, {"~ctx": 1, "prefix": None},
                {"~bh": 1, "body_hash": "sha256:"}, {"~bh": 1, "raw_text": None}):
        assert decode_payload(json.dumps({**payload, **bad}).encode()) is None


def test_every_truncation_and_bit_flip_is_refused(tmp_path: Path) -> None:
    payloads = [encode(_record(i)) for i in range(3)]
    good = MAGIC + pack_block(payloads)
    rows = [(len(p), zlib.crc32(p)) for p in payloads]
    path = tmp_path / "seg"
    for cut in range(len(MAGIC) + 1, len(good)):  # the magic alone is an empty segment
        path.write_bytes(good[:cut])
        fd = os.open(path, os.O_RDONLY)
        try:
            assert all(read_record(fd, len(MAGIC), i, *rows[i]) is None for i in range(3))
        finally:
            os.close(fd)
        assert scan_segment(good[:cut])[1] is not None
    for at in range(len(MAGIC), len(good)):
        for bit in (0x01, 0x80):
            bad = bytearray(good)
            bad[at] ^= bit
            path.write_bytes(bytes(bad))
            fd = os.open(path, os.O_RDONLY)
            try:
                assert all(read_record(fd, len(MAGIC), i, *rows[i]) is None for i in range(3)), (at, bit)
            finally:
                os.close(fd)
            assert scan_segment(bytes(bad))[1] is not None, (at, bit)


def test_held_blocks_answer_as_the_file_does_within_their_budget(tmp_path: Path) -> None:
    """Blocks held inflated give each record exactly as ``read_record`` does, refuse the same wrong expectations,
    stop at the first damaged block (later ones are read from the file) and at the budget."""
    groups = [[encode(_record(10 * b + i)) for i in range(3)] for b in range(4)]
    blocks = [pack_block(g) for g in groups]
    offsets = [len(MAGIC) + sum(len(x) for x in blocks[:b]) for b in range(4)]
    raw_sizes = [sum(len(p) for p in g) for g in groups]
    damaged = bytearray(MAGIC + b"".join(blocks))
    damaged[offsets[2] + HEAD.size + 3 * ENTRY + 5] ^= 0x40  # the third block's stream
    path = tmp_path / "seg"
    path.write_bytes(bytes(damaged))
    fd = os.open(path, os.O_RDONLY)
    try:
        held, used = inflate_blocks(bytes(damaged), len(MAGIC), 1 << 20)
        assert sorted(held) == offsets[:2] and used == sum(raw_sizes[:2])
        for b in range(2):
            for i, payload in enumerate(groups[b]):
                expected = (len(payload), zlib.crc32(payload))
                from_file = read_record(fd, offsets[b], i, *expected)
                assert held_record(held[offsets[b]], i, *expected) == payload == from_file
                assert held_record(held[offsets[b]], i, len(payload) - 1, expected[1]) is None
                assert held_record(held[offsets[b]], i, len(payload), expected[1] ^ 1) is None
            assert held_record(held[offsets[b]], 3, len(groups[b][0]), zlib.crc32(groups[b][0])) is None
        assert read_record(fd, offsets[2], 0, len(groups[2][0]), zlib.crc32(groups[2][0])) is None
        assert read_record(fd, offsets[3], 1, len(groups[3][1]), zlib.crc32(groups[3][1])) == groups[3][1]
    finally:
        os.close(fd)
    held, used = inflate_blocks(MAGIC + b"".join(blocks), len(MAGIC), raw_sizes[0] + raw_sizes[1] + 1)
    assert sorted(held) == offsets[:2] and used <= raw_sizes[0] + raw_sizes[1] + 1
    assert inflate_blocks(MAGIC + b"".join(blocks)[:-1], len(MAGIC), 1 << 20)[0].keys() == set(offsets[:3])


def _forged(stream: bytes, lengths: list[int], crcs: list[int], raw: int) -> bytes:
    """A block with right CRCs around any stream and any table (what a forger with the format in hand writes)."""
    table = b"".join(struct.pack("<II", n, c) for n, c in zip(lengths, crcs))
    return HEAD.pack(len(lengths), len(stream), raw, zlib.crc32(table + stream)) + table + stream


def test_a_decompression_bomb_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    """A stream that inflates to 64 MiB behind a table of one small record: reading it inflates only that record;
    the deep check inflates one byte past the declared size and names the block."""
    bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = bomb.compress(b"\0" * (64 << 20)) + bomb.flush()
    record = b"\0" * 1000
    block = _forged(stream, [1000], [zlib.crc32(record)], 1000)
    # C is far above what 1,000 raw bytes can need, so the header alone is refused...
    assert scan_blocks(MAGIC + block, len(MAGIC), deep=False)[1].startswith("impossible block header")
    # ...and a forger who declares the real size is refused for declaring more than a block may hold.
    huge = _forged(stream, [64 << 20], [zlib.crc32(b"\0" * (64 << 20))], 64 << 20)
    assert (64 << 20) > MAX_BLOCK_RAW and scan_blocks(MAGIC + huge, len(MAGIC), deep=True)[1] is not None
    # A stream small enough for its header, still inflating to far more than the table says:
    small = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = small.compress(b"\0" * (4 << 20)) + small.flush()
    raw = len(stream) - 64  # the largest raw size the header check lets this stream claim
    lengths = [raw]
    block = _forged(stream, lengths, [zlib.crc32(b"\0" * raw)], raw)
    (tmp_path / "seg").write_bytes(MAGIC + block)
    fd = os.open(tmp_path / "seg", os.O_RDONLY)
    try:
        tracemalloc.start()
        got = read_record(fd, len(MAGIC), 0, raw, zlib.crc32(b"\0" * raw))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        os.close(fd)
    assert got == b"\0" * raw and decode_payload(got) is None  # its CRC holds, but it is no record
    assert peak < 4 * raw + (1 << 20)
    assert "does not inflate to its" in scan_blocks(MAGIC + block, len(MAGIC), deep=True)[1]


@pytest.mark.parametrize("stream", [b"", b"\x00", b"\xff" * 40, os.urandom(300)])
def test_a_forged_stream_with_right_checksums_is_refused(tmp_path: Path, stream: bytes) -> None:
    record = encode(_record(1))
    block = _forged(stream, [len(record)], [zlib.crc32(record)], len(record))
    (tmp_path / "seg").write_bytes(MAGIC + block)
    fd = os.open(tmp_path / "seg", os.O_RDONLY)
    try:
        assert read_record(fd, len(MAGIC), 0, len(record), zlib.crc32(record)) is None
    finally:
        os.close(fd)
    assert scan_blocks(MAGIC + block, len(MAGIC), deep=True)[1] is not None


def test_a_location_parses_and_others_do_not() -> None:
    seg = "seg-0123456789abcdef.vcs"
    assert parse_location(f"store/{seg}@8#3") == (seg, (8, 3))
    for bad in (f"store/{seg}@8", f"store/{seg}@8#", f"store/{seg}@8#99999", f"store/{seg}@7#0", f"store/{seg}@8#-1",
                f"store/{seg}@8#1#2", f"store/{seg}@x#0", f"store/seg-XYZ.vcs@8#0", f"store/{seg}@８#0"):
        assert parse_location(bad) is None, bad
    assert ENTRY == 8
