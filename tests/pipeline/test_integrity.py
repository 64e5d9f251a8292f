"""Stale chunks are never served; every path stays inside the vault; CRLF pages hash their exact bytes.

Usage: ``.venv/bin/python -m pytest tests/pipeline/test_integrity.py -q``
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vaulteval import Vault
from vaulteval.chunks.chunking import sha256_text
from vaulteval.errors import PathEscape

from vaulteval.pipeline.retrieve import retrieve
from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import (  # noqa: F401
    CRLF_NOTE,
    DESCALING_NOTE,
    append_text,
    assert_one_line_error,
    chunk_records,
    forge_record,
    fresh_vault,
    index_file,
    put_record,
    record_frame,
    provisioned_sample,
    records_for,
    retrieve_json,
    run_cli,
    run_json,
    sha256_file,
    snapshot,
)


def _pages(result: dict) -> list[str]:
    return [c["page_path"] for c in result["candidates"]]


def _doctor(root: Path, *flags: str) -> tuple[int, dict]:
    proc = run_cli("doctor", "--json", *flags, "--vault", root)
    return proc.returncode, json.loads(proc.stdout)


# -- 3. stale handling ----------------------------------------------------------

def test_edited_page_is_stale_until_reprovisioned(fresh_vault: Path) -> None:
    query = "descaling citric acid"
    before = retrieve_json(fresh_vault, query)
    assert _pages(before)[0] == DESCALING_NOTE
    assert before["explain"]["stale_candidates_skipped"] == 0
    code, report = _doctor(fresh_vault)
    assert (code, report["state"]) == (0, "verified")

    append_text(fresh_vault, DESCALING_NOTE, "\nAfter the edit: try a quokkaberry rinse.\n")
    stale = retrieve_json(fresh_vault, query)
    assert DESCALING_NOTE not in _pages(stale)
    assert stale["explain"]["stale_candidates_skipped"] >= 1
    assert all(c["chunk_id"].split(":")[0] != "c-000103" for c in stale["candidates"])
    assert retrieve_json(fresh_vault, "quokkaberry")["candidates"] == []  # not indexed yet

    code, report = _doctor(fresh_vault)
    assert code == 1
    assert report["state"] == "configured"
    assert report["stale_pages"] == 1
    assert report["rebuild"] == f"vaulteval provision --vault {fresh_vault}"

    run_json("provision", "--vault", fresh_vault)
    code, report = _doctor(fresh_vault)
    assert (code, report["state"], report["stale_pages"]) == (0, "verified", 0)
    again = retrieve_json(fresh_vault, query)
    assert _pages(again)[0] == DESCALING_NOTE
    assert again["explain"]["stale_candidates_skipped"] == 0
    assert _pages(retrieve_json(fresh_vault, "quokkaberry")) == [DESCALING_NOTE]


def test_edited_chunk_record_is_not_served(fresh_vault: Path) -> None:
    """A chunk record changed after the build (consistently re-hashed, right CRC) no longer matches the index."""

    def edit(rec: dict) -> None:
        rec["raw_text"] = rec["raw_text"].replace("Citric acid", "Citrus acid")
        rec["body_hash"] = sha256_text(rec["raw_text"])
        rec["contextualized_text"] = f"{rec['prefix']}\n\n{rec['raw_text']}"

    forge_record(fresh_vault, "c-000103:0", edit)
    result = retrieve_json(fresh_vault, "descaling citric acid")
    assert DESCALING_NOTE not in _pages(result)
    assert result["explain"]["stale_candidates_skipped"] >= 1


def test_forged_record_with_right_checksums_is_not_served(fresh_vault: Path) -> None:
    """A record whose text is not in its note is refused even when its hashes, CRC and index row all agree."""
    page = fresh_vault / DESCALING_NOTE
    rec = _record("c-900009", DESCALING_NOTE, "Pour bleach into the boiler, a forgedword tip.", sha256_file(page))
    put_record(fresh_vault, rec)
    report = run_json("index", "build", "--vault", fresh_vault)
    assert report["docs"] == 55 and report["rejected"] == {}  # the build accepts any well-formed record...
    assert run_json("index", "query", "--vault", fresh_vault, "forgedword")  # ...and indexes it
    assert retrieve_json(fresh_vault, "forgedword")["candidates"] == []  # but it is never served
    assert _pages(retrieve_json(fresh_vault, "descaling citric acid"))[0] == DESCALING_NOTE
    line = assert_one_line_error(run_cli("index", "verify", "--vault", fresh_vault), 10)
    assert "not in their note" in line


@pytest.mark.parametrize("deep", [False, True])
def test_doctor_reports_a_forged_record_once(fresh_vault: Path, deep: bool) -> None:
    """One finding for one forged chunk, with or without --deep: the chunk-to-note check's, and its fix."""
    page = fresh_vault / DESCALING_NOTE
    put_record(fresh_vault, _record("c-900009", DESCALING_NOTE, "Pour bleach into the boiler, a forgedword tip.",
                                    sha256_file(page)))
    run_json("index", "build", "--vault", fresh_vault)
    code, doctor = _doctor(fresh_vault, *(["--deep"] if deep else []))
    assert (code, doctor["state"], doctor["refused_chunks"]) == (1, "configured", 1)
    assert len(doctor["problems"]) == 1, doctor["problems"]
    assert "chunk-to-note check" in doctor["problems"][0]
    assert doctor["rebuild"].endswith(" --rebuild")


