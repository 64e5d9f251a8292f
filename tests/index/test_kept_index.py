"""A provision after which no note changed keeps the files in service; one that finds them other than a build
would write them rewrites them; rows of unmoved records are copied as they were.

Usage: ``.venv/bin/python -m pytest tests/index/test_kept_index.py -q``
"""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import DESCALING_NOTE, fresh_vault, index_file  # noqa: F401

FILES = ("bm25/index.vti", "bm25/fields.vti", "chunk-catalog.vcc")


def _old_notes(root: Path) -> None:
    """Every note last modified an hour ago: the catalog trusts its stat signature (no racy window)."""
    past = time.time() - 3600
    for page in (root / "wiki").rglob("*.md"):
        os.utime(page, (past, past))


def _state(root: Path) -> dict[str, tuple[int, int, bytes]]:
    out = {}
    for name in FILES:
        st = (root / META_REL / name).stat()
        out[name] = (st.st_ino, st.st_mtime_ns, (root / META_REL / name).read_bytes())
    return out


def _provision(root: Path) -> dict:
    from vaulteval import Vault
    from vaulteval.pipeline.provision import provision

    return provision(Vault(root))


def test_nothing_changed_keeps_the_index_the_field_index_and_the_catalog(fresh_vault: Path) -> None:
    _old_notes(fresh_vault)
    _provision(fresh_vault)
    before = _state(fresh_vault)
    report = _provision(fresh_vault)
    assert report["index"]["unchanged"] is True and report["index"]["reused"] == report["index"]["docs"] == 54
    assert _state(fresh_vault) == before  # not even written again: same file, same time, same bytes
    with open(fresh_vault / DESCALING_NOTE, "a", encoding="utf-8") as fh:
        fh.write("\nA quokkaberry descaler works on limescale.\n")
    report = _provision(fresh_vault)
    assert report["index"]["unchanged"] is False and report["index"]["tokenized"] >= 1
    after = _state(fresh_vault)
    assert all(after[name][2] != before[name][2] for name in FILES)


def _rewrite(root: Path, edit) -> None:
    """The index in service read whole, ``edit(header, arrays)`` applied, and published by vaulteval's own writer:
    every checksum right, and (for the edits below) every check of ``BM25Index.verify`` passed."""
    from vaulteval.index.file import read_sections, write_sections
    from vaulteval.vault.metadir import MetaDir
    from vaulteval.vault.vault import Vault

    header, sections = read_sections(index_file(root))
    arrays = {name: bytes(sections[name]) if sections.dtype(name) == "bytes" else sections[name].copy()
              for name in sections}
    header = {k: v for k, v in header.items()
              if k not in ("schema_version", "block_size", "n_blocks", "blocks_crc32", "sections", "body_size")}
    edit(header, arrays)
    with MetaDir.open(Vault(root)) as meta, meta.sub("bm25") as folder:
        write_sections(folder, "index.vti", header, arrays)


def _postings_reversed(header: dict, arrays: dict) -> None:
    """The documents of the first term with two or more postings, in descending order (with their tfs)."""
    off = arrays["post_offsets"]
    t = int(np.flatnonzero(np.diff(off) >= 2)[0])
    a, b = int(off[t]), int(off[t + 1])
    arrays["post_docs"][a:b] = arrays["post_docs"][a:b][::-1].copy()
    arrays["post_tfs"][a:b] = arrays["post_tfs"][a:b][::-1].copy()


def _term_without_postings(header: dict, arrays: dict) -> None:
    """A term ``zzzz-unused`` at the end of the vocabulary, with an empty posting list."""
    arrays["terms"] = arrays["terms"] + b"zzzz-unused\n"
    arrays["term_offsets"] = np.append(arrays["term_offsets"], len(arrays["terms"]))
    arrays["post_offsets"] = np.append(arrays["post_offsets"], arrays["post_offsets"][-1])
    header["n_terms"] += 1


def _last_term_renamed(header: dict, arrays: dict) -> None:
    """The last term's bytes replaced by as many ``!``: a term that sorts first, left at the end."""
    start, end = int(arrays["term_offsets"][-2]), int(arrays["term_offsets"][-1])
    arrays["terms"] = arrays["terms"][:start] + b"!" * (end - start - 1) + b"\n"


NOT_AS_BUILT = {
    "terms-out-of-order": _last_term_renamed,
    "postings-out-of-order": _postings_reversed,
    "term-without-postings": _term_without_postings,
    "other-chunk-params": lambda h, a: h.update(chunk_params={**h["chunk_params"], "target": 1}),
    "unknown-header-key": lambda h, a: h.update(note="written by hand"),
}


