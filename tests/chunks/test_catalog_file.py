"""The binary chunk catalog: round trip, migration from the JSON catalog, and incremental provisions that write
exactly the index a full build writes.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_catalog_file.py -q``
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from vaulteval.chunks import catalogfile
from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import DESCALING_NOTE, LONG_NOTE, chunk_records, fresh_vault, snapshot  # noqa: F401

SEG = [f"seg-{i:016x}.vcs" for i in range(3)]
SETTINGS = {"params": {"target": 2000, "overlap": 200, "hard_max": 4000}, "prefix": {"tier": "synthetic", "model": None},
            "chunker": 3}

entries = st.lists(st.tuples(
    st.text(min_size=1, max_size=12).filter(lambda t: "\0" not in t),
    st.one_of(st.just(""), st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex())),
    st.one_of(st.none(), st.tuples(st.integers(0, 2**62), st.integers(0, 2**62), st.integers(-2**62, 2**62))),
    st.lists(st.tuples(st.sampled_from(SEG), st.integers(8, 2**40), st.integers(0, 4095),
                       st.integers(0, 1 << 20), st.integers(0, 2**32 - 1)), max_size=4)),
    max_size=8, unique_by=lambda e: e[0])


@settings(max_examples=150, deadline=None, database=None)
@given(entries)
def test_a_catalog_reads_back_as_written(items) -> None:
    rows = [(rel, f"a{n:03d}", h, sig, len(recs), [[f"store/{s}@{o}#{k}", z, c] for s, o, k, z, c in recs])
            for n, (rel, h, sig, recs) in enumerate(items)]
    data, table = catalogfile.encode(SETTINGS, rows)
    got_settings, got = catalogfile.decode(data)
    assert got_settings == SETTINGS
    for t in (table, got):
        assert [(t.rels[i], t.addresses[i], t.hashes[i], t.stats[i], t.chunks[i], t.records(i)) for i in range(len(t))] \
            == [(*row[:3], tuple(row[3]) if row[3] is not None else None, *row[4:]) for row in rows]
    # Segments no record names are left out.
    assert got.segments == sorted({s for *_, recs in items for s, *_ in recs})
    assert catalogfile.read_segments(data) == got.segments
    # Copying the rows as numbers gives the same file.
    assert catalogfile.encode(SETTINGS, [(*row[:5], (got, i)) for i, row in enumerate(rows)])[0] == data


@settings(max_examples=300, deadline=None, database=None)
@given(st.integers(0, 10**6), st.integers(0, 7), st.booleans())
def test_any_cut_or_flipped_bit_is_refused(at: int, bit: int, cut: bool) -> None:
    rows = [("wiki/a.md", "a", "sha256:" + "ab" * 32, (1, 2, 3), 1, [["store/" + SEG[1] + "@8#3", 20, 5]]),
            ("wiki/b.md", "b", "", None, 0, [])]
    data, _ = catalogfile.encode(SETTINGS, rows)
    at %= len(data)
    bad = data[:at] if cut else data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1:]
    with pytest.raises(catalogfile.CatalogFileError):
        catalogfile.decode(bad)


def _old_notes(root: Path) -> None:
    past = time.time() - 3600
    for page in (root / "wiki").rglob("*.md"):
        os.utime(page, (past, past))


def _index_bytes(meta: Path) -> dict:
    from vaulteval.index.fields import fields_path
    from vaulteval.index.docmeta import parse_rows
    from vaulteval.index.file import read_sections
    from vaulteval.index.location import index_path

    out = {}
    for path in (index_path(meta), fields_path(meta)):
        header, body = read_sections(path)
        # Rows name their record's location, which differs between stores (and so do the lengths and checksums
        # that depend on them); everything else must agree, the rows' other fields included.
        located = ("docs", "doc_offsets")
        out[path.name] = ({k: v for k, v in header.items() if k not in ("built_at", "index_identity", "store",
                                                                         "blocks_crc32", "body_size", "sections")},
                          {name: entry[2:5] for name, entry in header["sections"].items() if name not in located},
                          {name: bytes(body.raw(name)) for name in body if name not in located})
        rows = parse_rows(bytes(body.raw("docs")), body["doc_offsets"].tolist(), header) \
            if "docs" in body else []
        out[path.name + ":rows"] = [r._replace(chunk_file=None, size=None, mtime_ns=None) for r in rows]
    return out


def test_an_incremental_provision_after_edits_writes_the_index_a_full_build_writes(fresh_vault: Path,
                                                                                   tmp_path: Path) -> None:
    from vaulteval import Vault
    from vaulteval.pipeline.provision import provision

    _old_notes(fresh_vault)
    provision(Vault(fresh_vault))
    wiki = fresh_vault / "wiki"
    with open(fresh_vault / DESCALING_NOTE, "a", encoding="utf-8") as fh:  # an edit
        fh.write("\nA quokkaberry descaler works on limescale.\n")
    (fresh_vault / LONG_NOTE).write_text((fresh_vault / LONG_NOTE).read_text()[:400])  # fewer chunks
    victim = sorted(p for p in wiki.rglob("*.md") if p.relative_to(fresh_vault).as_posix()
                    not in (DESCALING_NOTE, LONG_NOTE))[0]
    victim.unlink()  # a removed page
    (wiki / "aa-new.md").write_text("# Zebra crossings\n\nA brand new page about zebra crossings.\n")  # a new page
    report = provision(Vault(fresh_vault))
    assert report["index"]["reused"] > 0 and report["index"]["tokenized"] > 0
    again = provision(Vault(fresh_vault))  # nothing changed: nothing read, the same index
    assert again["prefix"]["pages_changed"] == 0 and again["index"]["tokenized"] == 0
    incremental = _index_bytes(fresh_vault / META_REL)

    full = tmp_path / "full"
    shutil.copytree(fresh_vault, full, ignore=shutil.ignore_patterns(".vault-meta"))
    provision(Vault(full))
    assert _index_bytes(full / META_REL) == incremental



@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.one_of(
    st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()),
    st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex().upper()),
    st.sampled_from(["", "md5:x", "sha256:" + "sha256:" + "a" * 57, "sha256:" + "0" * 63 + "g",
                     "sha256:" + "ab" * 31 + " abc", "x" * 71])), max_size=6))
def test_hashes_pack_as_each_would_alone(hashes: list[str]) -> None:
    """The packing of a catalog's hashes in one decode is the page-by-page packing, whatever the hashes hold."""
    assert catalogfile._digests(hashes) == b"".join(catalogfile._digest(h) for h in hashes)