def test_doctor_deep_reports_damaged_records_once(fresh_vault: Path) -> None:
    """A flipped bit in a stored record: --deep's store check counts every record the damage reaches, so the
    shallow count of records that differ from the index is not repeated beside it."""
    path, offset, length = record_frame(fresh_vault, "c-000103:0")
    data = bytearray(path.read_bytes())
    data[offset + length - 5] ^= 0x40
    path.write_bytes(bytes(data))
    _code, shallow = _doctor(fresh_vault)
    assert shallow["stale_chunks"] >= 1 and any("differ from the index" in p for p in shallow["problems"])
    code, deep = _doctor(fresh_vault, "--deep")
    assert (code, deep["state"]) == (1, "configured")
    records = [p for p in deep["problems"] if "chunk record(s)" in p]
    assert len(records) == 1 and "missing, damaged or differ" in records[0], deep["problems"]


def test_deleted_page_is_not_served(fresh_vault: Path) -> None:
    (fresh_vault / DESCALING_NOTE).unlink()
    result = retrieve_json(fresh_vault, "descaling citric acid")
    assert DESCALING_NOTE not in _pages(result)
    assert result["explain"]["stale_candidates_skipped"] >= 1
    code, report = _doctor(fresh_vault)
    assert code == 1 and report["missing_pages"] == 1


# -- 4. confinement -------------------------------------------------------------