@pytest.mark.parametrize("shape", sorted(NOT_AS_BUILT))
def test_an_index_other_than_a_build_writes_is_rewritten_as_a_full_build(fresh_vault: Path, tmp_path: Path,
                                                                          shape: str) -> None:
    from vaulteval.index.reader import BM25Index

    _old_notes(fresh_vault)
    _provision(fresh_vault)
    _rewrite(fresh_vault, NOT_AS_BUILT[shape])
    BM25Index(index_file(fresh_vault)).verify()  # sound as far as its checks go
    report = _provision(fresh_vault)
    assert report["index"]["unchanged"] is False
    terms = BM25Index(index_file(fresh_vault)).all_terms()
    assert terms == sorted(set(terms))
    if shape == "terms-out-of-order":
        return  # its postings are reused under the forged term (checksums and meaning hold): sorted, not repaired
    full = tmp_path / "full"
    shutil.copytree(fresh_vault, full, ignore=shutil.ignore_patterns(".vault-meta"))
    _provision(full)
    for root in (fresh_vault, full):
        index = BM25Index(index_file(root))
        index.verify()
    got, want = BM25Index(index_file(fresh_vault)), BM25Index(index_file(full))
    for name in ("terms", "term_offsets", "post_offsets", "post_docs", "post_tfs", "doc_len"):
        assert bytes(got.section(name)) == bytes(want.section(name)), name


def test_a_field_file_other_than_a_build_writes_is_rewritten(fresh_vault: Path) -> None:
    from vaulteval.index.fields import fields_path
    from vaulteval.index.file import read_sections, write_sections
    from vaulteval.vault.metadir import MetaDir
    from vaulteval.vault.vault import Vault

    _old_notes(fresh_vault)
    _provision(fresh_vault)
    path = fields_path(fresh_vault / META_REL)
    built = path.read_bytes()
    header, sections = read_sections(path)
    arrays = {name: bytes(sections[name]) if sections.dtype(name) == "bytes" else sections[name].copy()
              for name in sections}
    off, docs = arrays["title.post_offsets"], arrays["title.post_docs"]
    t = int(np.flatnonzero(np.diff(off) >= 2)[0])  # a title term of two or more chunks: documents reversed
    docs[int(off[t]):int(off[t + 1])] = docs[int(off[t]):int(off[t + 1])][::-1].copy()
    header = {k: v for k, v in header.items()
              if k not in ("schema_version", "block_size", "n_blocks", "blocks_crc32", "sections", "body_size")}
    with MetaDir.open(Vault(fresh_vault)) as meta, meta.sub("bm25") as folder:
        write_sections(folder, "fields.vti", header, arrays)
    assert path.read_bytes() != built
    report = _provision(fresh_vault)
    assert report["index"]["unchanged"] is True  # the main index was as built; its field file was not
    assert path.read_bytes() == built


def test_rows_of_unmoved_records_are_copied_as_each_row_would_be_encoded(fresh_vault: Path) -> None:
    from vaulteval.index.docmeta import ROW_COMPACT
    from vaulteval.index.reader import BM25Index
    from vaulteval.index.rowcopy import rows_section

    old = BM25Index(index_file(fresh_vault))
    old_docs = old.all_docs()
    blob, offsets = bytes(old.section("docs")), old.section("doc_offsets").tolist()
    rng = random.Random(7)
    for trial in range(20):
        store = list(old.header["store"])
        if trial % 2:  # a new segment named before the others: every place shifts
            store = ["seg-0000000000000000.vcs", *store]
        positions = {name: i for i, name in enumerate(store)}
        docs, pairs = [], []
        for i, d in enumerate(old_docs):
            if rng.random() < 0.2:
                continue  # dropped
            if rng.random() < 0.2:  # moved elsewhere: encoded again
                d = d._replace(chunk_file=d.chunk_file.replace("#", "#1"))
            pairs.append((i, len(docs)))
            docs.append(d)
        got, got_off = rows_section(old, old_docs, docs, pairs, positions)
        want = []
        for i, j in pairs:
            row = blob[offsets[i]:offsets[i + 1]]
            if old_docs[i].chunk_file != docs[j].chunk_file:
                row = docs[j].to_row(positions)
            elif row[:1] == ROW_COMPACT:
                row = row[:1] + positions[old.header["store"][int.from_bytes(row[1:3], "little")]].to_bytes(
                    2, "little") + row[3:]
            want.append(row)
        assert got == b"".join(want)
        assert got_off.tolist() == [0, *np.cumsum([len(r) for r in want]).tolist()]
