"""Field-weighted BM25 (title, aliases, headings, code) and the english analyzer options."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pipeline_fixtures import run_json
from vaulteval import Vault
from vaulteval.errors import UsageError
from vaulteval.index.analyzers import LUCENE_STOPWORDS, AnalyzerNameError, english_analyzer_name, parse_analyzer_name
from vaulteval.index.fieldtext import code_text, headings_text
from vaulteval.index.fields import fields_path, open_fields
from vaulteval.index.analysis import lookup
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.vault.metadir import META_REL


def _pages(root: Path, query: str, strategy: str) -> list[str]:
    out = run_json("retrieve", "--vault", root, query, "--no-rerank", "--strategy", strategy, "--top", "3")
    return [c["page_path"] for c in out["candidates"]]


@pytest.mark.parametrize("query, page", [
    ("Espresso machine", "wiki/coffee/Espresso machine.md"),  # the title
    ("Levain", "wiki/baking/Sourdough starter.md"),  # an alias
    ("Tokyo kissaten", "wiki/travel/japan/東京の喫茶店.md"),  # an English alias of a Japanese title
])
def test_a_known_item_query_puts_that_note_first_only_with_field_weights(
        provisioned_sample: Path, query: str, page: str) -> None:
    assert _pages(provisioned_sample, query, "bm25")[0] != page
    assert _pages(provisioned_sample, query, "bm25:w_title=2,w_aliases=2")[0] == page


def test_default_weights_are_exactly_seed_bm25(provisioned_sample: Path) -> None:
    plain = run_json("retrieve", "--vault", provisioned_sample, "espresso", "--no-rerank", "--top", "10")
    same = run_json("retrieve", "--vault", provisioned_sample, "espresso", "--no-rerank", "--top", "10",
                    "--strategy", "bm25:w_body=1,w_title=0")
    assert same.pop("pipeline") == {"text": "bm25", "source": "strategy"}  # the default weights, written out
    assert plain.pop("pipeline")["source"] == "default"
    assert same == plain and plain["strategy"] == "bm25-only"


def test_the_field_file_belongs_to_its_index_build(provisioned_sample: Path) -> None:
    vault = Vault(provisioned_sample)
    index = Retriever(vault).index()
    fields = open_fields(vault.meta_dir, index)
    assert fields is not None and set(fields.tables) == {"title", "aliases", "headings", "code"}
    assert fields_path(vault.meta_dir).is_file()
    # A field file from another build (different identity) is ignored, never mixed in.
    other = index.with_params(index.k1, index.b)
    other.header = dict(index.header, built_at="1999-01-01T00:00:00Z")
    assert open_fields(vault.meta_dir, other) is None


def test_code_and_heading_extraction() -> None:
    text = "# Setup\nprose\n```bash\nrestic backup /srv\n# not a heading\n```\n## Restore\n~~~\nrestic restore\n"
    assert code_text(text).strip() == "restic backup /srv\n# not a heading\nrestic restore"
    assert headings_text(text).split("\n") == ["Setup", "Restore"]


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.sampled_from(["# Title", "  ## Sub ##", "#nospace", "text # mid", "", "    # four", "`x`",
                                 "~~", "``", "- item", "###### six\t"]), max_size=10))
def test_a_chunk_without_fences_gives_the_headings_and_code_of_the_line_by_line_reading(lines: list[str]) -> None:
    """A chunk with no ``` or ~~~ skips the line-by-line fence walk; a fence opened on a last line of its own
    hides nothing, so it forces that walk and must give the same fields."""
    text = "\n".join(lines)
    assert headings_text(text) == headings_text(text + "\n```")
    assert code_text(text) == code_text(text + "\n~~~") == ""


