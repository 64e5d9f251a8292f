"""tune measures what retrieve runs: the grid holds every reranker and analyzer the vault can run, and after
``tune --write`` the default ``retrieve`` is exactly the tuned pipeline (its reranker or none, its depth)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline_fixtures import run_json, run_main
from vaulteval import Vault
from vaulteval.querysets.queryset import load_queryset
from vaulteval.workbench.grid import available_analyzers, default_grid
from vaulteval.workbench.runs import Run
from vaulteval.workbench.strategy import Strategy

REPO = Path(__file__).resolve().parents[2]
QUERYSET = REPO / "querysets" / "sample-vault.yaml"
UNREACHABLE_OLLAMA = "http://127.0.0.1:9"  # discard port: a rerank that tried Ollama would say so in its label


@pytest.fixture
def embedded_copy(embedded_sample: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(embedded_sample, tmp_path / "vault", symlinks=True))


def test_the_grid_offers_the_stores_reranker_over_bm25_on_every_analyzer(embedded_sample: Path) -> None:
    grid = default_grid(Vault(embedded_sample), "bm25")
    assert "auto" in available_analyzers(Vault(embedded_sample))
    for analyzer in available_analyzers(Vault(embedded_sample)):
        keys = "" if analyzer == "default" else f",analyzer={analyzer}"
        assert f"rerank:st{keys}" in grid and f"hybrid:rrf{keys}" in grid and f"hybrid:cc{keys}" in grid
    parsed = [Strategy.parse(s) for s in grid]  # every entry is a valid, distinct strategy
    assert len({s.key for s in parsed}) == len(grid)
    reranked = [s for s in parsed if s.reranker is not None]
    assert {s.reranker["backend"] for s in reranked} == {"sentence-transformers"}
    # the store's model over a hybrid's candidates (which hold the dense top) would rank exactly as dense
    assert {s.first.label for s in reranked} == {"bm25"}


def test_no_two_grid_entries_rank_alike_by_construction(embedded_sample: Path, tmp_path: Path) -> None:
    """What the grid leaves out is what would duplicate dense: the store's reranker over a hybrid."""
    from vaulteval.workbench.evaluate import evaluate

    ev = evaluate(Vault(embedded_sample), load_queryset(QUERYSET, Vault(embedded_sample)), ["dense", "hybrid:cc,rerank=st", "hybrid:rrf,rerank=st"],
                  measures=["nDCG@10"])
    dense = ev.run("dense").rankings()
    assert ev.run(ev.runs[1].name).rankings() == dense == ev.run(ev.runs[2].name).rankings()


def test_the_grid_comes_from_the_registry(embedded_sample: Path, fresh_vault: Path) -> None:
    from vaulteval.pipeline.stages import registry

    lexical, embedded_grid = default_grid(Vault(fresh_vault), "bm25"), default_grid(Vault(embedded_sample), "bm25")
    assert set(lexical) < set(embedded_grid)
    for cls in registry.first_stages():
        for point in cls.tune_grid:
            assert any(Strategy.parse(t).first == registry.build(cls.head(), registry.split_items(point), point)[0]
                       for t in embedded_grid)


def test_a_vault_without_stored_embeddings_gets_no_semantic_strategy(fresh_vault: Path) -> None:
    grid = [Strategy.parse(s) for s in default_grid(Vault(fresh_vault), "bm25")]
    assert all(not {"dense", "embedder"} & s.first.needs and s.reranker is None for s in grid)