@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the vault holding a secret note and a secret folder."""
    out = tmp_path / "outside"
    (out / "dir").mkdir(parents=True)
    (out / "secret.md").write_text("# Secret\n\nThe exfiltrationword lives outside the vault.\n")
    (out / "dir" / "also.md").write_text("# Also\n\nAnother exfiltrationword outside.\n")
    return out


def test_symlinks_out_of_wiki_are_not_indexed(tmp_path: Path, outside: Path) -> None:
    from vaulteval.cli.sample import copy_sample

    root = copy_sample(tmp_path / "vault")
    os.symlink(outside / "secret.md", root / "wiki" / "leak.md")
    os.symlink(outside / "dir", root / "wiki" / "leakdir")
    os.symlink(root / ".vaulteval.json", root / "wiki" / "marker.md")  # inside the vault, outside wiki/
    report = run_json("provision", "--vault", root)
    assert report["prefix"]["pages_seen"] == 53
    pages = {r["page_path"] for r in chunk_records(root)}
    assert not {p for p in pages if "leak" in p or "marker" in p}
    assert retrieve_json(root, "exfiltrationword")["candidates"] == []
    assert "wiki/leak.md" not in [p.rel for p in Vault(root).iter_pages()]
    # Naming the link directly is refused, not followed.
    proc = run_cli("prefix", "wiki/leak.md", "--vault", root)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


def test_page_path_confinement(tmp_path: Path, outside: Path) -> None:
    from vaulteval.cli.sample import copy_sample

    root = copy_sample(tmp_path / "vault")
    os.symlink(outside / "secret.md", root / "wiki" / "leak.md")
    os.symlink(outside / "dir", root / "wiki" / "leakdir")
    vault = Vault(root)
    assert vault.page_path(DESCALING_NOTE) == root / DESCALING_NOTE
    for bad in (
        str(outside / "secret.md"),         # absolute
        "/etc/passwd",
        "../outside/secret.md",             # ..
        "wiki/../../outside/secret.md",
        "wiki/howto/../../x.md",
        "wiki/leak.md",                     # symlink escape (file)
        "wiki/leakdir/also.md",             # symlink escape (folder)
        "notes/x.md",                       # not under wiki/
        "",
    ):
        with pytest.raises(PathEscape):
            vault.page_path(bad)
    for bad in ("/etc/passwd", "../x", "chunks/../../wiki/hot.md"):
        with pytest.raises(PathEscape):
            vault.meta_path(bad)


def _record(address: str, page_path: str, raw: str, page_hash: str, index: int = 0) -> dict:
    return {
        "page_path": page_path, "page_address": address, "chunk_index": index, "raw_text": raw,
        "contextualized_text": f"Evil.\n\n{raw}", "prefix": "Evil.", "prefix_source": "synthetic",
        "char_count": len(raw), "body_hash": sha256_text(raw), "page_body_hash": page_hash,
        "created_at": "2026-01-01T00:00:00Z",
    }


def _put(root: Path, address: str, rec: dict) -> str:
    return put_record(root, rec, key=f"{address}.md")


def test_records_with_unsafe_page_paths_are_rejected(fresh_vault: Path, outside: Path) -> None:
    secret = outside / "secret.md"
    os.symlink(secret, fresh_vault / "wiki" / "leak.md")
    h = sha256_file(secret)  # a correct hash of the target: only confinement can stop these
    _put(fresh_vault, "evil-abs", _record("evil-abs", str(secret), "exfiltrationword absolute", h))
    _put(fresh_vault, "evil-up", _record("evil-up", "../outside/secret.md", "exfiltrationword dotdot", h))
    _put(fresh_vault, "evil-wup", _record("evil-wup", "wiki/../../outside/secret.md", "exfiltrationword wdotdot", h))
    _put(fresh_vault, "evil-link", _record("evil-link", "wiki/leak.md", "exfiltrationword symlink", h))
    report = run_json("index", "build", "--vault", fresh_vault)
    assert report["rejected"].get("unsafe-page-path") == 4, report
    assert report["docs"] == 54
    result = retrieve_json(fresh_vault, "exfiltrationword")
    assert result["candidates"] == [] and result["explain"]["bm25_candidate_count"] == 0
    hits = run_json("index", "query", "--vault", fresh_vault, "exfiltrationword")
    assert hits == []


def test_segment_symlinked_outside_is_not_read(fresh_vault: Path, outside: Path) -> None:
    page = fresh_vault / DESCALING_NOTE
    rec = _record("c-900001", DESCALING_NOTE, "the smugglerword chunk", sha256_file(page))
    # Control: the same record in a plain segment is indexed, so the symlink is what stops it below.
    where = _put(fresh_vault, "c-900001", rec)
    run_json("index", "build", "--vault", fresh_vault)
    assert run_json("index", "query", "--vault", fresh_vault, "smugglerword")
    segment = fresh_vault / META_REL / where.split("@")[0]
    target = outside / segment.name
    segment.rename(target)
    os.symlink(target, segment)
    # The reader opens segments without following links: the record is gone for it, never read from outside.
    line = assert_one_line_error(run_cli("retrieve", "--vault", fresh_vault, "smugglerword", "--no-rerank"), 10)
    assert "missing or were rewritten" in line
    # A writer refuses the link outright (exit 2), before it changes anything.
    before = index_file(fresh_vault).read_bytes()
    for args in (["index", "build"], ["provision"]):
        line = assert_one_line_error(run_cli(*args, "--vault", fresh_vault), 2)
        assert segment.name in line and "symlink" in line
    assert index_file(fresh_vault).read_bytes() == before


def test_store_folder_symlinked_outside_is_refused(fresh_vault: Path, tmp_path: Path) -> None:
    """vaulteval's store folder pointing outside .vault-meta: every writer refuses it before touching anything."""
    meta = fresh_vault / META_REL
    elsewhere = tmp_path / "elsewhere-store"
    (meta / "store").rename(elsewhere)
    os.symlink(elsewhere, meta / "store")
    (elsewhere / "keep.txt").write_text("not vaulteval's\n")
    append_text(fresh_vault, DESCALING_NOTE, "\nA new zanzibarword paragraph, so prefix has a chunk to write.\n")
    index_file(fresh_vault).unlink()  # no postings to reuse: the build must read (or refuse) the records
    outside_before, wiki_before = snapshot(elsewhere), snapshot(fresh_vault / "wiki")
    for args in (["index", "build"], ["provision"], ["prefix", "--all"], ["provision", "--rebuild"]):
        line = assert_one_line_error(run_cli(*args, "--vault", fresh_vault), 2)
        assert "store" in line and "symlink" in line, line
        assert snapshot(elsewhere) == outside_before, f"{args} changed the symlink's target"
    assert snapshot(fresh_vault / "wiki") == wiki_before
    assert not index_file(fresh_vault).exists()
    assert_one_line_error(run_cli("retrieve", "--vault", fresh_vault, "descale", "--no-rerank"), 10)
    # With the link gone, provision rebuilds everything and the edit is served.
    (meta / "store").unlink()
    run_json("provision", "--vault", fresh_vault)
    assert _pages(retrieve_json(fresh_vault, "zanzibarword")) == [DESCALING_NOTE]


