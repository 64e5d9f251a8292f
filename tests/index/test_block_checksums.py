"""Block checksums: a query checks what it reads, `doctor --deep` and `index verify` check every byte.

Usage: ``.venv/bin/python -m pytest tests/index/test_block_checksums.py -q``

The vault has 600 notes, each with one word of its own (``u0042``) and 80
shared words, so the posting and document sections span many 16 KiB blocks
while the vocabulary and offset sections stay small (checked when the file is
opened). Every test flips one byte of a copy of the provisioned vault.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from vaulteval import Vault
from vaulteval.index import file as index_file_module
from vaulteval.index.file import BLOCK_SIZE, SMALL_SECTION, read_header
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import Retriever

from pipeline_fixtures import index_file, run_main, write_note

N_NOTES = 600
REBUILD = "rebuild with: vaulteval provision --vault"
LARGE = ("post_docs", "post_tfs", "docs")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blocks") / "vault"
    rng = random.Random(14)
    pool = [f"c{j:03d}" for j in range(400)]
    for i in range(N_NOTES):
        words = " ".join(rng.sample(pool, 80))
        write_note(root, f"wiki/n{i:04d}.md", f"Note about u{i:04d} and more.\n\n{words}\n")
    provision(Vault(root))
    return root


@pytest.fixture()
def vault(built: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "vault"
    shutil.copytree(built, dest)
    return dest


def _sections(root: Path):
    return Retriever(Vault(root)).index()._s


def _flip(root: Path, offset: int) -> None:
    path = index_file(root)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x5A
    path.write_bytes(bytes(data))


def _posting_of(root: Path, term: str) -> int:
    index = Retriever(Vault(root)).index()
    tid = index.term_id(term)
    assert tid >= 0
    return int(index.section("post_offsets")[tid])


def _doc_of(root: Path, term: str) -> int:
    index = Retriever(Vault(root)).index()
    return int(index.postings(index.term_id(term))[0][0])


def _retrieve(root: Path, query: str) -> tuple[int, str, str]:
    return run_main("retrieve", "--vault", root, query, "--no-rerank")


def _assert_exit_10(code: int, out: str, err: str, root: Path) -> str:
    assert code == 10 and out == "", (code, err)
    lines = err.splitlines()
    assert len(lines) == 1 and f"{REBUILD} {root}" in lines[0], err
    return lines[0]


def test_the_fixture_has_large_and_small_sections(built: Path) -> None:
    layout = read_header(index_file(built))["sections"]
    sizes = {name: entry[1] for name, entry in layout.items()}
    assert all(sizes[name] > 3 * BLOCK_SIZE for name in LARGE), sizes
    assert all(size <= SMALL_SECTION for name, size in sizes.items() if name not in LARGE), sizes
    assert _retrieve(built, "u0042")[0] == 0


@pytest.mark.parametrize("section", ["terms", "term_offsets", "post_offsets", "post_docs", "post_tfs", "doc_len",
                                     "docs", "doc_offsets"])
def test_a_flipped_byte_in_any_section_is_found(vault: Path, section: str) -> None:
    sections = _sections(vault)
    nbytes = read_header(index_file(vault))["sections"][section][1]
    offset = sections.file_offset(section) + nbytes // 2
    _flip(vault, offset)
    code, out, err = run_main("index", "verify", "--vault", vault)
    line = _assert_exit_10(code, out, err, vault)
    block = (offset - sections.file_offset(section)) // BLOCK_SIZE
    assert f"section {section!r} block {block} of" in line
    code, out, _ = run_main("doctor", "--deep", "--json", "--vault", vault)
    report = json.loads(out)
    assert code == 1 and report["state"] == "degraded"
    assert (report["bad_section"], report["bad_block"]) == (section, block)
    if section not in LARGE:  # small sections are checked when the index is opened
        _assert_exit_10(*_retrieve(vault, "u0042"), vault)


@pytest.mark.parametrize("section", ["post_docs", "post_tfs"])
def test_a_corrupt_posting_block_the_query_reads_gives_exit_10(vault: Path, section: str) -> None:
    pos = _posting_of(vault, "u0042")
    _flip(vault, _sections(vault).file_offset(section, pos))
    line = _assert_exit_10(*_retrieve(vault, "u0042"), vault)
    assert f"section {section!r}" in line


def test_a_corrupt_document_line_the_query_reads_gives_exit_10(vault: Path) -> None:
    doc = _doc_of(vault, "u0042")
    sections = _sections(vault)
    start = int(sections["doc_offsets"][doc])
    _flip(vault, sections.file_offset("docs", start + 5))
    line = _assert_exit_10(*_retrieve(vault, "u0042"), vault)
    assert "section 'docs'" in line


def test_a_corrupt_block_the_query_does_not_read_is_found_by_doctor_deep(vault: Path) -> None:
    sections = _sections(vault)
    far, near = _posting_of(vault, "u0599"), _posting_of(vault, "c000")  # the last term and the first
    far_block, near_block = sections.block_of("post_docs", far), sections.block_of("post_docs", near)
    assert far_block != near_block
    _flip(vault, sections.file_offset("post_docs", far))

    code, out, err = _retrieve(vault, "c000")
    assert code == 0, err
    assert len(json.loads(out)["candidates"]) == 5
    code, out, _ = run_main("doctor", "--json", "--vault", vault)  # the quick doctor reads no postings
    assert code == 0 and json.loads(out)["state"] == "verified"

    code, out, _ = run_main("doctor", "--deep", "--json", "--vault", vault)
    report = json.loads(out)
    assert code == 1 and report["state"] == "degraded" and report["deep"] is True
    assert (report["bad_section"], report["bad_block"]) == ("post_docs", far_block)
    assert any(f"'post_docs' block {far_block} of" in p for p in report["problems"])
    line = _assert_exit_10(*run_main("index", "verify", "--vault", vault), vault)
    assert f"'post_docs' block {far_block} of" in line
    _assert_exit_10(*_retrieve(vault, "u0599"), vault)  # and the query that reads it is refused


def test_a_sound_index_verifies(built: Path) -> None:
    code, out, err = run_main("index", "verify", "--vault", built)
    assert code == 0, err
    report = json.loads(out)
    assert report["blocks"] == sum(s["blocks"] for s in report["sections"].values()) > 20
    code, out, _ = run_main("doctor", "--deep", "--json", "--vault", built)
    assert code == 0 and json.loads(out)["state"] == "verified"


def test_checked_blocks_are_not_hashed_again(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _doc_of(built, "u0042")
    index = Retriever(Vault(built)).index()
    opened = index._s.checked_blocks()
    total = read_header(index_file(built))["n_blocks"]
    index.search("u0042 c001", k=5)
    index.doc(doc)
    after_first = index._s.checked_blocks()
    assert opened < after_first < total  # a query checks only some blocks
    calls = []
    real = index_file_module.zlib.crc32
    monkeypatch.setattr(index_file_module.zlib, "crc32", lambda *a: calls.append(1) or real(*a))
    index.search("u0042 c001", k=5)
    index.doc(doc)
    assert calls == [] and index._s.checked_blocks() == after_first


def test_an_index_of_the_previous_format_is_refused_with_the_rebuild_command(vault: Path) -> None:
    path = index_file(vault)
    data = path.read_bytes()
    path.write_bytes(data[:6] + b"\x00\x01" + data[8:])
    line = _assert_exit_10(*_retrieve(vault, "u0042"), vault)
    assert "format 1 is not 2" in line


def test_the_field_index_has_block_checksums_and_verify_and_doctor_deep_check_it(vault: Path) -> None:
    """fields.vti is written in the same format: a flipped byte in it is found by `index verify` (exit 10,
    naming the file and the command that rebuilds it) and `doctor --deep` (a problem), while a plain
    retrieve, which never reads it, still answers; a field-weighted retrieve falls back to plain BM25."""
    from vaulteval.index.fields import fields_path

    path = fields_path(Vault(vault).meta_dir)
    header = read_header(path)
    assert header["kind"] == "vaulteval-fields" and header["n_blocks"] > 0 and "blocks_crc32" in header
    code, out, err = run_main("index", "verify", "--vault", vault)
    assert code == 0 and json.loads(out)["fields"]["blocks"] == header["n_blocks"], err
    data = bytearray(path.read_bytes())
    data[index_file_module.read_sections(path)[1].file_offset("title.doc_len", 3)] ^= 0x5A  # read by field queries
    path.write_bytes(bytes(data))
    code, out, err = run_main("index", "verify", "--vault", vault)
    assert code == 10 and out == "" and "fields: " in err and "fails its checksum" in err, (code, err)
    assert f"{REBUILD} {vault}" in err
    code, out, err = run_main("doctor", "--vault", vault, "--deep", "--json")
    report = json.loads(out)
    assert code == 1 and report["state"] == "configured"
    assert any(p.startswith("fields: ") and "checksum" in p for p in report["problems"]), report["problems"]
    assert _retrieve(vault, "u0042")[0] == 0
    code, out, err = run_main("retrieve", "--vault", vault, "u0042", "--no-rerank", "--strategy", "bm25:w_title=2")
    assert code == 0 and json.loads(out)["strategy"] == "bm25+noop-fields:no-field-index", (code, err)


def test_empty_sections_between_others_read_back(tmp_path: Path) -> None:
    """An empty section shares its offset with the next one (a field with no terms in fields.vti)."""
    import numpy as np

    from vaulteval.index.file import read_sections, write_sections
    from vaulteval.vault.metadir import MetaDir

    class _Root:  # MetaDir.open wants a vault: a root folder with .vault-meta inside it
        root, meta_dir = tmp_path, tmp_path / ".vault-meta"

    sections = {"a.terms": b"", "a.doc_len": np.arange(5000, dtype="<i4"), "b.empty": np.zeros(0, "<i8"),
                "c.bytes": b"x" * 40000, "d.empty": b""}
    with MetaDir.open(_Root(), create=True) as meta:
        write_sections(meta, "t.vti", {"kind": "test"}, sections)
    header, read = read_sections(tmp_path / ".vault-meta" / "t.vti")
    assert header["n_blocks"] == 2 + 3 and read.verify_all()["blocks"] == 5
    assert bytes(read["a.terms"]) == b"" and read["a.doc_len"].tolist() == list(range(5000))
    assert read["b.empty"].size == 0 and bytes(read["c.bytes"]) == b"x" * 40000 and bytes(read["d.empty"]) == b""


def test_a_warm_retriever_checks_every_posting_block_before_its_first_query(vault: Path) -> None:
    """A Retriever kept open preloads every posting's weight, so a corrupt block no query reads is refused at once."""
    from vaulteval.errors import NotProvisioned

    sections = _sections(vault)
    far_block = sections.block_of("post_docs", _posting_of(vault, "u0599"))
    _flip(vault, sections.file_offset("post_docs", _posting_of(vault, "u0599")))
    assert _retrieve(vault, "c000")[0] == 0  # a CLI call checks only what it reads
    with pytest.raises(NotProvisioned, match=f"'post_docs' block {far_block} of .* fails its checksum"):
        Retriever(Vault(vault)).retrieve("c000", top=5)
    with pytest.raises(NotProvisioned, match=f"'post_docs' block {far_block} of .* fails its checksum"):
        Retriever(Vault(vault)).open()  # what the MCP server does before its first call


