"""Run directories: what they hold, verify (passes untouched, fails after an edit), the eval commands.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_manifest.py -q``
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from vaulteval.cli.main import main
from vaulteval.workbench.evaluate import evaluate
from vaulteval.workbench.manifest import NotARunDir, load_run_dir
from vaulteval.querysets.queryset import load_queryset
from vaulteval.embeddings.rerank import RerankConfig
from vaulteval.cli.sample import copy_sample
from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank
from vaulteval.workbench.strategy import Strategy
from vaulteval.vault.vault import Vault
from vaulteval.workbench.verify import verify_run
from vaulteval.pipeline.provision import provision

from evalkit import QUERYSET, eval_cache, make_vault, scripted_embed, write_yaml  # noqa: F401
from ollama_server import FakeOllama

STRATEGIES = ["bm25", "bm25:analyzer=english", "bm25:target=800,overlap=100"]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    vault = Vault(copy_sample(tmp_path / "v"))
    provision(vault)
    ev = evaluate(vault, load_queryset(QUERYSET, vault), STRATEGIES, measures=["nDCG@10", "R@10", "RR"], k=10)
    return ev.save(tmp_path / "runs", run_id="r1")


def test_run_directory_contents_and_manifest(run_dir: Path) -> None:
    names = {p.name for p in run_dir.iterdir()}
    assert {"manifest.json", "metrics.csv", "per_query.csv", "misses.csv", "queries.csv", "pool.csv", "report.md",
            "vault-pages.txt", "bm25.trec", "bm25-english.trec", "bm25-target=800-overlap=100.trec"} <= names
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["python"] == sys.version.split()[0] and m["packages"]["vaulteval"] and m["packages"]["ir-measures"]
    assert m["queryset"]["sha256"] == "sha256:" + hashlib.sha256(QUERYSET.read_bytes()).hexdigest()
    assert m["vault"]["fingerprint"].startswith("sha256:") and m["vault"]["pages"] == 53
    assert m["parameters"] == {"k": 10, "measures": ["nDCG@10", "R@10", "RR"], "baseline": "bm25", "seed": 0,
                               "use_vault_index": True, "condensed": False, "allow_stale": False}
    by_name = {s["name"]: s for s in m["strategies"]}
    assert by_name["bm25"]["index"]["source"] == "vault" and by_name["bm25-english"]["index"]["analyzer"] == "english"
    assert by_name["bm25-target=800-overlap=100"]["index"]["chunk_params"]["target"] == 800
    assert all(s["index"]["fingerprint"].startswith("sha256:") and s["rerank"] is None for s in m["strategies"])
    assert m["started_at"] < m["finished_at"]
    metrics = pd.read_csv(run_dir / "metrics.csv")
    assert {"nDCG@10", "R@10", "RR", "pool_recall@100", "negatives_returned_any"} <= set(metrics.measure)
    per_query = pd.read_csv(run_dir / "per_query.csv")
    assert len(per_query) == 3 * 74 and per_query.negative.sum() == 3 * 8
    assert per_query[per_query.negative]["nDCG@10"].isna().all()
    misses = pd.read_csv(run_dir / "misses.csv")
    assert set(misses.cause) <= {"not-indexed", "no-query-term", "outside-pool", "below-cutoff"}
    loaded = load_run_dir(run_dir)
    assert [r.name for r in loaded.runs] == ["bm25", "bm25-english", "bm25-target=800-overlap=100"]
    pool = pd.read_csv(run_dir / "pool.csv")  # BM25 runs: ranked by BM25, no other component
    assert (pool.score == pool.bm25_score).all() and pool[["dense_score", "fused_score", "rerank_score"]].isna().all().all()


def test_verify_passes_untouched_and_fails_after_a_note_edit(run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert verify_run(run_dir).ok
    assert main(["eval", "verify", str(run_dir)]) == 0
    note = run_dir.parent.parent / "v" / "wiki" / "howto" / "Descaling.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nAlso: espresso espresso machine.\n", encoding="utf-8")
    result = verify_run(run_dir)
    assert not result.ok
    assert "vault: changed: wiki/howto/Descaling.md" in result.diffs
    assert any(d.startswith("metrics.csv: bm25 ") and " value: " in d for d in result.diffs)
    capsys.readouterr()
    assert main(["eval", "verify", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"NOT reproduced: {run_dir}") and "changed: wiki/howto/Descaling.md" in out


def test_a_directory_of_another_run_schema_is_refused_in_one_line(
        run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["schema"] = 1
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    for argv in (["eval", "verify", str(run_dir)], ["eval", "compare", str(run_dir), str(run_dir)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "run schema 1" in err and "vaulteval eval run" in err, err


def test_a_queries_table_without_its_columns_is_refused_in_one_line(
        run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    queries = pd.read_csv(run_dir / "queries.csv", dtype={"query_id": str})
    queries.drop(columns=["reranked", "fallback"]).to_csv(run_dir / "queries.csv", index=False)
    with pytest.raises(NotARunDir, match="lacks the column.s. reranked, fallback"):
        load_run_dir(run_dir)


def test_a_run_made_with_other_analyzer_library_versions_is_refused_in_one_line(
        run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    path = run_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    english = next(s for s in manifest["strategies"] if s["index"]["analyzer"] == "english")
    from importlib.metadata import version

    installed = version("PyStemmer")
    assert english["index"]["analyzer_libraries"] == {"PyStemmer": installed}  # recorded as built
    english["index"]["analyzer_libraries"]["PyStemmer"] = "0.0.1"
    path.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["eval", "verify", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "PyStemmer 0.0.1" in err and installed in err


@pytest.mark.parametrize("measures", [[[]], [], [""], ["nDCG@10", 3], "nDCG@10"])
def test_a_manifest_whose_measures_are_not_names_is_refused_in_one_line(
        run_dir: Path, capsys: pytest.CaptureFixture, measures: object) -> None:
    path = run_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["parameters"]["measures"] = measures  # found by the manifest fuzz: [[]] was an internal error
    path.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["eval", "verify", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "measures" in err and "internal error" not in err


def test_eval_commands_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    vault = copy_sample(tmp_path / "v")
    args = ["eval", "run", "--vault", str(vault), "--queryset", str(QUERYSET), "--out", str(tmp_path / "runs"),
            "--measures", "nDCG@10,RR", "--k", "5"]
    assert main(args + ["--strategy", "bm25", "--id", "a"]) == 0
    out = capsys.readouterr().out
    assert "| bm25 " in out and out.strip().endswith(str(tmp_path / "runs" / "a"))
    assert main(args + ["--strategy", "bm25:analyzer=english", "--id", "b"]) == 0
    capsys.readouterr()
    report = tmp_path / "cmp.md"
    assert main(["eval", "compare", str(tmp_path / "runs" / "a"), str(tmp_path / "runs" / "b"),
                 "--out", str(report)]) == 0
    assert "| bm25-english" in capsys.readouterr().out and report.is_file()
    assert main(["eval", "run", "--vault", str(vault), "--queryset", str(QUERYSET), "--strategy", "bm25:k1=x"]) == 2
    assert main(["eval", "verify", str(tmp_path)]) == 2  # not a run directory


def test_reranked_run_records_backend_model_and_digest(tmp_path: Path) -> None:
    server = FakeOllama(scripted_embed, models=("nomic-embed-text-v2-moe:latest",))
    try:
        root = make_vault(tmp_path / "v", {"z.md": "Zebra herd.", "g.md": "Giraffe and zebra."})
        qs = load_queryset(write_yaml(tmp_path / "qs.yaml", [{"id": "a", "query": "zebra", "relevant": {"[[z]]": 1}}],
                                      vault="v"))
        cfg = RerankConfig(backend="ollama", host=server.url, model="nomic-embed-text-v2-moe")
        ev = evaluate(Vault(root), qs, ["bm25", Strategy(name="rr", reranker=EmbeddingRerank.from_config(cfg))], measures=["RR"])
        m = json.loads((ev.save(tmp_path / "runs", run_id="x") / "manifest.json").read_text())
        rr = m["strategies"][1]["rerank"]
        assert rr["backend"] == "ollama" and rr["model"] == "nomic-embed-text-v2-moe:latest"
        assert rr["digest"] == server.digest("nomic-embed-text-v2-moe:latest").removeprefix("sha256:")
        assert rr["labels"] == {"bm25+rerank:ollama": 1} and rr["fallback"] is None
        assert m["packages"]["ollama"]
        assert verify_run(tmp_path / "runs" / "x").ok
        server.digest_salt = "re-pulled"
        assert any("embedding digest" in d for d in verify_run(tmp_path / "runs" / "x").diffs)
    finally:
        server.stop()


@pytest.mark.parametrize("command", [["queryset", "check"], ["import", "beir"], ["eval", "run"], ["eval", "verify"],
                                     ["eval", "compare"]])
def test_every_workbench_command_has_help(command: list[str], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0 and "usage: vaulteval" in capsys.readouterr().out