# -- 5. CRLF --------------------------------------------------------------------

def test_crlf_page_hash_and_freshness(provisioned_sample: Path) -> None:
    raw = (provisioned_sample / CRLF_NOTE).read_bytes()
    assert b"\r\n" in raw
    recs = records_for(provisioned_sample, CRLF_NOTE)
    assert recs
    for rec in recs:
        assert rec["page_body_hash"] == sha256_file(provisioned_sample / CRLF_NOTE)
        assert "\r" not in rec["raw_text"]
        assert rec["body_hash"] == sha256_text(rec["raw_text"])
    assert recs[0]["raw_text"].startswith("# Router reset"), "frontmatter of a CRLF page must be parsed"
    assert recs[0]["prefix"].startswith("Router reset.")
    result = retrieve_json(provisioned_sample, "zyxel router factory reset PPPoE")
    assert _pages(result)[0] == CRLF_NOTE
    assert result["explain"]["stale_candidates_skipped"] == 0
    code, report = _doctor(provisioned_sample)
    assert code == 0 and report["stale_pages"] == 0


def test_crlf_edit_is_detected(fresh_vault: Path) -> None:
    """Converting the CRLF page to LF changes its bytes: stale, even though the text is the same."""
    path = fresh_vault / CRLF_NOTE
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
    result = retrieve_json(fresh_vault, "zyxel router factory reset PPPoE")
    assert CRLF_NOTE not in _pages(result)
    assert result["explain"]["stale_candidates_skipped"] >= 1


def test_remembered_verdicts_notice_an_edit_that_keeps_size_and_mtime(fresh_vault: Path) -> None:
    """A long-lived process caches verdicts by stat; a same-size edit with a restored mtime is still caught."""
    page = fresh_vault / "wiki" / "howto" / "Descaling.md"
    old = os.stat(page)
    past = old.st_mtime_ns - 3_600 * 10**9  # older than the racy window, so verdicts are cached
    for path in (fresh_vault / "wiki").rglob("*.md"):
        os.utime(path, ns=(past, past))
    vault = Vault(fresh_vault)
    first = retrieve(vault, "descale espresso machine citric acid", top=5)
    assert "wiki/howto/Descaling.md" in [c.page_path for c in first.candidates]
    data = page.read_bytes()
    flipped = data.replace(b"citric", b"CITRIC", 1)
    assert flipped != data and len(flipped) == len(data)
    page.write_bytes(flipped)
    os.utime(page, ns=(past, past))  # same size, same mtime: only the ctime and the bytes changed
    second = retrieve(vault, "descale espresso machine citric acid", top=5, explain=True)
    assert "wiki/howto/Descaling.md" not in [c.page_path for c in second.candidates]
    assert second.explain["stale_candidates_skipped"] >= 1


