"""Chunk records: sizes, overlap, prefixes, seed schema, addresses; incremental runs; foreign records.

Usage: ``.venv/bin/python -m pytest tests/chunks/test_chunking.py -q``
"""

from __future__ import annotations

import json
from pathlib import Path

from vaulteval.chunks.chunking import sha256_text
from vaulteval.chunks.obsidian import visible_text
from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import (  # noqa: F401
    DESCALING_NOTE,
    EMPTY_NOTE,
    LONG_NOTE,
    SEED_FIELDS,
    append_text,
    chunk_locations,
    chunk_records,
    record_frame,
    fresh_vault,
    index_file,
    make_vault,
    provisioned_sample,
    records_for,
    retrieve_json,
    run_cli,
    run_json,
    run_main,
    sha256_file,
    snapshot,
    unprovisioned_vault,
    write_note,
)

STORE = Path(META_REL) / "store"


def _overlap(a: str, b: str) -> int:
    """Length of the longest suffix of ``a`` that starts ``b``."""
    return max(k for k in range(0, min(len(a), len(b)) + 1) if a.endswith(b[:k]))


# -- 7. chunking -----------------------------------------------------------------

def test_long_note_chunks(provisioned_sample: Path) -> None:
    recs = records_for(provisioned_sample, LONG_NOTE)
    assert len(recs) >= 3
    assert [r["chunk_index"] for r in recs] == list(range(len(recs)))
    for rec in recs:
        assert 0 < len(rec["raw_text"]) <= 4000
        assert rec["char_count"] == len(rec["raw_text"])
    for a, b in zip(recs, recs[1:]):
        n = _overlap(a["raw_text"], b["raw_text"])
        assert 100 <= n <= 200, f"overlap {n} between chunk {a['chunk_index']} and {b['chunk_index']}"
    # Dropping each overlap and concatenating gives back the whole visible body (links as their text), word for word.
    body = visible_text((provisioned_sample / LONG_NOTE).read_text(encoding="utf-8").split("\n---\n", 1)[1])
    text = recs[0]["raw_text"]
    for a, b in zip(recs, recs[1:]):
        text += "\n" + b["raw_text"][_overlap(a["raw_text"], b["raw_text"]):]
    assert text.split() == body.split()


def test_every_record_has_the_seed_schema(provisioned_sample: Path) -> None:
    recs = chunk_records(provisioned_sample)
    assert len(recs) == 54
    pages = {p.relative_to(provisioned_sample).as_posix() for p in (provisioned_sample / "wiki").rglob("*.md")}
    for rec in recs:
        missing = [f for f in SEED_FIELDS if f not in rec]
        assert not missing, (rec.get("page_path"), missing)
        assert rec["page_path"] in pages
        assert isinstance(rec["chunk_index"], int) and rec["chunk_index"] >= 0
        assert len(rec["prefix"]) <= 1000
        assert rec["prefix_source"] == "synthetic"
        assert rec["char_count"] == len(rec["raw_text"])
        assert rec["body_hash"] == sha256_text(rec["raw_text"])
        assert rec["page_body_hash"] == sha256_file(provisioned_sample / rec["page_path"])
        assert rec["contextualized_text"].startswith(rec["prefix"])
        assert rec["contextualized_text"].endswith(rec["raw_text"])
    segments = {loc[0].split("@")[0] for loc in chunk_locations(provisioned_sample)}
    assert segments == {f"store/{p.name}" for p in (provisioned_sample / STORE).iterdir()}  # one packed file
    assert not (provisioned_sample / META_REL / "chunks").exists()


def test_prefix_is_title_and_first_sentence_capped(tmp_path: Path) -> None:
    root = tmp_path / "v"
    long_title = "Very long title " * 90  # 1,440 chars
    write_note(root, "wiki/long title.md", f"---\ntitle: {long_title.strip()}\n---\n# Heading\n\nFirst words here. Second sentence.\n")
    write_note(root, "wiki/plain.md", "# Plain\n\nThe espresso tastes sour. More text follows.\n")
    run_json("provision", "--vault", root)
    (capped,) = records_for(root, "wiki/long title.md")
    assert len(capped["prefix"]) == 1000
    assert capped["prefix"].startswith("Very long title")
    (plain,) = records_for(root, "wiki/plain.md")
    assert plain["prefix"] == "plain. The espresso tastes sour."


