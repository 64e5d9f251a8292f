"""Misses: each cause produced by a constructed vault, plus rerank fallback flagged in a run.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_misses.py -q``

The vault's BM25 order for "zebra" is z1, z2, g1, z3 (z3 is long with one
mention); ``edited.md`` changes and ``late.md`` appears after provisioning.
The reranker is a loopback fake Ollama whose scripted embeddings favour
every chunk that mentions "giraffe" (only g1 does).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vaulteval.workbench.compare import rescued_and_lost
from vaulteval.workbench.misses import CAUSES, NoIndexForMisses, find_misses
from vaulteval.querysets.queryset import load_queryset
from vaulteval.embeddings.rerank import RerankConfig
from vaulteval.workbench.runs import Run, run_strategy
from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank
from vaulteval.workbench.strategy import Strategy
from vaulteval.vault.vault import Vault
from vaulteval.workbench.workspace import Workspace
from vaulteval.pipeline.provision import provision

from evalkit import eval_cache, make_vault, scripted_embed, write_yaml  # noqa: F401
from ollama_server import FakeOllama

FILLER = " ".join(f"filler{i}" for i in range(60))
PAGES = {
    "z1.md": "Zebra zebra zebra zebra herd on the plain.",
    "z2.md": "Zebra zebra grassland walk.",
    "g1.md": "Giraffe and zebra under an acacia tree.",
    "z3.md": f"A long note about the road trip. We saw one zebra crossing the road, then birds, {FILLER}.",
    "unrelated.md": "Quantum chromodynamics on a lattice.",
    "edited.md": "Okapi forest okapi.",
}
QUERIES = [
    {"id": "below", "query": "zebra", "relevant": {"wiki/z2.md": 1}},
    {"id": "outside", "query": "zebra", "relevant": {"wiki/z3.md": 2}},
    {"id": "noterm", "query": "zebra stripes", "relevant": {"wiki/unrelated.md": 1}},
    {"id": "stale", "query": "okapi", "relevant": {"wiki/edited.md": 1}},
    {"id": "new", "query": "okapi", "relevant": {"wiki/late.md": 1}},
    {"id": "hit", "query": "zebra", "relevant": {"wiki/z1.md": 2}},
]


@pytest.fixture(scope="module")
def server():
    fake = FakeOllama(scripted_embed, models=("nomic-embed-text-v2-moe:latest",))
    yield fake
    fake.stop()


@pytest.fixture
def setup(tmp_path: Path):
    vault = Vault(make_vault(tmp_path / "v", PAGES))
    provision(vault)
    (vault.notes_dir / "edited.md").write_text("Okapi forest okapi, edited later.", encoding="utf-8")
    (vault.notes_dir / "late.md").write_text("Okapi arrived late.", encoding="utf-8")
    qs = load_queryset(write_yaml(tmp_path / "qs.yaml", QUERIES, vault="v"))
    return Vault(vault.root), qs


def _causes(df) -> dict[str, tuple]:
    return {row.query_id: (row.cause, row.rank, row.bm25_rank, row.detail) for row in df.itertuples()}


def test_each_bm25_cause_from_a_constructed_vault(setup) -> None:
    vault, qs = setup
    run = run_strategy(vault, qs, Strategy.parse("bm25:bm25_top=3,top=3"))
    assert run.env.source == "vault"  # the stale index is the one being measured
    got = _causes(find_misses(run, qs, k=1))
    assert got["below"][:2] == ("below-cutoff", 2)
    assert got["outside"][0] == "outside-pool" and got["outside"][2] == 4 and "pool is the top 3" in got["outside"][3]
    assert got["noterm"][0] == "no-query-term" and got["noterm"][3] == "absent from the note: zebra, stripes"
    assert got["stale"][0] == "not-indexed" and "changed after indexing" in got["stale"][3]
    assert got["new"][0] == "not-indexed" and "no chunk" in got["new"][3]
    assert "hit" not in got  # z1 is rank 1: not a miss


def test_demoted_by_rerank_and_rescue_accounting(setup, server) -> None:
    vault, qs = setup
    cfg = RerankConfig(backend="ollama", host=server.url, model="nomic-embed-text-v2-moe", timeout=5.0)
    run = run_strategy(vault, qs, Strategy(name="rr", reranker=EmbeddingRerank.from_config(cfg), bm25_top=3, top=3))
    assert run.labels["bm25+rerank:ollama"] == 4 and (run.queries.pool_chunks > 0).sum() == 4
    assert run.labels["bm25+noop-rerank:no-candidates"] == len(qs) - 4
    assert run.ranking("hit")[0] == "wiki/g1.md" and run.bm25_rankings()["hit"][0] == "wiki/z1.md"
    got = _causes(find_misses(run, qs, k=1))
    assert got["hit"][0] == "demoted-by-rerank" and got["hit"][1] == 2
    assert {c for c, *_ in got.values()} == set(CAUSES)
    assert run.fallback is None
    rescued, lost = rescued_and_lost(run, qs, k=1)
    assert rescued == [] and lost == [("hit", "wiki/z1.md")]


def test_rerank_fallback_is_flagged_not_silent(setup, server) -> None:
    vault, qs = setup
    cfg = RerankConfig(backend="ollama", host=server.url, model="missing-model", timeout=5.0)
    run = run_strategy(vault, qs, Strategy(name="rr", reranker=EmbeddingRerank.from_config(cfg), bm25_top=3, top=3))
    assert run.fallback == "fallback: model-missing (4/4 queries)" and run.fully_fell_back
    assert run.labels["bm25+noop-rerank:model-missing"] == 4


def test_k1_b_sweep_reuses_one_index(setup) -> None:
    vault, qs = setup
    ws = Workspace(vault)
    a = run_strategy(vault, qs, Strategy.parse("bm25"), workspace=ws)
    b = run_strategy(vault, qs, Strategy.parse("bm25:k1=0.9,b=0.3"), workspace=ws)
    assert a.env.meta_dir == b.env.meta_dir and a.env.index.post_docs is b.env.index.post_docs
    assert (b.env.index.k1, b.env.index.b) == (0.9, 0.3)
    assert a.df.score.tolist() != b.df.score.tolist()


def test_misses_need_the_runs_index(setup) -> None:
    _, qs = setup
    import pandas as pd

    with pytest.raises(NoIndexForMisses):
        find_misses(Run("x", pd.DataFrame(columns=["query_id", "doc_id", "score", "rank"])), qs)