def test_an_open_retrievers_remembered_chunks_notice_an_edit_that_keeps_size_and_mtime(fresh_vault: Path) -> None:
    """A chunk a Retriever kept open found current is taken again on one stat of its note: a same-size edit
    with a restored mtime changes that stat (its ctime), and the chunk is checked again and dropped."""
    from vaulteval.pipeline.retrieve import Retriever

    _age_everything(fresh_vault)
    page = fresh_vault / "wiki" / "howto" / "Descaling.md"
    past = os.stat(page).st_mtime_ns
    retriever = Retriever(Vault(fresh_vault))
    query = "descale espresso machine citric acid"
    for _ in range(2):  # the second answer comes from the remembered chunks
        assert "wiki/howto/Descaling.md" in [c.page_path for c in retriever.retrieve(query, top=5).candidates]
    assert any(doc.page_path == "wiki/howto/Descaling.md" for doc in retriever.integrity()._current)
    data = page.read_bytes()
    page.write_bytes(data.replace(b"citric", b"CITRIC", 1))
    os.utime(page, ns=(past, past))
    assert "wiki/howto/Descaling.md" not in [c.page_path for c in retriever.retrieve(query, top=5).candidates]


def _age_everything(root: Path) -> None:
    """Move every note's and chunk record's mtime an hour back, out of the racy window, so verdicts are kept."""
    for path in [*(root / "wiki").rglob("*.md"), *(root / META_REL / "chunks").rglob("*.json")]:
        past = os.stat(path).st_mtime_ns - 3_600 * 10**9
        os.utime(path, ns=(past, past))


