"""Fuzz the workbench's inputs: query-set files in every format (queryset check, load) and run
manifests (eval verify). Only documented exit codes, one line (a check lists FILE:LINE problems).

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/fuzz -q``
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from vaulteval import Vault
from vaulteval.errors import UsageError
from vaulteval.querysets.queryset import load_queryset

from fuzzkit import Scratch, cli_ok, count, fuzz_settings
from pipeline_fixtures import snapshot, write_note
from test_fuzz_files import json_values

text = st.text(max_size=30)
keys = st.one_of(st.sampled_from(["wiki/espresso.md", "[[espresso]]", "[[bread|x]]", "wiki/../x.md", "espresso",
                                  "/etc/passwd", "[[]]", "wiki/bread.md"]), text)
grades = st.one_of(st.integers(-2, 3), st.booleans(), st.floats(), text, st.none())
query_dicts = st.fixed_dictionaries(
    {"id": st.one_of(text, st.integers()), "query": st.one_of(text, st.just("espresso"), st.none())},
    optional={"relevant": st.one_of(st.dictionaries(keys, grades, max_size=3), json_values),
              "tags": st.one_of(st.lists(text, max_size=2), text, json_values),
              "extra": json_values})
query_lists = st.lists(st.one_of(query_dicts, json_values), max_size=4)


def _yaml_file(qs: list, vault_entry) -> bytes:
    doc = {"name": "fuzz", "queries": qs} if vault_entry is None else {"vault": vault_entry, "queries": qs}
    return yaml.safe_dump(doc, allow_unicode=True).encode()


FORMATS = {
    "yaml": st.one_of(
        st.builds(lambda qs, v: ("qs.yaml", _yaml_file(qs, v), None), query_lists, st.one_of(st.none(), text)),
        st.builds(lambda b: ("qs.yaml", b, None), st.binary(max_size=200)),
        st.builds(lambda t: ("qs.yaml", t.encode("utf-8", "surrogatepass"), None), st.text(max_size=200))),
    "jsonl": st.one_of(
        st.builds(lambda qs: ("qs.jsonl", "\n".join(json.dumps(q) for q in qs).encode(), None), query_lists),
        st.builds(lambda b: ("qs.jsonl", b, None), st.binary(max_size=200))),
    # BEIR folder: queries.jsonl + qrels/test.tsv
    "beir": st.builds(
        lambda qs, qrels: ("beir", qs, qrels),
        st.one_of(st.lists(st.fixed_dictionaries({"_id": st.one_of(text, st.integers()), "text": text}),
                           max_size=3).map(lambda r: "\n".join(map(json.dumps, r)).encode()),
                  st.binary(max_size=100)),
        st.one_of(st.lists(st.tuples(text, st.sampled_from(["espresso", "bread", "x"]), st.integers(-1, 2)),
                           max_size=3).map(lambda r: "\n".join("\t".join(map(str, x)) for x in r).encode()),
                  st.binary(max_size=100))),
    # TREC topics (tab-separated or SGML) + qrels
    "trec": st.builds(
        lambda topics, qrels: ("topics.txt", topics, qrels),
        st.one_of(st.lists(st.tuples(text, text), max_size=3).map(
            lambda r: "\n".join(f"{a}\t{b}" for a, b in r).encode()),
            st.builds(lambda n, t: f"<top>\n<num> Number: {n}\n<title> {t}\n</top>\n".encode(), text, text),
            st.binary(max_size=100)),
        st.one_of(st.lists(st.tuples(text, st.sampled_from(["espresso", "bread", "wiki/bread.md"]),
                                     st.integers(-1, 3)), max_size=3).map(
            lambda r: "\n".join(f"{a} 0 {b} {g}" for a, b, g in r).encode()),
            st.binary(max_size=100))),
}


def _vault(root: Path) -> Path:
    write_note(root, "wiki/espresso.md", "# Espresso\n\nDescale the espresso machine.\n")
    write_note(root, "wiki/bread.md", "# Bread\n\nA country loaf.\n")
    return root


@pytest.mark.parametrize("fmt", list(FORMATS))
@fuzz_settings(0.5)
@given(data=st.data())
def test_queryset_files(tmp_path: Path, fmt: str, data) -> None:
    name, content, second = data.draw(FORMATS[fmt])
    with Scratch(tmp_path) as scratch:
        root = _vault(scratch / "v")
        extra: list[str] = []
        if name == "beir":
            target = scratch / "beir"
            (target / "qrels").mkdir(parents=True)
            (target / "queries.jsonl").write_bytes(content)
            (target / "qrels" / "test.tsv").write_bytes(second)
        else:
            target = scratch / name
            target.write_bytes(content)
            if second is not None:
                (scratch / "qrels.txt").write_bytes(second)
                extra = ["--qrels", str(scratch / "qrels.txt")]
        count(f"query sets: {fmt}")
        notes = snapshot(root)
        cli_ok("queryset", "check", "--vault", root, target, *extra, codes={0, 2})
        try:
            load_queryset(str(target), Vault(root), qrels=str(scratch / "qrels.txt") if extra else None)
        except UsageError:
            pass
        assert snapshot(root) == notes


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("manifest")
    root = _vault(base / "v")
    cli_ok("provision", "--vault", root, codes={0})
    qs = base / "qs.yaml"
    qs.write_text(yaml.safe_dump({"queries": [
        {"id": "q1", "query": "descale espresso", "relevant": {"wiki/espresso.md": 2}},
        {"id": "q2", "query": "country loaf", "relevant": {"wiki/bread.md": 1}}]}))
    cli_ok("eval", "run", "--vault", root, "--queryset", qs, "--strategy", "bm25", "--out", base / "runs",
           "--id", "base", codes={0})
    assert cli_ok("eval", "verify", base / "runs" / "base", codes={0})[0] == 0
    return root, base / "runs" / "base"


MANIFEST_PATHS = ["id", "schema", "vault", "vault.root", "vault.fingerprint", "queryset", "queryset.path",
                  "queryset.sha256", "queryset.split", "parameters", "parameters.k", "parameters.measures",
                  "parameters.baseline", "parameters.seed", "strategies", "strategies.0", "strategies.0.strategy",
                  "strategies.0.strategy.k1", "strategies.0.strategy.analyzer", "strategies.0.strategy.index.k1",
                  "strategies.0.strategy.index", "strategies.0.strategy.first", "strategies.0.strategy.first.stage",
                  "strategies.0.strategy.format", "strategies.0.trec",
                  "strategies.0.name", "strategies.0.index"]


def _set(doc, path: str, value) -> None:
    """Set ``path`` in the manifest; a path an earlier edit made impossible (a list where a key was) is skipped."""
    *parents, last = path.split(".")
    for p in parents:
        if isinstance(doc, list):
            doc = doc[int(p)] if p.isdigit() and int(p) < len(doc) else None
        else:
            doc = doc.get(p) if isinstance(doc, dict) else None
        if doc is None:
            return
    if isinstance(doc, list):
        if last.isdigit() and int(last) < len(doc):
            doc[int(last)] = value
    elif isinstance(doc, dict):
        doc[last] = value


@fuzz_settings(0.5)
@given(st.one_of(st.lists(st.tuples(st.sampled_from(MANIFEST_PATHS),
                                    st.one_of(json_values, st.sampled_from(["../x", "..", "a/b", "", "bm25.trec"]))),
                          min_size=1, max_size=3),
                 st.binary(max_size=100)))
@example(edits=[("strategies.0.index", "../x")])  # found by this test: a string where the index record belongs
@example(edits=[("strategies.0.index", [1, 2])])
@example(edits=[("strategies.0", []), ("strategies.0.strategy.k1", "../x")])  # edits that undo each other's paths
@example(edits=[("strategies", []), ("strategies.0.strategy", "../x")])
@example(edits=[("parameters.measures", [[]])])  # found at 2,000 examples: a measure that is not a name
@example(edits=[("strategies.0.strategy.index", {"\x1e": None})])
def test_manifests_through_verify(tmp_path: Path, run_dir, edits) -> None:
    root, run = run_dir
    with Scratch(tmp_path) as scratch:
        copy = scratch / "run"
        shutil.copytree(run, copy)
        if isinstance(edits, bytes):
            (copy / "manifest.json").write_bytes(edits)
        else:
            doc = json.loads((copy / "manifest.json").read_text())
            for path, value in edits:
                _set(doc, path, value)
            (copy / "manifest.json").write_text(json.dumps(doc))
        count("run manifests")
        before = snapshot(scratch)
        notes = snapshot(root / "wiki")
        cli_ok("eval", "verify", copy, codes={0, 1, 2})
        assert snapshot(scratch) == before, "verify wrote into or beside the run folder"
        assert snapshot(root / "wiki") == notes


pair_dicts = st.fixed_dictionaries(
    {"query_id": st.one_of(text, st.integers(), json_values), "query": st.one_of(text, json_values),
     "page": st.one_of(st.sampled_from(["wiki/espresso.md", "../x.md", ""]), text, json_values),
     "snippet": st.one_of(text, json_values)},
    optional={"best_rank": st.one_of(st.integers(-1, 3), json_values), "strategies": json_values,
              "llm_grade": st.one_of(st.integers(-1, 3), st.booleans(), json_values), "llm_reason": json_values})
pool_files = st.one_of(
    st.builds(lambda pairs, depth: yaml.safe_dump({"depth": depth, "strategies": ["bm25"], "pairs": pairs},
                                                   allow_unicode=True).encode(),
              st.lists(st.one_of(pair_dicts, json_values), max_size=3), st.one_of(st.integers(1, 5), json_values)),
    st.binary(max_size=200),
    st.builds(lambda t: t.encode("utf-8", "surrogatepass"), st.text(max_size=200)))


@fuzz_settings(0.5)
@given(content=pool_files)
@example(content=b"pairs:\n- {query_id: q1, query: x, page: a.md, snippet: y, llm_grade: true}\n")
@example(content=b"depth: 1\nstrategies: [1]\npairs: []\n")
def test_pool_files_through_pregrade(tmp_path: Path, content: bytes) -> None:
    from fake_llm_servers import FakeServer, Reply

    with Scratch(tmp_path) as scratch, \
            FakeServer([Reply(200, {"response": '{"grade": 1, "reason": "on topic"}'})]) as srv:
        (scratch / "pool.yaml").write_bytes(content)
        count("pool files")
        code, _, _ = cli_ok("queryset", "pregrade", scratch / "pool.yaml", "--out", scratch / "out.yaml",
                            "--llm-host", srv.url, "--quiet", codes={0, 2})
        assert (scratch / "out.yaml").exists() == (code == 0)
        assert (scratch / "pool.yaml").read_bytes() == content  # the input pool is never rewritten
        if code == 0:  # a pool the reader takes is one the judge notebook can page through
            from vaulteval.notebooks.grader import Grader
            from vaulteval.workbench.pooling import read_pool

            grader = Grader(read_pool(scratch / "out.yaml"), queryset="q")
            for index in range(len(grader.pairs)):
                assert grader.card_html(index)
            grader.grade(2)
