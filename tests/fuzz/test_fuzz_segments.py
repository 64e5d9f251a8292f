"""Fuzz the packed store's compressed segments (format 2): damaged, cut and forged bytes.

Each example damages the segment of a copy of a provisioned vault: a flipped
byte, a cut, other bytes over a stretch, or a block forged with right CRCs
around any table and stream. A record read back is then the one that was
written or nothing, and a reader that holds the segment's blocks inflated (a
warm ``Retriever``'s) answers exactly as one that reads the file; ``retrieve``
serves only verified chunks (exit 0, or 10 naming ``provision`` when none is left);
``index verify`` is exit 0 or 10 and ``doctor --deep`` 0 or 1, each in one
line; ``provision`` repairs the store. Never a traceback, never a changed note.

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/fuzz/test_fuzz_segments.py -q``
"""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaulteval import Vault
from vaulteval.chunks.blocks import HEAD
from vaulteval.chunks.segments import HOLD_BYTES, StoreReader
from vaulteval.pipeline.provision import provision
from vaulteval.vault.metadir import META_REL, NotRegularFile

from fuzzkit import Scratch, cli_ok, count, fuzz_settings
from pipeline_fixtures import chunk_locations, chunk_records, snapshot, write_note

NOTES = {f"wiki/Note {i}.md": f"# Note {i}\n\nDescale the espresso machine, step {i}, with citric acid.\n\n"
         + "A longer paragraph about grinders and water hardness. " * 12 for i in range(40)}

forged_block = st.builds(
    lambda n, c, u, table, stream, fix: (n, c, u, table, stream, fix),
    st.integers(0, 5000), st.integers(0, 1 << 20), st.integers(0, 1 << 25),
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, (1 << 32) - 1)), max_size=6),
    st.one_of(st.binary(max_size=300), st.integers(1, 1 << 22).map(
        lambda k: zlib.compressobj(9, zlib.DEFLATED, -15).compress(b"\0" * k))),
    st.booleans())

damage = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(st.just("overwrite"), st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("forge"), st.floats(0, 1, exclude_max=True), forged_block),
)


@pytest.fixture(scope="module")
def packed_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("segments") / "v"
    for rel, text in NOTES.items():
        write_note(root, rel, text)
    provision(Vault(root))
    return root


def _damaged(raw: bytes, blocks: list[int], how: tuple) -> bytes:
    kind, where, value = how
    i = 8 + int(where * (len(raw) - 8))
    if kind == "flip":
        return raw[:i] + bytes([raw[i] ^ value]) + raw[i + 1:]
    if kind == "cut":
        return raw[:i]
    if kind == "overwrite":
        return raw[:i] + value + raw[i + len(value):]
    at = blocks[int(where * len(blocks))]  # a block's place, forged with its CRC right over any table and stream
    n, c, u, table, stream, fix = value
    flat = b"".join(struct.pack("<II", *t) for t in table)
    if fix:  # numbers that agree with what follows, so only the stream and the table can be wrong
        n, c = len(table), len(stream)
    head = HEAD.pack(n % (1 << 32), c, u, zlib.crc32(flat + stream))
    return raw[:at] + head + flat + stream + raw[at + HEAD.size + len(flat) + len(stream):]


@fuzz_settings()
@given(damage)
def test_a_damaged_segment_serves_only_its_own_records(packed_vault: Path, tmp_path: Path, how: tuple) -> None:
    with Scratch(tmp_path) as scratch:
        root = Path(shutil.copytree(packed_vault, scratch / "v", symlinks=True))
        before = chunk_records(root)
        locations = chunk_locations(root)
        (segment,) = (root / META_REL / "store").iterdir()
        blocks = sorted({int(loc[0].split("@")[1].split("#")[0]) for loc in locations})
        segment.write_bytes(_damaged(segment.read_bytes(), blocks, how))
        count("chunk segments")
        reader, holding = StoreReader(root / META_REL), StoreReader(root / META_REL)
        try:
            try:
                holding.pin([segment.name])
                holding.hold(HOLD_BYTES)
            except NotRegularFile:
                pass  # its magic was damaged: the segment is refused whole, held or not
            for (where, size, crc, _), rec in zip(locations, before):
                got = reader.record(where, size, crc)
                assert got in (rec, None)
                assert holding.record(where, size, crc) == got
        finally:
            reader.close()
            holding.close()
        notes = snapshot(root / "wiki")
        code, _, err = cli_ok("retrieve", "--vault", root, "--no-rerank", "descale espresso citric", codes={0, 10})
        if code == 10:  # every candidate dropped: the store is named, with the command that repairs it
            assert "provision" in err
        cli_ok("index", "verify", "--vault", root, codes={0, 10})
        cli_ok("doctor", "--vault", root, "--deep", codes={0, 1})
        cli_ok("provision", "--vault", root, codes={0})
        assert chunk_records(root) and None not in chunk_records(root)
        cli_ok("index", "verify", "--vault", root, codes={0})
        code, out, _ = cli_ok("retrieve", "--vault", root, "--no-rerank", "descale espresso citric", codes={0})
        assert "Note " in out
        assert snapshot(root / "wiki") == notes
