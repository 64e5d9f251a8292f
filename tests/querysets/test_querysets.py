"""Query sets: every format, wikilink resolution, validation errors with file:line, the check command.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_querysets.py -q``
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from vaulteval.querysets.beir import beir_page_path, import_beir
from vaulteval.cli.main import main
from vaulteval.querysets.links import AmbiguousLink, LinkResolver, UnknownLink
from vaulteval.querysets.queryset import QuerySetInvalid, load_queryset
from vaulteval.vault.vault import BUNDLED_SAMPLE, Vault

from evalkit import QUERYSET, eval_cache, make_vault, write_yaml  # noqa: F401

PAGES = {
    "books/Notes.md": "---\naliases: [Reading notes]\n---\nHow I write up books.",
    "cycling/Notes.md": "Tyre pressure notes.",
    "howto/Descaling.md": "---\naliases: [Descale, Decalcify]\n---\nCitric acid.",
    "people/Mara Lindqvist.md": "---\naliases: Mara\n---\nFriend.",
    "Top.md": "A page at the top of wiki/.",
    "deep/Top.md": "A deeper page with the same name.",
}


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(make_vault(tmp_path / "v", PAGES))


# ------------------------------------------------------------------ wikilinks

@pytest.mark.parametrize("link, page", [
    ("[[howto/Descaling]]", "wiki/howto/Descaling.md"),
    ("[[Descaling]]", "wiki/howto/Descaling.md"),
    ("[[descaling]]", "wiki/howto/Descaling.md"),
    ("[[wiki/howto/Descaling.md]]", "wiki/howto/Descaling.md"),
    ("[[Descaling#Steps|how to descale]]", "wiki/howto/Descaling.md"),
    ("[[Descaling#^block1]]", "wiki/howto/Descaling.md"),
    ("[[books/Notes]]", "wiki/books/Notes.md"),
    ("[[Mara]]", "wiki/people/Mara Lindqvist.md"),
    ("[[decalcify]]", "wiki/howto/Descaling.md"),
    ("[[Top]]", "wiki/Top.md"),  # an exact path from wiki/ wins over the deeper namesake
    ("[[deep/Top]]", "wiki/deep/Top.md"),
])
def test_wikilinks_resolve_as_obsidian_does(vault: Vault, link: str, page: str) -> None:
    assert LinkResolver.from_vault(vault).resolve(link) == page


def test_ambiguous_and_unknown_wikilinks_are_errors(vault: Vault) -> None:
    resolver = LinkResolver.from_vault(vault)
    with pytest.raises(AmbiguousLink, match="books/Notes.md.*cycling/Notes.md"):
        resolver.resolve("[[Notes]]")
    with pytest.raises(UnknownLink):
        resolver.resolve("[[Espresso]]")


def test_sample_queryset_resolves_paths_names_suffixes_and_aliases() -> None:
    qs = load_queryset(QUERYSET)
    assert (len(qs), len(qs.positive), len(qs.negative)) == (74, 66, 8)
    assert qs.sha256 == "sha256:" + hashlib.sha256(QUERYSET.read_bytes()).hexdigest()
    assert qs["q46"].relevant == {"wiki/people/Mara Lindqvist.md": 2}          # alias
    assert qs["q37"].relevant["wiki/cycling/Notes.md"] == 2                    # [[cycling/Notes]]
    assert qs["q14"].relevant == {"wiki/howto/Backups with restic.md": 2}      # alias "restic"
    assert qs["j02"].relevant == {"wiki/travel/ジャパンレールパス.md": 2}          # alias "JR Pass"
    assert qs["q01"].line == 4 and qs["n01"].is_negative
    qrels = qs.to_qrels()
    assert ("q01", "wiki/howto/Descaling.md", 2) in {(q.query_id, q.doc_id, q.relevance) for q in qrels}


# -------------------------------------------------------------------- formats

def test_jsonl_with_header_matches_yaml(tmp_path: Path, vault: Vault) -> None:
    rows = [{"name": "js", "vault": "v"},
            {"id": "a", "query": "descale", "relevant": {"[[Descale]]": 2}, "tags": ["x"]},
            {"id": "b", "query": "nothing", "relevant": {}}]
    path = tmp_path / "qs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    qs = load_queryset(path)
    assert qs.name == "js" and qs.format == "jsonl"
    assert qs["a"].relevant == {"wiki/howto/Descaling.md": 2} and qs["a"].line == 2
    assert qs["b"].is_negative


def _beir_folder(root: Path) -> Path:
    root.mkdir()
    docs = [{"_id": "d1", "title": "Zebra stripes", "text": "Stripes confuse flies."},
            {"_id": "d 2/x", "title": "", "text": "A document whose id needs escaping."},
            {"_id": ".hidden", "title": "Dot", "text": "Leading dot id."}]
    with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(d) for d in docs) + "\n")
    (root / "queries.jsonl").write_text(
        '{"_id": "1", "text": "why do zebras have stripes"}\n{"_id": "2", "text": "escaped ids"}\n'
        '{"_id": "3", "text": "only in train"}\n', encoding="utf-8")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td 2/x\t2\n2\t.hidden\t0\n")
    return root


def test_beir_import_writes_notes_and_a_queryset_that_loads(tmp_path: Path) -> None:
    src = _beir_folder(tmp_path / "beir")
    report = import_beir(src, tmp_path / "out", split="test")
    assert report["documents"] == 3 and report["queries"] == 2
    note = (tmp_path / "out" / "wiki" / "d1.md").read_text(encoding="utf-8")
    assert note.startswith('---\nbeir_id: "d1"\ntitle: "Zebra stripes"\n---\n') and "Stripes confuse flies." in note
    assert beir_page_path("d 2/x") == "wiki/d 2%2Fx.md" and beir_page_path(".hidden") == "wiki/%2Ehidden.md"
    assert len(beir_page_path("x" * 400).encode()) < 240
    from_yaml = load_queryset(report["queryset"])            # vault: .. relative to querysets/
    from_beir = load_queryset(src, tmp_path / "out", split="test")
    assert from_yaml["2"].relevant == from_beir["2"].relevant == {"wiki/d 2%2Fx.md": 2, "wiki/%2Ehidden.md": 0}
    assert "3" not in from_beir.by_id                        # not judged in this split
    assert len(list(Vault(tmp_path / "out").iter_pages())) == 3
    assert main(["import", "beir", str(src), "--out", str(tmp_path / "out")]) == 2  # not empty: refused
    assert main(["import", "beir", str(src), "--out", str(tmp_path / "cli"), "--name", "zoo"]) == 0
    assert (tmp_path / "cli" / "querysets" / "zoo-test.yaml").is_file()


def test_trec_topics_sgml_and_tsv_with_qrels(tmp_path: Path, vault: Vault) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("301 0 wiki/howto/Descaling.md 2\n301 0 wiki/books/Notes.md 0\n302 0 wiki/Top.md 1\n")
    sgml = tmp_path / "topics.txt"
    sgml.write_text("<top>\n<num> Number: 301\n<title> descale the machine\n<desc> Description:\nlong\n</top>\n"
                    "<top>\n<num> Number: 302\n<title> top page\n</top>\n<top>\n<num> Number: 303\n<title> none\n</top>\n")
    tsv = tmp_path / "topics.tsv"
    tsv.write_text("301\tdescale the machine\n302\ttop page\n303\tnone\n")
    for topics in (sgml, tsv):
        qs = load_queryset(topics, vault, qrels=qrels)
        assert qs["301"].text == "descale the machine"
        assert qs["301"].relevant == {"wiki/howto/Descaling.md": 2, "wiki/books/Notes.md": 0}
        assert qs["303"].is_negative and qs.format == "trec"


# ----------------------------------------------------------------- validation

@pytest.mark.parametrize("entry, line, message", [
    ({"id": "a", "query": "x", "relevant": {"wiki/nope.md": 1}}, 10, "unknown page wiki/nope.md"),
    ({"id": "a", "query": "x", "relevant": {"Descaling.md": 1}}, 10, "did you mean wiki/howto/Descaling.md"),
    ({"id": "a", "query": "x", "relevant": {"[[Notes]]": 1}}, 10, "matches 2 pages"),
    ({"id": "a", "query": "  ", "relevant": {}}, 7, "is empty"),
    ({"id": "a", "query": "x", "relevant": {"[[Top]]": -1}}, 10, "not a whole number >= 0"),
    ({"id": "a", "query": "x", "relevant": {"[[Top]]": "2"}}, 10, "not a whole number >= 0"),
    ({"id": "a", "query": "x", "relevant": {"[[Top]]": 1.5}}, 10, "not a whole number >= 0"),
    ({"id": "a", "query": "x", "relevant": {"[[Top]]": True}}, 10, "not a whole number >= 0"),
    ({"id": "a", "query": "x"}, 7, "has no relevant:"),
    ({"id": "a", "query": "x", "relevant": {}, "relevent": {}}, 10, "unknown field 'relevent'"),
])
def test_validation_errors_name_file_and_line(tmp_path: Path, vault: Vault, entry: dict, line: int, message: str) -> None:
    path = write_yaml(tmp_path / "bad.yaml", [{"id": "ok", "query": "fine", "relevant": {}}, entry], vault="v")
    with pytest.raises(QuerySetInvalid) as info:
        load_queryset(path)
    first = info.value.problems[0]
    assert (first.path, first.line) == (str(path), line) and message in first.message
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_duplicate_ids_and_judgments_are_all_reported(tmp_path: Path, vault: Vault) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("vault: v\nqueries:\n"
                    "  - {id: a, query: one, relevant: {}}\n"
                    "  - {id: a, query: two, relevant: {}}\n"
                    "  - {id: b, query: three, relevant: {'[[Top]]': 1, 'wiki/Top.md': 2}}\n", encoding="utf-8")
    with pytest.raises(QuerySetInvalid) as info:
        load_queryset(path)
    messages = [str(p) for p in info.value.problems]
    assert any(m.startswith(f"{path}:4:") and "duplicate id 'a' (first at line 3)" in m for m in messages)
    assert any(m.startswith(f"{path}:5:") and "judged twice" in m for m in messages)


def test_bad_yaml_reports_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("queries:\n  - id: a\n    query: [unclosed\n", encoding="utf-8")
    with pytest.raises(QuerySetInvalid, match=r"broken.yaml:\d+: not valid YAML"):
        load_queryset(path, BUNDLED_SAMPLE)


def test_queryset_check_command(tmp_path: Path, vault: Vault, capsys: pytest.CaptureFixture) -> None:
    good = write_yaml(tmp_path / "good.yaml", [{"id": "a", "query": "descale", "relevant": {"[[Descale]]": 1}}])
    assert main(["queryset", "check", "--vault", str(vault.root), str(good)]) == 0
    assert "ok: 1 queries" in capsys.readouterr().out
    bad = write_yaml(tmp_path / "bad.yaml", [{"id": "a", "query": "x", "relevant": {"[[Nope]]": 1}}])
    assert main(["queryset", "check", "--vault", str(vault.root), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:6: query 'a': [[Nope]] matches no page" in err


def test_a_query_over_the_tokenizer_limit_is_a_problem(tmp_path) -> None:
    """retrieve refuses it (exit 2), so the check names it with its line instead of failing mid-run."""
    from pipeline_fixtures import run_main, write_note

    root = tmp_path / "v"
    write_note(root, "wiki/a.md", "# A\n\nText.\n")
    qs = tmp_path / "qs.jsonl"
    qs.write_text('{"id": "ok", "query": "text", "relevant": {"wiki/a.md": 1}}\n'
                  + '{"id": "long", "query": "' + "x" * 8001 + '", "relevant": {"wiki/a.md": 1}}\n')
    code, _out, err = run_main("queryset", "check", "--vault", root, qs)
    assert code == 2
    assert f"{qs}:2: query 'long' is longer than 8000 characters" in err