def test_synthetic_addresses_are_stable(provisioned_sample: Path, tmp_path: Path) -> None:
    first = {r["page_path"]: r["page_address"] for r in chunk_records(provisioned_sample)}
    assert first["wiki/hot.md"].startswith("syn-")
    assert first[DESCALING_NOTE] == "c-000103"  # an explicit address: is kept
    synthetic = {p: a for p, a in first.items() if a.startswith("syn-")}
    assert len(synthetic) >= 5
    assert len(set(synthetic.values())) == len(synthetic), "two pages share a synthetic address"
    other = make_vault(tmp_path / "elsewhere")  # another folder, another run
    run_json("prefix", "--all", "--rebuild", "--vault", other)
    second = {r["page_path"]: r["page_address"] for r in chunk_records(other)}
    assert second == first


def test_empty_note_makes_no_chunks(provisioned_sample: Path) -> None:
    assert (provisioned_sample / EMPTY_NOTE).stat().st_size == 0
    assert records_for(provisioned_sample, EMPTY_NOTE) == []
    assert records_for(provisioned_sample, "wiki/homelab/services/Home Assistant.md") == []  # frontmatter only


def test_empty_note_alone(tmp_path: Path) -> None:
    root = tmp_path / "v"
    write_note(root, "wiki/empty.md", "")
    write_note(root, "wiki/real.md", "Some words about kettles.\n")
    proc = run_cli("prefix", "--all", "--vault", root)
    assert proc.returncode == 0 and proc.stderr == ""
    report = json.loads(proc.stdout)
    assert report["pages_seen"] == 2 and report["pages_empty"] == 1 and report["chunks_written"] == 1
    single = run_cli("prefix", "wiki/empty.md", "--vault", root)
    assert single.returncode == 0, single.stderr


# -- 8. incremental ------------------------------------------------------------

def test_second_prefix_run_writes_nothing(fresh_vault: Path) -> None:
    before = snapshot(fresh_vault / STORE)
    report = run_json("prefix", "--all", "--vault", fresh_vault)
    assert report["chunks_written"] == 0
    assert report["pages_changed"] == 0
    assert report["chunks_removed"] == 0
    assert snapshot(fresh_vault / STORE) == before
    assert index_file(fresh_vault).is_file(), "a no-op run must not invalidate the index"


def test_edit_rewrites_only_that_page(fresh_vault: Path) -> None:
    before = {loc[3]: loc[:3] for loc in chunk_locations(fresh_vault)}
    old_segments = set((fresh_vault / STORE).iterdir())
    served = retrieve_json(fresh_vault, "fan noise server")["candidates"]
    append_text(fresh_vault, LONG_NOTE, "\n\nPostscript: the quokkaberry fan is quieter.\n")
    report = run_json("prefix", "--all", "--vault", fresh_vault)
    assert report["pages_changed"] == 1
    assert report["changed_pages"] == [LONG_NOTE]
    after = {loc[3]: loc[:3] for loc in chunk_locations(fresh_vault)}
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed and all(k.startswith("c-000115:") for k in changed), changed
    assert report["chunks_written"] == len([k for k in changed if k in after])
    assert old_segments < set((fresh_vault / STORE).iterdir()), "published segments are never rewritten"
    # The index in service keeps its generation: still served, the edited page's old chunks dropped as stale.
    code, out, err = run_main("retrieve", "--vault", fresh_vault, "fan noise server", "--no-rerank")
    assert code == 0, err
    kept = [c["chunk_id"] for c in served if c["page_path"] != LONG_NOTE]
    now = [c for c in json.loads(out)["candidates"]]
    assert LONG_NOTE not in {c["page_path"] for c in now} and [c["chunk_id"] for c in now][:len(kept)] == kept

    n_page = len(records_for(fresh_vault, LONG_NOTE))
    build = run_json("index", "build", "--vault", fresh_vault)
    assert build["tokenized"] == n_page
    assert build["reused"] == build["docs"] - n_page
    assert build["docs"] == len(chunk_records(fresh_vault))
    assert [c["page_path"] for c in retrieve_json(fresh_vault, "quokkaberry")["candidates"]] == [LONG_NOTE]
    assert old_segments & set((fresh_vault / STORE).iterdir()), "the generation served before is kept one build"