@pytest.mark.parametrize("stemmer, stopwords, name", [
    ("snowball", "short", "english"), ("porter", "short", "english:stemmer=porter"),
    ("snowball", "lucene", "english:stopwords=lucene"), ("none", "none", "english:stemmer=none,stopwords=none"),
])
def test_analyzer_names_round_trip(stemmer: str, stopwords: str, name: str) -> None:
    assert english_analyzer_name(stemmer, stopwords) == name
    if name != "english":
        assert parse_analyzer_name(name) == (stemmer, stopwords)
        assert lookup(name)("the generously descaled machines")


def test_a_stoplist_name_of_another_version_is_refused() -> None:
    assert english_analyzer_name("porter", "short") == "english:stemmer=porter"
    with pytest.raises(AnalyzerNameError, match="stopwords"):
        english_analyzer_name("porter", "seed")


def test_analyzer_options_change_terms_as_documented() -> None:
    text = "It is not the generously descaled machines"
    assert lookup("english:stemmer=porter")(text) == ["not", "gener", "descal", "machin"]
    assert lookup("english")(text) == ["not", "generous", "descal", "machin"]
    assert "not" not in lookup("english:stopwords=lucene")(text) and "not" in LUCENE_STOPWORDS
    assert lookup("english:stemmer=none,stopwords=none")(text)[:3] == ["it", "is", "not"]
    for bad in ("english:stemmer=lovins", "english:stopwords=seed", "english:colour=red"):
        with pytest.raises(UsageError):
            lookup(bad)


# -- incremental field builds -------------------------------------------------------

def _field_sections(root: Path) -> dict:
    from vaulteval.index.file import read_sections

    header, sections = read_sections(fields_path(Path(root) / META_REL))
    out = {name: bytes(sections[name]) if sections.dtype(name) == "bytes" else sections[name].tolist()
           for name in sections}
    return {"header": {k: header[k] for k in ("fields", "n_docs", "analyzer", "extract_version")}, **out}


def _fresh_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many chunks each field build did not carry over from the previous field file; ``_disk_reads``
    (appended alongside) how many of those it read from their pages and records instead of taking the terms
    the index build collected in its own pass."""
    from vaulteval.index import fieldbuild

    counts: list[int] = []
    real = fieldbuild._fresh_counts

    def counting(vault, analyze, docs, collected=None):
        counts.append(len(docs))
        rows = collected.rows if collected is not None else {}
        _disk_reads.append(sum((d.page_path, d.chunk_id, d.body_hash, d.page_body_hash) not in rows for _, d in docs))
        return real(vault, analyze, docs, collected)

    _disk_reads.clear()
    monkeypatch.setattr(fieldbuild, "_fresh_counts", counting)
    return counts


_disk_reads: list[int] = []


def test_an_incremental_field_build_equals_a_full_one_and_reads_only_edited_chunks(
        fresh_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.pipeline.provision import ensure_fields

    reads = _fresh_reads(monkeypatch)
    page = next(p for p in sorted((fresh_vault / "wiki").rglob("*.md")) if "```" not in p.read_text("utf-8"))
    page.write_text(page.read_text("utf-8") + "\n## A brand new heading\n\n```\nzqxcode --flag\n```\n", "utf-8")
    run_json("provision", "--vault", fresh_vault)
    incremental = _field_sections(fresh_vault)
    n_docs = incremental["header"]["n_docs"]
    assert 0 < reads[-1] < n_docs // 4  # the edited page's chunks, not the vault
    assert _disk_reads[-1] == 0  # their terms were taken in the index build's pass, no record read again
    assert "zqxcode" in incremental["code.terms"].decode()

    fields_path(fresh_vault / META_REL).unlink()
    assert ensure_fields(Vault(fresh_vault))
    assert reads[-1] == n_docs == _disk_reads[-1]  # no previous file and no build: every chunk read
    assert _field_sections(fresh_vault) == incremental


@pytest.mark.parametrize("damage", ["digests-short", "digests-ragged", "digests-not-bytes", "older-json-keys",
                                    "doc-out-of-range",
                                    "tfs-short", "docs-float", "other-version"])
def test_an_unusable_previous_field_file_means_a_full_build(fresh_vault: Path, damage: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A field file that cannot seed a build (even one with right checksums) is not trusted: every chunk is read."""
    from vaulteval.index.file import read_sections, write_sections
    from vaulteval.pipeline.provision import build
    from vaulteval.vault.metadir import MetaDir

    expected = _field_sections(fresh_vault)
    path = fields_path(fresh_vault / META_REL)
    header, sections = read_sections(path)
    data = {name: bytes(sections[name]) if sections.dtype(name) == "bytes" else sections[name].copy()
            for name in sections}
    if damage == "digests-short":  # one row fewer than n_docs
        data["doc_digests"] = data["doc_digests"][16:]
    elif damage == "digests-ragged":  # not a whole number of digests
        data["doc_digests"] = data["doc_digests"] + b"x"
    elif damage == "digests-not-bytes":
        data["doc_digests"] = np.frombuffer(data["doc_digests"], dtype="<u1").copy()
    elif damage == "older-json-keys":  # a field file of the JSON row keys: rebuilt once
        data["doc_keys"] = json.dumps([["wiki/a.md", "a:0", "sha256:0", "sha256:1"]]).encode()
        del data["doc_digests"]
    elif damage == "doc-out-of-range":
        data["title.post_docs"][0] = 10**6
    elif damage == "tfs-short":
        data["title.post_tfs"] = data["title.post_tfs"][:-1]
    elif damage == "docs-float":
        data["title.post_docs"] = data["title.post_docs"].astype("<f8")
    else:
        header = dict(header, extract_version=0)
    with MetaDir.open(Vault(fresh_vault)) as meta, meta.sub("bm25") as folder:
        write_sections(folder, path.name, header, data)
    reads = _fresh_reads(monkeypatch)
    build(Vault(fresh_vault))  # the index and field build a provision makes, under the lock
    assert reads == [expected["header"]["n_docs"]]
    assert _field_sections(fresh_vault) == expected


