"""Strategies, runs and the read-only guarantee of evaluation.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_eval.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vaulteval.workbench.evaluate import evaluate
from vaulteval.querysets.queryset import load_queryset
from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank
from vaulteval.workbench.runs import Run, encode_doc_id, run_strategy
from vaulteval.cli.sample import copy_sample
from vaulteval.workbench.strategy import Strategy, StrategyError
from vaulteval.vault.vault import BUNDLED_SAMPLE, Vault
from vaulteval.workbench.workspace import Workspace
from vaulteval.pipeline.provision import provision

from evalkit import QUERYSET, eval_cache, snapshot  # noqa: F401


# ------------------------------------------------------------------ strategy

INDEX_KEYS = ("analyzer", "k1", "target", "overlap")


@pytest.mark.parametrize("text, name, fields", [
    ("bm25", "bm25", {}),
    ("bm25:analyzer=english,k1=1.2", "bm25-english-k1=1.2", {"analyzer": "english", "k1": 1.2}),
    ("bm25:target=800,overlap=100,name=small", "small", {"target": 800, "overlap": 100}),
    ("bm25:bm25_top=20,top=5", "bm25-bm25_top=20-top=5", {"bm25_top": 20, "top": 5}),
    ("rerank:st", "rerank-st", {"reranker": EmbeddingRerank(backend="sentence-transformers")}),
    ("rerank:ollama,model=nomic-embed-text-v2-moe,bm25_top=20,timeout=2",
     "rerank-ollama-nomic-embed-text-v2-moe-bm25_top=20",
     {"reranker": EmbeddingRerank(model="nomic-embed-text-v2-moe", timeout=2.0), "bm25_top": 20}),
])
def test_strategy_grammar(text: str, name: str, fields: dict) -> None:
    s = Strategy.parse(text)
    assert s.name == name and all(getattr(s.index if k in INDEX_KEYS else s, k) == v for k, v in fields.items())
    again = Strategy.from_dict(s.to_dict())
    assert again == s and hash(again) == hash(s) and again.key == s.key
    assert Strategy.parse(text).with_name("other").key == s.key


@pytest.mark.parametrize("text, message", [
    ("bm26", "must start with bm25, dense, hybrid, rerank"),
    ("bm25:k1", "expected KEY=VALUE"),
    ("bm25:k1=fast", "not a valid float"),
    ("bm25:colour=red", "unknown key 'colour'"),
    ("bm25:analyzer=klingon", "analyzer must be"),
    ("bm25:overlap=3000", "overlap < target"),
    ("bm25:top=0", "top must be from 1 to 1000"),
    ("bm25:st", "expected KEY=VALUE"),
])
def test_bad_strategy_strings(text: str, message: str) -> None:
    with pytest.raises(StrategyError, match=message):
        Strategy.parse(text)


# ---------------------------------------------------------------------- runs

def test_run_on_the_bundled_sample_is_built_in_the_cache(eval_cache: Path) -> None:
    qs = load_queryset(QUERYSET)
    before = snapshot(BUNDLED_SAMPLE)
    run = run_strategy(Vault(BUNDLED_SAMPLE), qs, Strategy.parse("bm25:bm25_top=20,top=5"))
    assert snapshot(BUNDLED_SAMPLE) == before
    assert run.env.source == "cache" and run.env.meta_dir.is_relative_to(eval_cache)
    assert list(run.df.columns) == ["query_id", "doc_id", "score", "rank"]
    first = run.df[run.df.query_id == "q01"]
    assert first["rank"].tolist() == [1, 2, 3, 4, 5] and first.doc_id.str.startswith("wiki/").all()
    assert first.score.is_monotonic_decreasing and set(run.labels) == {"bm25-only"}
    assert (run.queries.latency_ms > 0).all() and run.pool.groupby("query_id").size().max() <= 20


def test_trec_round_trip_encodes_spaces(tmp_path: Path) -> None:
    import pandas as pd

    df = pd.DataFrame([("q1", "wiki/coffee/Espresso machine.md", 2.5, 1), ("q1", "wiki/100%.md", 2.5, 2),
                       ("q2", "wiki/travel/成都美食.md", 0.25, 1)], columns=["query_id", "doc_id", "score", "rank"])
    path = Run("bm25", df).to_trec(tmp_path / "bm25.trec")
    assert path.read_text().splitlines()[0] == "q1 Q0 wiki/coffee/Espresso%20machine.md 1 2.5 bm25"
    back = Run.from_trec(path)
    assert back.name == "bm25" and back.df.equals(df)
    assert encode_doc_id("a\tb%") == "a%09b%25"


# ---------------------------------------------------------------- read-only

def test_sweeping_chunks_and_bm25_params_leaves_the_vault_byte_identical(tmp_path: Path) -> None:
    vault = Vault(copy_sample(tmp_path / "v"))
    provision(vault)
    before = snapshot(vault.root)
    assert any(p.startswith(".vault-meta/vaulteval/") for p in before)
    qs = load_queryset(QUERYSET, vault)
    strategies = ["bm25", "bm25:k1=0.9,b=0.4", "bm25:k1=2.0,b=1.0", "bm25:target=600,overlap=60",
                  "bm25:target=3000,overlap=300", "bm25:analyzer=english,target=1000,overlap=100"]
    ev = evaluate(Vault(vault.root), qs, strategies, measures=["nDCG@10"])
    assert snapshot(vault.root) == before
    sources = {r.name: r.env.source for r in ev.runs}
    assert sources["bm25"] == sources["bm25-k1=0.9-b=0.4"] == "vault"
    assert sources["bm25-target=600-overlap=60"] == "cache"
    values = ev.metrics[ev.metrics.measure == "nDCG@10"].set_index("run").value
    assert values.nunique() > 1  # the sweep changed something


def test_workspace_reuses_cache_builds(tmp_path: Path, eval_cache: Path) -> None:
    vault = Vault(copy_sample(tmp_path / "v"))
    ws = Workspace(vault)
    env = ws.env(Strategy.parse("bm25"))  # not provisioned: built in the cache
    assert env.source == "cache" and not (vault.root / ".vault-meta").exists()
    again = Workspace(vault).env(Strategy.parse("bm25:k1=1.0"))
    assert again.meta_dir == env.meta_dir and again.fingerprint == env.fingerprint
    provision(vault)
    ws = Workspace(Vault(vault.root))
    assert ws.env(Strategy.parse("bm25:prefix=synthetic")).source == "vault"  # every chunk has a synthetic prefix
    assert ws.env(Strategy.parse("bm25:hard_max=5000")).source == "cache"


def test_cache_build_made_with_other_analyzer_libraries_is_rebuilt(tmp_path: Path, eval_cache: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    vault = Vault(copy_sample(tmp_path / "v"))
    strategy = Strategy.parse("bm25:analyzer=english")
    first = Workspace(vault).env(strategy)
    built = first.index.header["analyzer_libraries"]
    assert built.get("PyStemmer")
    upgraded = {**built, "PyStemmer": built["PyStemmer"] + ".post1"}
    monkeypatch.setattr("vaulteval.index.analysis.EnglishAnalyzer.libraries", lambda self, codes=None: upgraded)
    again = Workspace(Vault(vault.root)).env(strategy)
    assert again.meta_dir == first.meta_dir
    assert again.index.header["analyzer_libraries"] == upgraded  # rebuilt, not reused with other tokens


def test_run_directory_inside_the_vault_is_refused(tmp_path):
    from vaulteval.cli.main import main
    from vaulteval.cli.sample import copy_sample

    vault = copy_sample(tmp_path / "v")
    before = sorted(p.relative_to(vault) for p in vault.rglob("*"))
    code = main(["eval", "run", "--vault", str(vault), "--queryset", str(QUERYSET), "--out", str(vault / "runs")])
    assert code == 2
    assert sorted(p.relative_to(vault) for p in vault.rglob("*")) == before


def test_remote_ollama_needs_the_explicit_flag(tmp_path, capsys):
    from vaulteval.cli.main import main
    from vaulteval.cli.sample import copy_sample
    from vaulteval.workbench.strategy import Strategy, StrategyError

    with pytest.raises(StrategyError):
        Strategy.parse("rerank:ollama,allow_remote=true")
    remote = "rerank:ollama,host=http://203.0.113.9:11434"
    assert Strategy.parse(remote).reranker.allow_remote is False
    assert Strategy.parse(remote).with_remote_ollama(True).reranker.allow_remote is True
    vault = copy_sample(tmp_path / "v")
    code = main(["eval", "run", "--vault", str(vault), "--queryset", str(QUERYSET), "--strategy", remote,
                 "--out", str(tmp_path / "runs")])
    assert code == 2
    assert "--allow-remote-ollama" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