def test_index_build_after_single_page_prefix(fresh_vault: Path) -> None:
    append_text(fresh_vault, DESCALING_NOTE, "\nNever use quokkaberry descaler.\n")
    report = run_json("prefix", DESCALING_NOTE, "--vault", fresh_vault)
    assert report["pages_changed"] == 1 and report["chunks_written"] == 1
    build = run_json("index", "build", "--vault", fresh_vault)
    assert (build["tokenized"], build["reused"], build["docs"]) == (1, 53, 54)


def test_deleted_page_chunks_are_removed(fresh_vault: Path) -> None:
    assert records_for(fresh_vault, DESCALING_NOTE)
    (fresh_vault / DESCALING_NOTE).unlink()
    report = run_json("prefix", "--all", "--vault", fresh_vault)
    assert report["pages_removed"] == 1 and report["chunks_removed"] == 1
    assert records_for(fresh_vault, DESCALING_NOTE) == []
    build = run_json("index", "build", "--vault", fresh_vault)
    assert build["docs"] == 53


def test_peek_writes_nothing(fresh_vault: Path, unprovisioned_vault: Path) -> None:
    append_text(fresh_vault, DESCALING_NOTE, "\nA peeked change.\n")
    (fresh_vault / "wiki/hot.md").unlink()
    before = snapshot(fresh_vault)
    report = run_json("prefix", "--all", "--peek", "--vault", fresh_vault)
    assert report["peek"] is True
    assert report["changed_pages"] == [DESCALING_NOTE]
    assert report["chunks_written"] == 1
    assert report["pages_removed"] == 1
    single = run_json("prefix", DESCALING_NOTE, "--peek", "--vault", fresh_vault)
    assert single["chunks_written"] == 1
    assert snapshot(fresh_vault) == before

    before = snapshot(unprovisioned_vault)
    report = run_json("prefix", "--all", "--peek", "--vault", unprovisioned_vault)
    assert report["chunks_written"] == 54
    assert snapshot(unprovisioned_vault) == before
    assert not (unprovisioned_vault / ".vault-meta").exists()