def test_an_open_retriever_stats_each_file_once_a_query_and_reads_only_what_changed(
        fresh_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The signature cache of a Retriever kept open (issue 26 item 3, issue 24 item 2): a file already verified
    is stat'ed, not read; no file is stat'ed twice in one query; an edited note is read again and not served."""
    from vaulteval.chunks import integrity
    from vaulteval.pipeline.retrieve import Retriever

    _age_everything(fresh_vault)
    stats: list[str] = []
    reads: list[str] = []
    real_stat, real_read = integrity._stat, integrity.read_confined
    monkeypatch.setattr(integrity, "_stat", lambda path: stats.append(str(path)) or real_stat(path))
    monkeypatch.setattr(integrity, "read_confined",
                        lambda base, rel, strip=None: reads.append(rel) or real_read(base, rel, strip))
    retriever = Retriever(Vault(fresh_vault))
    query = "descale espresso machine citric acid"
    first = retriever.retrieve(query, top=5, explain=True)  # every hit checked, several chunks of one page
    assert first.candidates and reads and not stats  # nothing remembered yet: read, never stat'ed first
    assert len(reads) == len(set(reads))
    reads.clear()
    second = retriever.retrieve(query, top=5, explain=True)
    assert [c.chunk_id for c in second.pool] == [c.chunk_id for c in first.pool]
    assert reads == []  # every verdict came from the signature cache
    assert stats and len(stats) == len(set(stats))  # one stat per file for the whole query
    pages_in_pool = {c.page_path for c in first.pool}
    assert len(pages_in_pool) < len(first.pool)  # the check above did see a page named by several candidates

    append_text(fresh_vault, "wiki/howto/Descaling.md", "\nEdited after the index was built.\n")
    stats.clear()
    third = retriever.retrieve(query, top=5, explain=True)
    assert "wiki/howto/Descaling.md" not in [c.page_path for c in third.candidates]
    assert "wiki/howto/Descaling.md" in reads  # the changed signature made it read again
    assert len(stats) == len(set(stats))


def test_rerank_false_means_no_rerank(provisioned_sample: Path) -> None:
    from vaulteval.pipeline.retrieve import Retriever

    retriever = Retriever(Vault(provisioned_sample))
    plain = retriever.retrieve("descale espresso machine", top=5, rerank=None)
    off = retriever.retrieve("descale espresso machine", top=5, rerank=False)
    assert off.to_dict() == plain.to_dict()
    assert off.label.reranker is None and not any(name == "rerank" for name, _ in off.label.fallbacks)


def test_a_served_chunks_place_in_its_note_needs_no_second_read(fresh_vault: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: the JSON of a served chunk (its lines, headings, modified time) comes from the bytes the
    verification read, or from a layout remembered under the signature it verified; an edited note's new
    place is worked out from its new bytes."""
    from vaulteval.pipeline.retrieve import Retriever
    from vaulteval.vault import paths

    _age_everything(fresh_vault)
    reads: list[str] = []
    real_read = paths.read_confined
    monkeypatch.setattr(paths, "read_confined", lambda base, rel, strip=None: reads.append(rel) or real_read(base, rel, strip))
    query = "descale espresso machine citric acid"
    expected = retrieve(Vault(fresh_vault), query, top=5).to_dict()  # one-shot: its own reads
    assert DESCALING_NOTE in [c["page_path"] for c in expected["candidates"]]
    assert all(c["first_line"] for c in expected["candidates"])
    reads.clear()
    retriever = Retriever(Vault(fresh_vault))
    first = retriever.retrieve(query, top=5).to_dict()
    assert first == expected and reads == []  # the integrity checker's reads served the locations too
    second = retriever.retrieve(query, top=5).to_dict()
    assert second == expected and reads == []  # no note read at all: every layout known by its signature

    # Touched (same bytes, new signature): read again by the verification, and the same answer from those bytes.
    note = fresh_vault / DESCALING_NOTE
    past = os.stat(note).st_mtime_ns - 7_200 * 10**9
    os.utime(note, ns=(past, past))
    touched = retriever.retrieve(query, top=5).to_dict()
    assert reads == []
    for now, before in zip(touched["candidates"], expected["candidates"], strict=True):
        if now["page_path"] == DESCALING_NOTE:
            assert now.pop("modified") != before.pop("modified")
        assert now == before
    # Edited: never served from what was remembered; the answer is a fresh process's.
    append_text(fresh_vault, DESCALING_NOTE, "\nEdited after the index was built.\n")
    os.utime(note, ns=(past, past))
    edited = retriever.retrieve(query, top=5).to_dict()
    assert DESCALING_NOTE not in [c["page_path"] for c in edited["candidates"]]
    reads.clear()
    assert edited == retrieve(Vault(fresh_vault), query, top=5).to_dict()


def test_a_record_naming_a_page_outside_the_walk_is_resolved_and_refused(
        fresh_vault: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """provision's build trusts the confinement of the pages its walk just listed (no symlink, no ``..``) and
    resolves every other page path: a symlink out of the notes folder is refused even beside walked pages."""
    from vaulteval.index.build import RecordRejected, validate_record

    os.symlink(outside / "secret.md", fresh_vault / "wiki" / "leak.md")
    vault = Vault(fresh_vault)
    walked = frozenset(p.rel for p in vault.iter_pages())
    assert DESCALING_NOTE in walked and "wiki/leak.md" not in walked
    resolved: list[str] = []
    real = Vault.page_path
    monkeypatch.setattr(Vault, "page_path", lambda self, rel: resolved.append(rel) or real(self, rel))
    h = sha256_file(outside / "secret.md")
    with pytest.raises(RecordRejected, match="unsafe-page-path"):
        validate_record(vault, "evil", "x", _record("evil", "wiki/leak.md", "exfiltrationword", h), walked)
    assert resolved == ["wiki/leak.md"]
    page_hash = sha256_file(fresh_vault / DESCALING_NOTE)
    ok = validate_record(vault, "c-1", "x", _record("c-1", DESCALING_NOTE, "descale it", page_hash), walked)
    assert ok[0] == DESCALING_NOTE and resolved == ["wiki/leak.md"]  # a walked page: no resolution
    validate_record(vault, "c-1", "x", _record("c-1", DESCALING_NOTE, "descale it", page_hash))
    assert resolved == ["wiki/leak.md", DESCALING_NOTE]  # without a walk (index build): resolved


def test_index_build_keeps_the_current_analyzer_unless_told(fresh_vault: Path) -> None:
    run_json("index", "build", "--vault", fresh_vault, "--analyzer", "english")
    assert run_json("index", "stats", "--vault", fresh_vault)["analyzer"].startswith("english")
    run_json("index", "build", "--vault", fresh_vault)  # no --analyzer: the index's own, not the seed's default
    assert run_json("index", "stats", "--vault", fresh_vault)["analyzer"].startswith("english")
    run_json("index", "build", "--vault", fresh_vault, "--analyzer", "default")
    assert run_json("index", "stats", "--vault", fresh_vault)["analyzer"] == "default"