def test_a_newly_registered_analyzer_joins_the_grid(fresh_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.index import analysis

    monkeypatch.setattr(analysis, "NAMES", (*analysis.NAMES, "custom"))
    grid = default_grid(Vault(fresh_vault), "bm25")
    assert "bm25:analyzer=custom" in grid and "bm25:analyzer=custom,k1=0.9,b=0.4" in grid


def test_the_grid_offers_auto_and_the_analyzers_of_the_vaults_languages(fresh_vault: Path, tmp_path: Path) -> None:
    sample = default_grid(Vault(fresh_vault), "bm25")  # English, with three Chinese and three Japanese notes
    assert {"bm25:analyzer=auto", "bm25:analyzer=chinese", "bm25:analyzer=japanese"} <= set(sample)
    assert not any(f"analyzer={a}" in s for s in sample for a in ("spanish", "german", "korean"))
    spanish = tmp_path / "es"
    (spanish / ".obsidian").mkdir(parents=True)
    for i, text in enumerate(["La bóveda guarda cada nota como un archivo de texto en tu dispositivo.",
                              "Puedes crear carpetas, mover archivos y hacer una copia de seguridad cuando quieras."]):
        (spanish / f"nota{i}.md").write_text(text, encoding="utf-8")
    grid = default_grid(Vault(spanish), "bm25")
    assert "bm25:analyzer=spanish" in grid and "bm25:analyzer=auto" in grid and "bm25:analyzer=german" not in grid


POOR = "bm25:w_body=0,w_code=1"  # ranks by code blocks alone: any grid rival beats it on the tune split


def _tuned_write(vault: Path, tmp_path: Path, grid: str) -> dict:
    """``tune --write --force`` with ``grid`` as the only rival of a deliberately poor tuned baseline."""
    from vaulteval.pipeline.tuned import write_tuned

    write_tuned(Vault(vault), POOR, run_id="poor")
    out = run_json("tune", "--vault", vault, "--queryset", QUERYSET, "--grid", grid, "--out", tmp_path / "runs",
                   "--id", "t", "--write", "--force", "--baseline", "tuned")
    assert out["best"] == grid, out["search"]  # the only rival: the test needs it written
    return out


def test_after_tune_write_retrieve_runs_exactly_the_tuned_reranked_pipeline(
        embedded_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", UNREACHABLE_OLLAMA)
    out = _tuned_write(embedded_copy, tmp_path, "hybrid:cc,rerank=st")
    stored = json.loads((embedded_copy / ".vaulteval.json").read_text())["retrieve"]
    assert stored["strategy"] == "hybrid:cc" and stored["rerank"]["backend"] == "sentence-transformers"
    assert stored["bm25_top"] == 100
    run = Run.from_trec(Path(out["run_dir"]) / "best.trec")
    queries = {q["id"]: q["query"] for q in __import__("yaml").safe_load(QUERYSET.read_text())["queries"]}
    import pandas as pd

    trace = pd.read_csv(Path(out["run_dir"]) / "queries.csv")
    labels = dict(zip(trace[trace.run == "best"].query_id, trace[trace.run == "best"].label))
    tested = sorted(set(run.df.query_id))
    assert len(tested) > 10 and "hybrid:cc+rerank:sentence-transformers" in labels.values()
    for qid in tested:
        result = run_json("retrieve", "--vault", embedded_copy, queries[qid])
        assert result["strategy"] == labels[qid] and "ollama" not in result["strategy"], qid
        measured = run.df[run.df.query_id == qid].sort_values("rank").doc_id.tolist()[:5]
        assert [c["page_path"] for c in result["candidates"]] == measured, qid
    # the baseline of a later tune is the tuned pipeline itself
    from vaulteval.workbench.tune import current_default

    assert Strategy.parse(current_default(Vault(embedded_copy), tuned=True)) == Strategy.parse("hybrid:cc,rerank=st")


def test_a_pipeline_tuned_without_a_reranker_gets_none_added(fresh_vault: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", UNREACHABLE_OLLAMA)
    before = run_json("retrieve", "--vault", fresh_vault, "espresso")
    assert before["strategy"] == "bm25-only"  # untuned, no store: Ollama is tried only when named
    assert "tuned" not in before
    _tuned_write(fresh_vault, tmp_path, "bm25:w_title=2,w_aliases=2")
    stored = json.loads((fresh_vault / ".vaulteval.json").read_text())["retrieve"]
    assert stored["rerank"] is None
    after = run_json("retrieve", "--vault", fresh_vault, "espresso")
    assert after["strategy"] == "bm25+fields" and after["tuned"]["strategy"] == "bm25:w_title=2,w_aliases=2"
    explicit = run_json("retrieve", "--vault", fresh_vault, "espresso", "--embedder", "st")
    assert explicit["strategy"] == "bm25+fields+rerank:sentence-transformers"  # asked for: added


@pytest.mark.parametrize("entry, why", [
    ({"strategy": "bm25", "rerank": {"backend": "cohere"}}, "rerank must be null"),
    ({"strategy": "bm25", "rerank": "st"}, "rerank must be null"),
    ({"strategy": "bm25", "bm25_top": 0}, "bm25_top must be"),
    ({"strategy": "bm25", "bm25_top": True}, "bm25_top must be"),
])
def test_a_malformed_tuned_pipeline_is_ignored_with_a_warning(fresh_vault: Path, entry: dict, why: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from vaulteval.pipeline.tuned import tuned_strategy

    (fresh_vault / ".vaulteval.json").write_text(json.dumps({"retrieve": entry}))
    assert tuned_strategy(Vault(fresh_vault)) is None and why in caplog.text
    code, stdout, _ = run_main("retrieve", "--vault", fresh_vault, "espresso", "--no-rerank")
    assert code == 0 and "tuned" not in json.loads(stdout)


@pytest.mark.parametrize("entry, expected", [
    ({"strategy": "bm25", "rerank": None}, "bm25"),
    ({"strategy": "bm25:w_title=2", "rerank": {"backend": "sentence-transformers", "model": None}},
     "rerank:st,w_title=2"),
    ({"strategy": "hybrid:cc,alpha=0.3", "rerank": {"backend": "sentence-transformers", "model": None},
      "bm25_top": 40}, "hybrid:cc,alpha=0.3,rerank=st,bm25_top=40"),
])
def test_the_next_tunes_baseline_is_the_tuned_pipeline(fresh_vault: Path, entry: dict, expected: str) -> None:
    from vaulteval.workbench.tune import current_default

    (fresh_vault / ".vaulteval.json").write_text(json.dumps({"retrieve": entry}))
    assert Strategy.parse(current_default(Vault(fresh_vault), tuned=True)) == Strategy.parse(expected)


def test_write_without_force_writes_an_adopted_pipeline(fresh_vault: Path, tmp_path: Path) -> None:
    from vaulteval.pipeline.tuned import write_tuned

    write_tuned(Vault(fresh_vault), POOR, run_id="poor")
    code, stdout, err = run_main("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", "bm25",
                                 "--out", tmp_path / "runs", "--write", "--baseline", "tuned")
    out = json.loads(stdout)
    assert code == 0 and out["decision"]["verdict"] == "adopt" and out["decision"]["ci95"][0] > 0
    assert out["decision"]["baseline_source"] == "the tuned pipeline of .vaulteval.json"
    assert f"vaulteval: verdict: adopt: bm25 vs {Strategy.parse(POOR).text()}" in err  # the registry's key order
    stored = json.loads((fresh_vault / ".vaulteval.json").read_text())["retrieve"]
    assert stored["strategy"] == "bm25" and stored["verdict"] == "adopt" and stored["forced"] is False


def test_a_forced_write_is_never_a_later_tunes_silent_baseline(fresh_vault: Path, tmp_path: Path) -> None:
    from vaulteval.pipeline.tuned import write_tuned

    write_tuned(Vault(fresh_vault), POOR, run_id="poor", evidence={"verdict": "inconclusive", "forced": True})
    code, stdout, err = run_main("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", POOR,
                                 "--out", tmp_path / "runs")
    out = json.loads(stdout)
    assert code == 0 and out["baseline"] == "bm25" and out["decision"]["baseline_source"] == "the untuned default"
    assert "vaulteval: baseline: bm25 (the untuned default)" in err
    assert out["best"] == "bm25"  # the poor forced pick loses to the untuned default it is compared with
    code, stdout, err = run_main("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", "bm25",
                                 "--out", tmp_path / "runs", "--baseline", "tuned")
    out = json.loads(stdout)
    assert code == 0 and out["baseline"] == Strategy.parse(POOR).text()
    assert out["decision"]["baseline_source"] == "the tuned pipeline of .vaulteval.json (forced)"
    code, _, err = run_main("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", "bm25",
                            "--out", tmp_path / "runs", "--baseline", "bm25:nonsense=1")
    assert code == 2 and "nonsense" in err

