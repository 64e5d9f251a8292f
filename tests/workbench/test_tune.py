"""vaulteval tune: search on a tune split, confirm on a test split, --write, and eval verify of the decision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline_fixtures import run_json, run_main
from vaulteval.workbench.strategy import Strategy, StrategyError
from vaulteval.workbench.tune import decide, parse_grid, search_table
from vaulteval.vault.metadir import META_REL

REPO = Path(__file__).resolve().parents[2]
QUERYSET = REPO / "querysets" / "sample-vault.yaml"
GRID = "bm25;bm25:w_title=2,w_aliases=2;bm25:k1=0.5,b=0.3"


@pytest.mark.parametrize("text, name, retrieve", [
    ("dense", "dense", "dense"),
    ("hybrid", "hybrid-rrf", "hybrid:rrf"),
    ("hybrid:cc,alpha=0.3", "hybrid-cc-alpha=0.3", "hybrid:cc,alpha=0.3"),
    ("hybrid:rrf,k=20,w_dense=0.5,analyzer=english", "hybrid-rrf-english-k=20-w_dense=0.5",
     "hybrid:rrf,k=20,w_dense=0.5"),
    ("bm25:w_title=2,w_aliases=2", "bm25-w_title=2-w_aliases=2", "bm25:w_title=2,w_aliases=2"),
    ("bm25:analyzer=english,stemmer=porter,stopwords=lucene", "bm25-english-stemmer=porter-stopwords=lucene", "bm25"),
])
def test_strategy_grammar_for_the_new_stages(text: str, name: str, retrieve: str) -> None:
    s = Strategy.parse(text)
    assert s.name == name and s.retrieve_text() == retrieve
    assert Strategy.from_dict(s.to_dict()) == s


def test_the_english_options_name_the_index_analyzer() -> None:
    assert Strategy.parse("bm25:analyzer=english,stemmer=porter").index_analyzer == "english:stemmer=porter"
    assert Strategy.parse("bm25:analyzer=english").index_analyzer == "english"


@pytest.mark.parametrize("text", ["hybrid:max", "bm25:stemmer=porter", "rerank:st,first=dense",
                                  "hybrid:cc,alpha=1.5", "bm25:stopwords=nltk,analyzer=english", "dense:w_dense=-1"])
def test_bad_new_strategies_are_refused(text: str) -> None:
    with pytest.raises(StrategyError):
        Strategy.parse(text)


def test_search_table_ranks_by_mean_and_keeps_grid_order_on_ties() -> None:
    rows = search_table(["a", "b", "c"], [{"1": 0.5}, {"1": 0.7}, {"1": 0.5}])
    assert [r["strategy"] for r in rows] == ["b", "a", "c"]


def test_decide_warns_on_small_splits() -> None:
    import pandas as pd

    rows = [("default", f"q{i}", "nDCG@10", 0.5) for i in range(10)]
    rows += [("best", f"q{i}", "nDCG@10", 0.5 + (0.1 if i < 8 else -0.05)) for i in range(10)]
    per_query = pd.DataFrame(rows, columns=["run", "query_id", "measure", "value"])
    d = decide(per_query, "nDCG@10", True, 0)
    assert d["delta"] == pytest.approx(0.07) and d["ci95"][0] <= 0.07 <= d["ci95"][1]
    assert d["n_test"] == 10 and "too small" in d["warning"]
    worse = per_query.assign(value=[0.6] * 10 + [0.5] * 10)
    assert not decide(worse, "nDCG@10", True, 0)["adopt"]


def test_parse_grid_forms(tmp_path: Path) -> None:
    assert parse_grid("bm25; dense ;") == ["bm25", "dense"]
    spec = tmp_path / "grid.txt"
    spec.write_text("bm25  # the seed\n\nhybrid:rrf\n", encoding="utf-8")
    assert parse_grid(f"@{spec}") == ["bm25", "hybrid:rrf"]


def test_tune_without_write_changes_nothing_with_write_stores_the_choice_and_verify_reproduces(
        fresh_vault: Path, tmp_path: Path) -> None:
    config = fresh_vault / ".vaulteval.json"
    before = config.read_bytes() if config.exists() else None
    out = run_json("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", GRID, "--out", tmp_path / "runs")
    assert (config.read_bytes() if config.exists() else None) == before
    assert out["baseline"] == "bm25" and {r["strategy"] for r in out["search"]} == set(parse_grid(GRID))
    assert out["search"][0]["mean"] >= out["search"][-1]["mean"]
    decision = out["decision"]
    assert decision["chosen"] in (out["best"], "bm25") and decision["n_test"] > 0
    run_dir = Path(out["run_dir"])
    assert (run_dir / "tune.json").is_file() and (run_dir / "manifest.json").is_file()

    code, _, err = run_main("eval", "verify", run_dir)
    assert code == 0, err
    tampered = json.loads((run_dir / "tune.json").read_text())
    tampered["search"][0]["mean"] += 0.01
    (run_dir / "tune.json").write_text(json.dumps(tampered))
    code, stdout, _ = run_main("eval", "verify", run_dir)
    assert code == 1 and "tune.json: search" in stdout
    del tampered["decision"]["procedure"]  # a decision that does not name this procedure is not compared
    (run_dir / "tune.json").write_text(json.dumps(tampered))
    code, _, err = run_main("eval", "verify", run_dir)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "procedure None" in err and "vaulteval tune" in err

    code, stdout, err = run_main("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", GRID,
                                 "--out", tmp_path / "runs2", "--write")
    written = json.loads(stdout)
    verdict = written["decision"]["verdict"]
    assert code == 0 and verdict in ("adopt", "keep", "inconclusive")
    assert [line for line in err.splitlines() if line.startswith("vaulteval: verdict: ")] == [
        next(line for line in err.splitlines() if line.startswith(f"vaulteval: verdict: {verdict}"))]
    if verdict != "adopt":  # only an adopt verdict writes; --force overrides
        assert "written" not in written and "not written: the verdict is" in err
        assert (config.read_bytes() if config.exists() else None) == before
        written = run_json("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", GRID,
                           "--out", tmp_path / "runs3", "--write", "--force")
    stored = json.loads(config.read_text())["retrieve"]
    assert stored["strategy"] == written["decision"]["best_retrieve"]["strategy"]
    assert stored["verdict"] == written["decision"]["verdict"] and stored["rerank"] is None
    assert stored["run_id"] == Path(written["run_dir"]).name
    result = run_json("retrieve", "--vault", fresh_vault, "espresso", "--no-rerank")
    assert result["tuned"]["run_id"] == stored["run_id"]


def test_force_without_write_is_a_usage_error(fresh_vault: Path, tmp_path: Path) -> None:
    code, _, err = run_main("tune", "--vault", fresh_vault, "--queryset", QUERYSET, "--grid", GRID,
                            "--out", tmp_path / "runs", "--force")
    assert code == 2 and "--force" in err and not (tmp_path / "runs").exists()


def test_the_whole_loop_on_a_plain_obsidian_vault_and_tuned_index_settings_stick(tmp_path: Path) -> None:
    """provision -> queryset generate -> tune --write -> retrieve, on notes at the root beside .obsidian/.

    The grid's only rival needs another analyzer: --write must rebuild the index with it (retrieve
    cannot switch analyzers), and a later provision without --analyzer must keep it.
    """
    from vaulteval.index.reader import peek_header

    root = tmp_path / "vault"
    assert run_main("sample", root, "--layout", "plain")[0] == 0
    run_json("provision", "--vault", root, "--analyzer", "default")  # the seed analyzer: the scenario below
    qs = tmp_path / "mine.yaml"
    # heading queries (asked for by name: not a default kind) are where field weights lose
    run_json("queryset", "generate", "--vault", root, "--out", qs, "--kinds",
             "title,alias,heading,backlink,no-title-words,script,negative")
    notes = {p: p.read_bytes() for p in root.rglob("*.md")}
    rival = "bm25:analyzer=english,w_title=2,w_aliases=2"
    # Field weights win on known-item queries overall but lose on heading queries: inconclusive, so
    # --write alone writes nothing and --force writes the best strategy anyway.
    config = (root / ".vaulteval.json").read_bytes()
    out = run_json("tune", "--vault", root, "--queryset", qs, "--grid", rival, "--out", tmp_path / "runs", "--write")
    assert "written" not in out and (root / ".vaulteval.json").read_bytes() == config
    decision = out["decision"]
    assert decision["verdict"] == "inconclusive" and decision["best"] == rival and decision["ci95"][0] > 0
    assert [s["slice"] for s in decision["slices"] if s["loses"]] == ["kind=heading"], decision["slices"]
    out = run_json("tune", "--vault", root, "--queryset", qs, "--grid", rival, "--out", tmp_path / "runs",
                   "--write", "--force")
    tune_json = json.loads((Path(out["run_dir"]) / "tune.json").read_text())
    assert tune_json["params"]["splits"]["method"] == "the query set's split field"
    assert tune_json["decision"]["verdict"] == "inconclusive" and out["written"]["forced"] is True
    decision = out["decision"]
    assert decision["best_index"]["analyzer"] == "english" and out["written"]["provisioned"] is True
    assert peek_header(root / META_REL)["analyzer"] == "english"
    result = run_json("retrieve", "--vault", root, "Levain", "--no-rerank")
    assert result["strategy"].startswith("bm25") and result["tuned"]["strategy"] == "bm25:w_title=2,w_aliases=2"
    assert result["candidates"][0]["page_path"] == "baking/Sourdough starter.md"
    run_json("provision", "--vault", root)  # no --analyzer: the tuned one stays
    assert peek_header(root / META_REL)["analyzer"] == "english"
    assert result["tuned"]["index_matches"] is True
    run_json("provision", "--vault", root, "--analyzer", "default")  # an explicit choice wins
    assert peek_header(root / META_REL)["analyzer"] == "default"
    code, stdout, err = run_main("retrieve", "--vault", root, "Levain", "--no-rerank")
    assert code == 0 and json.loads(stdout)["tuned"]["index_matches"] is False
    assert "warning: the index was built with other settings" in err and len(err.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == notes


@pytest.mark.parametrize("settings", [
    {"analyzer": "klingon", "k1": 1.5, "b": 0.75, "target": 2000, "overlap": 200, "hard_max": 4000},
    {"analyzer": "english", "k1": -1, "b": 0.75, "target": 2000, "overlap": 200, "hard_max": 4000},
    {"analyzer": "english", "k1": 1.5, "b": 0.75, "target": 2000, "overlap": 2000, "hard_max": 4000},
    {"analyzer": "english"}, "english", 3,
])
def test_bad_tuned_index_settings_are_ignored_with_a_warning(fresh_vault: Path, settings, caplog) -> None:
    from vaulteval import Vault
    from vaulteval.pipeline.tuned import tuned_index

    (fresh_vault / ".vaulteval.json").write_text(json.dumps({"retrieve": {"strategy": "bm25", "index": settings}}))
    assert tuned_index(Vault(fresh_vault)) is None
    assert "ignoring the tuned index settings" in caplog.text
    run_json("provision", "--vault", fresh_vault)  # falls back to the default analyzer, no traceback
