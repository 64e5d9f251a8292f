"""Every derived file is untrusted input: malformed ones are rescanned, rebuilt or refused in one line.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_untrusted_derived.py -q``

Table-driven: each shape is written over a real file of a provisioned copy of
the sample vault, then the commands that read it run in-process; none may end
in ``internal error`` or a traceback, and each must give its documented code.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from pipeline_fixtures import (  # noqa: F401
    DESCALING_NOTE,
    chunk_records,
    fresh_vault,
    index_file,
    records_for,
    replace_record,
    run_main,
)
from vaulteval.vault.metadir import META_REL

META = META_REL
CATALOG = "chunk-catalog.vcc"
QUERY = "descaling citric acid espresso"


def _retrieve(root: Path) -> tuple[int, str, str]:
    return run_main("retrieve", "--vault", root, QUERY, "--no-rerank")


def _clean(code: int, err: str, allowed: tuple[int, ...]) -> None:
    assert code in allowed, f"exit {code}: {err}"
    assert "internal error" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 1 or code == 0, err


# -- the chunk catalog ----------------------------------------------------------

def _forged(root: Path, edit) -> None:
    """Rewrite the catalog with ``edit(entry)`` applied to the descaling note's entry, with a right checksum."""
    from vaulteval import Vault
    from vaulteval.chunks.catalog import read_entries, write_entries
    from vaulteval.vault.metadir import MetaDir

    with MetaDir.open(Vault(root)) as meta:
        settings, pages = read_entries(meta)
        edit(pages[DESCALING_NOTE])
        write_entries(meta, settings, pages)


def _moved(entry: dict, by: int) -> None:
    where, _, at = entry["records"][0][0].partition("@")
    block, _, number = at.partition("#")
    entry["records"][0][0] = f"{where}@{int(block) + by}#{number}"


# A catalog with a right checksum may still say anything: each is refused whole or its page rescanned.
FORGED = {
    "address-escape": lambda e: e.update(address="../../outside"),
    "address-other": lambda e: e.update(address="c-000999"),
    "hash-other": lambda e: e.update(hash="sha256:" + "0" * 63 + "1"),
    "hash-not-sha256": lambda e: e.update(hash="md5:x"),
    "stat-other": lambda e: e.update(stat=[1, 2, 3]),
    "stat-none": lambda e: e.update(stat=None),
    "chunks-more": lambda e: e.update(chunks=e["chunks"] + 1),
    "record-moved": lambda e: _moved(e, 1),
    "record-past-the-end": lambda e: _moved(e, 1 << 40),
    "record-size": lambda e: e["records"][0].__setitem__(1, e["records"][0][1] + 1),
    "record-crc": lambda e: e["records"][0].__setitem__(2, e["records"][0][2] ^ 1),
    "record-other-segment": lambda e: e["records"][0].__setitem__(0, "store/seg-0000000000000000.vcs@8#0"),
    "no-records": lambda e: e.update(chunks=0, records=[]),
}


def _catalog_address(root: Path) -> str:
    from vaulteval import Vault
    from vaulteval.chunks.catalog import read_entries
    from vaulteval.vault.metadir import MetaDir

    with MetaDir.open(Vault(root)) as meta:
        return read_entries(meta)[1][DESCALING_NOTE]["address"]


@pytest.mark.parametrize("shape", sorted(FORGED))
def test_a_forged_catalog_entry_is_refused_or_rescanned(fresh_vault: Path, shape: str) -> None:
    before = {(r["page_path"], r["chunk_index"]): r["body_hash"] for r in chunk_records(fresh_vault)}
    _forged(fresh_vault, FORGED[shape])
    code, out, err = run_main("provision", "--vault", fresh_vault)
    _clean(code, err, (0,))
    after = {(r["page_path"], r["chunk_index"]): r["body_hash"] for r in chunk_records(fresh_vault)}
    assert after == before
    assert json.loads(out)["index"]["docs"] == 54
    assert _catalog_address(fresh_vault) == "c-000103"
    assert list((fresh_vault / "..").resolve().glob("outside*")) == []
    assert _retrieve(fresh_vault)[0] == 0


def _cut(data: bytes, at: int) -> bytes:
    return data[:at]


def _flip(data: bytes, at: int) -> bytes:
    at %= len(data)
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:]