def test_a_row_whose_digest_differs_is_read_again_and_the_others_are_carried(
        fresh_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are named by a digest of (page path, chunk id, hashes): a changed digest is one unknown row, read
    from its page and record; the file built is the one a full build makes."""
    from vaulteval.index.file import read_sections, write_sections
    from vaulteval.pipeline.provision import build
    from vaulteval.vault.metadir import MetaDir

    expected = _field_sections(fresh_vault)
    path = fields_path(fresh_vault / META_REL)
    header, sections = read_sections(path)
    data = {name: bytes(sections[name]) if sections.dtype(name) == "bytes" else sections[name].copy()
            for name in sections}
    assert len(data["doc_digests"]) == 16 * header["n_docs"] and b"wiki/" not in data["doc_digests"]
    data["doc_digests"] = bytes([data["doc_digests"][0] ^ 1]) + data["doc_digests"][1:]
    with MetaDir.open(Vault(fresh_vault)) as meta, meta.sub("bm25") as folder:
        write_sections(folder, path.name, header, data)
    reads = _fresh_reads(monkeypatch)
    build(Vault(fresh_vault))
    assert reads == [1]
    assert _field_sections(fresh_vault) == expected


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_fifo_or_symlink_in_place_of_the_field_file_is_not_read_and_not_written_through(
        fresh_vault: Path, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO would hang a reader; a symlink could point at a field file (or anything) outside the vault.
    Neither seeds the build: every chunk is read, the file is replaced by a regular one, the target is untouched."""
    import os

    from vaulteval.pipeline.provision import build

    path = fields_path(fresh_vault / META_REL)
    expected = _field_sections(fresh_vault)
    outside = tmp_path / "outside.vti"
    before = path.read_bytes()
    outside.write_bytes(before)  # a valid field file, so only the refusal keeps it out
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(outside)
    reads = _fresh_reads(monkeypatch)
    build(Vault(fresh_vault))
    assert reads == [expected["header"]["n_docs"]]
    assert path.is_file() and not path.is_symlink()
    assert _field_sections(fresh_vault) == expected
    assert outside.read_bytes() == before