def test_provision_restores_a_damaged_chunk_record(fresh_vault: Path) -> None:
    """A record whose block no longer checks (a flipped bit) is not "unchanged": the next full run writes it again."""
    text = records_for(fresh_vault, LONG_NOTE)[2]["raw_text"]
    where = next(loc[0] for loc in chunk_locations(fresh_vault) if loc[3] == "c-000115:2")
    path, offset, size = record_frame(fresh_vault, "c-000115:2")
    data = bytearray(path.read_bytes())
    data[offset + size // 2] ^= 0x20
    path.write_bytes(bytes(data))
    block = where.partition("#")[0] + "#"  # every record of the flipped block is refused by the block's CRC
    refused = [loc[0] for loc, rec in zip(chunk_locations(fresh_vault), chunk_records(fresh_vault)) if rec is None]
    assert where in refused and all(r.startswith(block) for r in refused)
    report = run_json("provision", "--vault", fresh_vault)
    assert report["prefix"]["chunks_written"] >= 1 and report["index"]["rejected"] == {}
    assert records_for(fresh_vault, LONG_NOTE)[2]["raw_text"] == text


def test_provision_repairs_a_truncated_segment(fresh_vault: Path) -> None:
    """A segment cut short loses the records at its end; provision writes them again and doctor is satisfied."""
    (segment,) = (fresh_vault / STORE).iterdir()
    segment.write_bytes(segment.read_bytes()[: segment.stat().st_size * 2 // 3])
    doctor = run_cli("doctor", "--json", "--deep", "--vault", fresh_vault)
    assert doctor.returncode == 1 and "truncated" in doctor.stdout, doctor.stdout
    run_json("provision", "--vault", fresh_vault)
    assert all(r is not None for r in chunk_records(fresh_vault)) and len(chunk_records(fresh_vault)) == 54
    assert run_cli("doctor", "--json", "--deep", "--vault", fresh_vault).returncode == 0
    assert [c["page_path"] for c in retrieve_json(fresh_vault, "descaling citric acid")["candidates"]][0] == DESCALING_NOTE


# -- 10. records written by another tool -----------------------------------------

def _seed_record(root: Path, page: str, address: str, idx: int, raw: str, prefix: str) -> dict:
    return {
        "page_path": page,
        "page_address": address,
        "chunk_index": idx,
        "raw_text": raw,
        "contextualized_text": f"{prefix}\n\n{raw}",
        "prefix": prefix,
        "prefix_source": "synthetic",
        "char_count": len(raw),
        "body_hash": sha256_text(raw),
        "page_body_hash": sha256_file(root / page),
        "created_at": "2026-03-01T12:00:00Z",
    }


def test_index_built_from_foreign_records(tmp_path: Path) -> None:
    root = tmp_path / "v"
    write_note(root, "wiki/Kettle.md", "---\naddress: c-000001\n---\nThe kettle whistles at the boil.\n\nDescale with citric acid.\n")
    write_note(root, "wiki/Legacy.md", "---\naddress: c-000002\n---\nAn old note about the gramophone.\n")
    from vaulteval import Vault
    from vaulteval.chunks.catalog import ChunkParams, settings_of, write_entries
    from vaulteval.chunks.segments import SegmentWriter
    from vaulteval.vault.metadir import MetaDir

    r0 = _seed_record(root, "wiki/Kettle.md", "c-000001", 0, "The kettle whistles at the boil.", "Kettle. Notes.")
    r1 = _seed_record(root, "wiki/Kettle.md", "c-000001", 1, "Descale with citric acid.", "Kettle. Notes.")
    assert all("chunk_id" not in rec and "schema_version" not in rec for rec in (r0, r1))
    hashless = _seed_record(root, "wiki/Legacy.md", "c-000002", 0, "An old note about the gramophone.", "Legacy.")
    del hashless["body_hash"], hashless["page_body_hash"]
    pages = {"wiki/Kettle.md": ("c-000001", [r0, r1]), "wiki/Legacy.md": ("c-000002", [hashless])}
    with MetaDir.open(Vault(root), create=True) as meta:  # records another tool wrote into the packed store
        with SegmentWriter(meta) as seg:
            entries = {rel: {"address": address, "hash": "", "stat": None, "chunks": len(recs),
                             "records": [list(seg.append(rec)) for rec in recs]}
                       for rel, (address, recs) in pages.items()}
        write_entries(meta, settings_of(ChunkParams(), None), entries)

    report = run_json("index", "build", "--vault", root)
    assert report["docs"] == 2 and report["pages"] == 1
    assert report["rejected"] == {"hashless": 1}
    result = retrieve_json(root, "citric acid")
    (cand,) = result["candidates"]
    assert cand["chunk_id"] == "c-000001:1"
    assert cand["page_address"] == "c-000001"
    assert cand["page_path"] == "wiki/Kettle.md"
    assert cand["snippet"] == "Descale with citric acid."
    assert retrieve_json(root, "kettle whistles")["candidates"][0]["chunk_id"] == "c-000001:0"
    assert retrieve_json(root, "gramophone")["candidates"] == []


def test_full_prefix_run_lists_exactly_the_records_of_the_catalog(fresh_vault: Path) -> None:
    """provision hands this listing to the index build instead of reading the catalog again; it must match."""
    from vaulteval import Vault
    from vaulteval.chunks.packing import run_prefix

    vault = Vault(fresh_vault)
    append_text(fresh_vault, "wiki/howto/Descaling.md", "\n\nA new paragraph about citric acid.\n")
    (fresh_vault / "wiki" / "inbox" / "Untitled.md").write_text("Now the empty note has text.\n")
    report = run_prefix(vault)
    assert report.pages_changed == 2
    assert report.chunk_listing == chunk_locations(fresh_vault) and len(report.chunk_listing) == 55