WHOLE_CATALOG = {
    "empty": lambda d: b"", "garbage": lambda d: b"{not json", "binary": lambda d: b"\x00\xff\xfe",
    "cut-in-magic": lambda d: _cut(d, 5), "cut-in-header": lambda d: _cut(d, 40),
    "cut-in-body": lambda d: _cut(d, len(d) // 2),
    "cut-last-byte": lambda d: _cut(d, len(d) - 1), "longer": lambda d: d + b"\x00",
    "flip-magic": lambda d: _flip(d, 2), "flip-format": lambda d: _flip(d, 7), "flip-length": lambda d: _flip(d, 9),
    "flip-crc": lambda d: _flip(d, 13), "flip-header": lambda d: _flip(d, 30),
    "flip-body": lambda d: _flip(d, len(d) // 2),
    "flip-last": lambda d: _flip(d, len(d) - 1),
}


@pytest.mark.parametrize("shape", sorted(WHOLE_CATALOG))
def test_a_damaged_catalog_file_is_refused_in_one_line_and_rewritten(fresh_vault: Path, shape: str, caplog) -> None:
    import logging

    path = fresh_vault / META / CATALOG
    before = {(r["page_path"], r["chunk_index"]): r["body_hash"] for r in chunk_records(fresh_vault)}
    path.write_bytes(WHOLE_CATALOG[shape](path.read_bytes()))
    with caplog.at_level(logging.WARNING):
        code, out, err = run_main("provision", "--vault", fresh_vault)
    _clean(code, err, (0,))
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "chunk catalog" in said[0] and "unusable" in said[0] and "\n" not in said[0], said
    assert json.loads(out)["index"]["docs"] == 54
    assert _catalog_address(fresh_vault) == "c-000103"
    assert {(r["page_path"], r["chunk_index"]): r["body_hash"] for r in chunk_records(fresh_vault)} == before
    quiet = run_main("provision", "--vault", fresh_vault)
    assert quiet[0] == 0 and quiet[2].strip() == ""
    assert json.loads(quiet[1])["prefix"]["pages_changed"] == 0


# -- chunk records -----------------------------------------------------------------

RECORD_SHAPES = {
    "list": "[]", "string": '"chunk"', "int": "5", "null": "null", "empty-object": "{}", "garbage": "{oops",
    "binary": b"\xff\xfe\x00\x01", "empty-file": "",
    "index-str": None, "index-bool": None, "index-negative": None, "raw-int": None, "hash-list": None,
    "page-escape": None, "address-other": None, "deep": "[" * 5000 + "]" * 5000,
}


def _mutated_record(root: Path, shape: str) -> bytes:
    rec = records_for(root, DESCALING_NOTE)[0]
    edits = {"index-str": ("chunk_index", "0"), "index-bool": ("chunk_index", False),
             "index-negative": ("chunk_index", -1), "raw-int": ("raw_text", 12), "hash-list": ("body_hash", ["x"]),
             "page-escape": ("page_path", "../../etc/passwd"), "address-other": ("page_address", "c-999999")}
    key, value = edits[shape]
    rec[key] = value
    return json.dumps(rec).encode()


@pytest.mark.parametrize("shape", sorted(RECORD_SHAPES))
def test_a_malformed_chunk_record_is_skipped_then_repaired(fresh_vault: Path, shape: str) -> None:
    """A record the catalog names that is malformed (with a right CRC): the build refuses it, provision repairs it."""
    value = RECORD_SHAPES[shape]
    data = _mutated_record(fresh_vault, shape) if value is None else (
        value if isinstance(value, bytes) else value.encode())
    replace_record(fresh_vault, "c-000103:0", data)
    code, out, err = run_main("index", "build", "--vault", fresh_vault)
    _clean(code, err, (0,))
    assert json.loads(out)["docs"] == 53 and sum(json.loads(out)["rejected"].values()) == 1
    code, out, err = _retrieve(fresh_vault)
    _clean(code, err, (0,))
    assert DESCALING_NOTE not in [c["page_path"] for c in json.loads(out)["candidates"]]
    code, out, err = run_main("provision", "--vault", fresh_vault)
    _clean(code, err, (0,))
    assert json.loads(out)["index"]["docs"] == 54
    code, out, _ = _retrieve(fresh_vault)
    assert code == 0 and DESCALING_NOTE in [c["page_path"] for c in json.loads(out)["candidates"]]


# -- the index file: forged headers and bodies with valid checksums ------------------

_PREFIX = struct.Struct("<8sII")


def _split(path: Path) -> tuple[bytes, dict, bytes]:
    """(magic, header, body); the block table between header and body is dropped (``_forge`` rewrites it)."""
    raw = path.read_bytes()
    magic, head_len, _ = _PREFIX.unpack(raw[:_PREFIX.size])
    head = json.loads(raw[_PREFIX.size:_PREFIX.size + head_len])
    table = 4 * head["n_blocks"]
    table += (-table) % 16
    return magic, head, raw[_PREFIX.size + head_len + table:]


def _forge(path: Path, magic: bytes, header, body: bytes) -> None:
    """Write a file whose checksums (sections, blocks, block table) are right, so only the structure can betray it."""
    table = b""
    if isinstance(header, dict) and "keep_crc" not in header:
        crcs: list[int] = []
        sections = header.get("sections")
        entries = sections.values() if isinstance(sections, dict) else []
        for entry in sorted((e for e in entries if isinstance(e, list) and len(e) == 6
                             and isinstance(e[0], int) and isinstance(e[1], int)), key=lambda e: e[0]):
            data = body[max(0, entry[0]):max(0, entry[0]) + max(0, entry[1])]
            entry[4], entry[5] = zlib.crc32(data), len(crcs)
            crcs += [zlib.crc32(data[i:i + 16384]) for i in range(0, len(data), 16384)]
        table = struct.pack(f"<{len(crcs)}I", *crcs)
        table += b"\x00" * ((-len(table)) % 16)
        header = dict(header, body_size=len(body), n_blocks=len(crcs), blocks_crc32=zlib.crc32(table))
    elif isinstance(header, dict):
        header = {k: v for k, v in header.items() if k != "keep_crc"}
    head = json.dumps(header).encode()
    head += b" " * ((-(_PREFIX.size + len(head))) % 16)
    path.write_bytes(_PREFIX.pack(magic, len(head), zlib.crc32(head)) + head + table + body)


def _section(header: dict, name: str) -> tuple[int, int]:
    offset, nbytes = header["sections"][name][:2]
    return offset, nbytes


def _body_edit(name: str, fn):
    def edit(header: dict, body: bytes) -> tuple[dict, bytes]:
        offset, nbytes = _section(header, name)
        return header, body[:offset] + fn(body[offset:offset + nbytes]) + body[offset + nbytes:]
    return edit


def _header_edit(**changes):
    def edit(header: dict, body: bytes) -> tuple[dict, bytes]:
        return dict(header, **changes), body
    return edit


def _section_edit(name: str, index: int, value):
    def edit(header: dict, body: bytes) -> tuple[dict, bytes]:
        sections = json.loads(json.dumps(header["sections"]))
        sections[name][index] = value
        return dict(header, sections=sections), body
    return edit


def _numbers(dtype: str, transform):
    import numpy as np

    def fn(data: bytes) -> bytes:
        arr = np.frombuffer(data, dtype=np.dtype(dtype)).copy()
        transform(arr)
        return arr.tobytes()
    return fn


INDEX_SHAPES = {
    "header-list": lambda h, b: ([h], b),
    "header-string": lambda h, b: ("index", b),
    "k1-nan": _header_edit(k1=float("nan")),
    "k1-negative": _header_edit(k1=-3.0),
    "b-seven": _header_edit(b=7),
    "k1-string": _header_edit(k1="fast"),
    "n-docs-string": _header_edit(n_docs="many"),
    "n-docs-too-big": _header_edit(n_docs=10**6),
    "n-docs-negative": _header_edit(n_docs=-1),
    "avgdl-nan": _header_edit(avgdl=float("nan")),
    "analyzer-unknown": _header_edit(analyzer="klingon"),
    "sections-missing": _header_edit(sections={}),
    "sections-list": _header_edit(sections=[]),
    "section-beyond-body": _section_edit("post_docs", 0, 10**9),
    "section-negative": _section_edit("doc_len", 0, -64),
    "section-dtype-object": _section_edit("doc_len", 2, "|O"),
    "section-dtype-garbage": _section_edit("doc_len", 2, "not-a-dtype"),
    "section-count-lies": _section_edit("post_docs", 3, 10**6),
    "post-doc-out-of-range": _body_edit("post_docs", _numbers("<i4", lambda a: a.__setitem__(0, 10**6))),
    "post-doc-negative": _body_edit("post_docs", _numbers("<i4", lambda a: a.__setitem__(-1, -7))),
    "post-offsets-decreasing": _body_edit("post_offsets", _numbers("<i8", lambda a: a.__setitem__(3, 10**9))),
    "term-offsets-scrambled": _body_edit("term_offsets", _numbers("<i8", lambda a: a.__setitem__(slice(None), a[::-1]))),
    "doc-offsets-beyond": _body_edit("doc_offsets", _numbers("<i8", lambda a: a.__setitem__(-1, 10**9))),
    "doc-rows-garbage": _body_edit("docs", lambda d: b"x" * len(d)),
    "doc-row-kind-unknown": _body_edit("docs", lambda d: b"\x02" + d[1:]),
    "doc-row-segment-beyond": _body_edit("docs", lambda d: d[:1] + b"\xff\xff" + d[3:]),
    "doc-row-json-types": _body_edit("docs", lambda d: (b'{"id":"c-000103:0","ci":"0"}\n' + d)[:len(d)]),
    "row-format-unknown": _header_edit(row_format=3),
    "terms-not-utf8": _body_edit("terms", lambda d: b"\xff" * len(d)),
}


def _warm_retrieve(root: Path) -> None:
    """A Retriever kept open (the MCP server's): it preloads every posting and the vocabulary when it opens, so
    a forged index is refused there (exit 10) or served, never a crash."""
    from vaulteval.errors import NotProvisioned
    from vaulteval.pipeline.retrieve import Retriever
    from vaulteval.vault.vault import Vault

    try:
        Retriever(Vault(root)).retrieve(QUERY, top=5)
    except NotProvisioned as exc:
        assert exc.exit_code == 10 and "provision" in str(exc)


@pytest.mark.parametrize("scorer", ["plain", "numpy", "warm"])
@pytest.mark.parametrize("shape", sorted(INDEX_SHAPES))
def test_a_forged_index_is_refused_with_exit_10_or_rebuilt(fresh_vault: Path, shape: str, scorer: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.index import search

    # A CLI call scores in plain Python, a long-lived process with numpy: both must refuse the same files.
    monkeypatch.setattr(search, "NUMPY_LOADED_FROM", 10**9 if scorer == "plain" else 0)
    path = index_file(fresh_vault)
    magic, header, body = _split(path)
    new_header, new_body = INDEX_SHAPES[shape](header, body)
    _forge(path, magic, new_header, new_body)
    if scorer == "warm":
        _warm_retrieve(fresh_vault)
    code, out, err = _retrieve(fresh_vault)
    _clean(code, err, (0, 10))
    if code == 10:
        assert "provision" in err
    for cmd in (("index", "stats"), ("index", "query", "descaling"), ("doctor",)):
        code, _, err = run_main(*cmd, "--vault", fresh_vault)
        _clean(code, err, (0, 1, 10))
    code, out, err = run_main("provision", "--vault", fresh_vault)
    _clean(code, err, (0,))
    assert json.loads(out)["index"]["docs"] == 54
    assert _retrieve(fresh_vault)[0] == 0


@pytest.mark.parametrize("row_format", [1, None])
def test_an_index_of_another_row_format_is_refused_in_one_line_until_provision(fresh_vault: Path,
                                                                                row_format) -> None:
    path = index_file(fresh_vault)
    magic, header, body = _split(path)
    assert header["row_format"] == 2
    header = {k: v for k, v in header.items() if k != "row_format"} if row_format is None else \
        dict(header, row_format=row_format)
    _forge(path, magic, header, body)
    code, _, err = _retrieve(fresh_vault)
    assert code == 10 and len(err.strip().splitlines()) == 1 and "vaulteval provision" in err, err
    code, out, err = run_main("provision", "--vault", fresh_vault)
    _clean(code, err, (0,))
    assert json.loads(out)["index"]["tokenized"] == 54 and _retrieve(fresh_vault)[0] == 0


def test_an_index_that_records_no_exclusions_is_a_doctor_problem_until_provision(fresh_vault: Path) -> None:
    path = index_file(fresh_vault)
    magic, header, body = _split(path)
    _forge(path, magic, {k: v for k, v in header.items() if k != "exclusions"}, body)
    code, out, _ = run_main("doctor", "--vault", fresh_vault, "--json")
    report = json.loads(out)
    assert code == 1 and report["exclusions"]["indexed_with"] is None
    assert any("excluded-files filters" in p for p in report["problems"]) and "provision" in report["rebuild"]
    assert run_main("provision", "--vault", fresh_vault)[0] == 0
    assert run_main("doctor", "--vault", fresh_vault)[0] == 0


# -- the index file: right checksums from the real writer, numbers that mean something else --------

_WRITER_KEYS = ("schema_version", "block_size", "n_blocks", "blocks_crc32", "sections", "body_size")


def _rewrite(root: Path, edit) -> None:
    """Read every section, let ``edit(header, arrays, doc)`` change them, and publish the result through
    vaulteval's own ``write_sections``: every checksum is right, only the meaning is forged. ``doc`` is the
    document of the query's top hit, so a forgery that went unnoticed would move it."""
    from vaulteval.index.file import read_sections, write_sections
    from vaulteval.index.reader import open_index
    from vaulteval.vault.metadir import MetaDir
    from vaulteval.vault.vault import Vault

    vault = Vault(root)
    doc = open_index(vault).search(QUERY, k=1)[0].doc
    header, sections = read_sections(index_file(root))
    arrays = {name: bytes(sections[name]) if sections.dtype(name) == "bytes" else sections[name].copy()
              for name in sections}
    header = {k: v for k, v in header.items() if k not in _WRITER_KEYS}
    edit(header, arrays, doc)
    with MetaDir.open(vault) as meta, meta.sub("bm25") as folder:
        write_sections(folder, "index.vti", header, arrays)


def _postings_of(arrays: dict, doc: int):
    return (arrays["post_docs"] == doc).nonzero()[0]


def _set_length(value):
    """The document's length set to ``value(old, its largest tf)``, avgdl recomputed as the writer does, so
    only the length itself can betray the forgery."""
    def edit(header: dict, arrays: dict, doc: int) -> None:
        lengths = arrays["doc_len"]
        top_tf = int(arrays["post_tfs"][_postings_of(arrays, doc)].max())
        lengths[doc] = value(int(lengths[doc]), top_tf)
        header["avgdl"] = int(lengths.astype("i8").sum()) / lengths.size
    return edit


def _set_tfs(which, value):
    def edit(header: dict, arrays: dict, doc: int) -> None:
        where = which(arrays, doc)
        arrays["post_tfs"][where] = value(arrays, doc)
    return edit


def _first_term_of_query(arrays: dict, doc: int):
    """Every posting of the query's first indexed term."""
    from vaulteval.index.analysis import lookup

    terms = bytes(arrays["terms"]).decode().split("\n")[:-1]
    term = next(t for t in lookup("default")(QUERY) if t in terms)
    i = terms.index(term)
    return slice(int(arrays["post_offsets"][i]), int(arrays["post_offsets"][i + 1]))


def _swap_doc_offsets(header: dict, arrays: dict, doc: int) -> None:
    off = arrays["doc_offsets"]
    off[doc], off[doc + 1] = off[doc + 1], off[doc]


MEANING_SHAPES = {
    "doc-len-negative": _set_length(lambda old, tf: -old),
    "doc-len-zero": _set_length(lambda old, tf: 0),
    "doc-len-below-a-tf": _set_length(lambda old, tf: tf - 1),
    "avgdl-doubled": lambda h, a, d: h.update(avgdl=h["avgdl"] * 2),
    "tf-zero-whole-term": _set_tfs(_first_term_of_query, lambda a, d: 0),
    "tf-zero-one-posting": _set_tfs(lambda a, d: _postings_of(a, d)[:1], lambda a, d: 0),
    "tf-negative": _set_tfs(lambda a, d: _postings_of(a, d)[:1], lambda a, d: -3),
    "tf-above-length": _set_tfs(lambda a, d: _postings_of(a, d)[:1], lambda a, d: int(a["doc_len"][d]) + 1),
    "doc-offsets-not-monotone": _swap_doc_offsets,
}
# Consistent on every posting a query reads (each tf <= the length, the mean right), wrong only as a sum:
# the read-time checks cannot see it; index verify and doctor --deep must.
SUM_ONLY_SHAPES = {"doc-len-shrunk": _set_length(lambda old, tf: max(tf, old - 1) if old > tf else old + 1)}


def _deep_checks_refuse(root: Path) -> None:
    code, _, err = run_main("index", "verify", "--vault", root)
    _clean(code, err, (10,))
    assert "malformed" in err and "provision" in err
    code, out, err = run_main("doctor", "--deep", "--vault", root)
    _clean(code, err, (1,))
    assert "retrieve: degraded" in out and "malformed" in out


@pytest.mark.parametrize("scorer", ["plain", "numpy", "warm"])
@pytest.mark.parametrize("shape", sorted(MEANING_SHAPES))
def test_a_rewritten_index_that_means_something_else_is_exit_10(fresh_vault: Path, shape: str, scorer: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.errors import NotProvisioned
    from vaulteval.index import search
    from vaulteval.pipeline.retrieve import Retriever
    from vaulteval.vault.vault import Vault

    monkeypatch.setattr(search, "NUMPY_LOADED_FROM", 10**9 if scorer == "plain" else 0)
    _rewrite(fresh_vault, MEANING_SHAPES[shape])
    if scorer == "warm":  # the preload reads every posting: refused when it opens, never another ranking
        with pytest.raises(NotProvisioned, match="index file is malformed"):
            Retriever(Vault(fresh_vault)).retrieve(QUERY, top=5)
    code, out, err = _retrieve(fresh_vault)
    _clean(code, err, (10,))  # never another ranking
    assert "index file is malformed" in err and "provision" in err
    _deep_checks_refuse(fresh_vault)
    code, out, err = run_main("provision", "--vault", fresh_vault)
    _clean(code, err, (0,))
    assert json.loads(out)["index"]["docs"] == 54 and _retrieve(fresh_vault)[0] == 0


@pytest.mark.parametrize("shape", sorted(SUM_ONLY_SHAPES))
def test_lengths_that_differ_from_their_postings_fail_the_deep_checks(fresh_vault: Path, shape: str) -> None:
    _rewrite(fresh_vault, SUM_ONLY_SHAPES[shape])
    _clean(*_retrieve(fresh_vault)[::2], (0, 10))
    _deep_checks_refuse(fresh_vault)


def test_the_real_writer_alone_changes_nothing(fresh_vault: Path) -> None:
    """The control: rewritten unchanged, the index serves the same ranking and verifies."""
    before = json.loads(_retrieve(fresh_vault)[1])["candidates"]
    _rewrite(fresh_vault, lambda header, arrays, doc: None)
    code, out, err = _retrieve(fresh_vault)
    assert code == 0 and json.loads(out)["candidates"] == before, err
    assert run_main("index", "verify", "--vault", fresh_vault)[0] == 0


@pytest.mark.parametrize("data", [b"", b"VEVIDX", b"\x00" * 64, b"SQLite format 3\x00" + b"\x01" * 100,
                                  b"VEVIDX\x00\x01" + b"\xff" * 8])
def test_a_truncated_or_foreign_index_is_exit_10(fresh_vault: Path, data: bytes) -> None:
    index_file(fresh_vault).write_bytes(data)
    code, _, err = _retrieve(fresh_vault)
    _clean(code, err, (10,))


# -- the embedding cache ---------------------------------------------------------------

@pytest.mark.parametrize("data", [b"not a database", b"SQLite format 3\x00" + b"\x00" * 200, b""])
def test_a_malformed_embedding_cache_is_replaced(fresh_vault: Path, data: bytes) -> None:
    import numpy as np

    from vaulteval.embeddings.embedcache import EmbeddingCache

    from vaulteval import Vault
    from vaulteval.vault.usercache import query_embed_cache

    path = query_embed_cache(Vault(fresh_vault))  # the query path's cache, outside the vault
    path.write_bytes(data)
    with EmbeddingCache.open(path) as cache:
        assert cache.put("b", "m", "s", {"k": np.ones(3, dtype=np.float32)}) == 1
        assert list(cache.get("b", "m", "s", ["k"])) == ["k"]
