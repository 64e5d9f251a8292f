"""The index's document rows: compact rows (raw hashes, the segment by its place) and the JSON rows they fall back to.

Usage: ``.venv/bin/python -m pytest tests/index/test_docrows.py -q``
"""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaulteval.index.docmeta import ROW_COMPACT, DocMeta

from pipeline_fixtures import fresh_vault  # noqa: F401

SEG = "seg-0123456789abcdef.vcs"
STORE = ["seg-0000000000000000.vcs", SEG]
POSITIONS = {name: i for i, name in enumerate(STORE)}


def _hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _doc(**changes) -> DocMeta:
    base = DocMeta("c-000103:2", f"store/{SEG}@4096#17", "wiki/howto/Descaling é.md", "c-000103", 2, _hash("a"),
                   _hash("b"), _hash("c"), 1790, 3151209531)
    return base._replace(**changes)


def test_a_compact_row_round_trips_and_is_smaller() -> None:
    doc = _doc()
    row = doc.to_row(POSITIONS)
    assert row[:1] == ROW_COMPACT and DocMeta.from_row(row, STORE) == doc
    assert len(row) < len(doc.to_json()) / 2


@pytest.mark.parametrize("changes", [
    {"chunk_file": "chunks/c-000103/chunk-002.json"},          # not a packed-store location
    {"chunk_file": f"store/{SEG}@4096"},                         # no record number
    {"chunk_file": "store/seg-ffffffffffffffff.vcs@8#0"},        # a segment the header does not list
    {"chunk_file": f"store/{SEG}@04096#17"},                     # not the canonical spelling
    {"body_hash": "sha256:" + "AB" * 32},                        # upper-case hex
    {"page_body_hash": "sha256:"},                               # what a catalog without hash holds
    {"context_hash": "md5:x"},
    {"chunk_id": "c-000103:3"},                                  # an id the address and index do not give
    {"mtime_ns": 1796120283519482271},                           # past a CRC-32
    {"page_address": "a" * 300},
])
def test_a_row_that_does_not_fit_the_compact_shape_is_json(changes: dict) -> None:
    doc = _doc(**changes)
    row = doc.to_row(POSITIONS)
    assert row[:1] == b"{" and DocMeta.from_row(row, STORE) == doc


def test_a_damaged_or_foreign_row_is_a_value_error() -> None:
    row = _doc().to_row(POSITIONS)
    for bad in (b"", b"\x02" + row[1:], row[:40], row[:-len("wiki/howto/Descaling é.md") - 9] + b"\xff\xfe"):
        with pytest.raises(ValueError):
            DocMeta.from_row(bad, STORE)
    with pytest.raises(ValueError):  # a segment place beyond the header's list
        DocMeta.from_row(row, STORE[:1])


text = st.text(st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(page=text, address=st.text(st.characters(codec="utf-8"), min_size=1, max_size=20),
       ci=st.integers(0, 2 ** 40), size=st.integers(0, 2 ** 40), crc=st.integers(0, 2 ** 40),
       block=st.integers(8, 2 ** 50), number=st.integers(0, 70000), digests=st.lists(text, min_size=3, max_size=3))
def test_any_row_round_trips(page, address, ci, size, crc, block, number, digests) -> None:
    doc = DocMeta(f"{address}:{ci}", f"store/{SEG}@{block}#{number}", page, address, ci,
                  *[_hash(d) for d in digests], size, crc)
    assert DocMeta.from_row(doc.to_row(POSITIONS), STORE) == doc
    assert json.loads(doc.to_json())["id"] == doc.chunk_id


def test_rows_carried_into_an_incremental_build_are_the_rows_it_would_write(fresh_vault) -> None:
    """After an edit (a new segment, so the old ones may change places in ``store``) the index's rows are byte
    for byte what encoding every row afresh gives."""
    from vaulteval import Vault
    from vaulteval.index.reader import open_index
    from vaulteval.pipeline.provision import provision

    note = next(p for p in sorted((fresh_vault / "wiki").rglob("*.md")))
    note.write_text(note.read_text(encoding="utf-8") + "\nAn added line.\n", encoding="utf-8")
    report = provision(Vault(fresh_vault))
    assert 0 < report["index"]["reused"] < report["index"]["docs"]
    index = open_index(Vault(fresh_vault))
    store = index.header["store"]
    assert len(store) == 2
    positions = {name: i for i, name in enumerate(store)}
    assert bytes(index.section("docs")) == b"".join(d.to_row(positions) for d in index.all_docs())