def test_a_warm_retriever_serves_what_a_cold_one_does(built: Path) -> None:
    warm, cold = Retriever(Vault(built)), Retriever(Vault(built), warm=False)
    queries = ["u0042 c001", "c000 c399 c123", "nothing-like-this", "more about u0599", "c007 c007 c008"]
    for query in queries:
        a, b = warm.retrieve(query, top=5), cold.retrieve(query, top=5)
        assert [(c.chunk_id, c.score) for c in a.candidates] == [(c.chunk_id, c.score) for c in b.candidates]
    index = warm.index()
    assert index._whole_vocabulary and index._searcher._preloaded.weights.size == len(index.section("post_docs"))
    assert not cold.index()._whole_vocabulary
    # Its chunk records are read from the store's blocks held inflated; a cold one reads each from the file,
    # and a warm one opened only for its index (stats, doctor) holds nothing until a query or open().
    assert warm.integrity().store().held_bytes > 0 and cold.integrity().store().held_bytes == 0
    stats_only = Retriever(Vault(built))
    stats_only.index()
    assert stats_only.integrity().store().held_bytes == 0
    stats_only.open()
    assert stats_only.integrity().store().held_bytes == warm.integrity().store().held_bytes


def test_concurrent_first_queries_hold_the_store_once(built: Path) -> None:
    """A server's threads may all make a new Retriever's first query at once: one of them holds the store."""
    import threading

    retriever = Retriever(Vault(built))
    retriever.index()
    store, holds = retriever.integrity().store(), []
    real_hold = store.hold
    store.hold = lambda budget: holds.append(budget) or real_hold(budget)
    start = threading.Barrier(4)

    def first_query() -> None:
        start.wait()
        retriever.integrity().hold_store()

    threads = [threading.Thread(target=first_query) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(holds) == 1 and store.held_bytes > 0
