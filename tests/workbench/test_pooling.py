"""Pooling and judging: depth-k pools with snippets, labels into a new query set, merging, Judged@k.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_pooling.py -q``
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.errors import UsageError, VaultevalError
from vaulteval.notebooks import judging as nbjudging
from vaulteval.querysets.judging import merge_querysets, save_labels
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault
from vaulteval.workbench.evaluate import evaluate
from vaulteval.workbench.pooling import pool_queryset
from vaulteval.workbench.runs import run_strategy
from vaulteval.workbench.strategy import Strategy

from evalkit import make_vault, snapshot, write_yaml

PAGES = {
    "coffee/Grinder.md": "---\naddress: grinder-01\n---\nThe grinder dial sits at 12 for espresso.\n",
    "coffee/Espresso.md": "Espresso shots pulled at nine bar; the grinder matters most.\n",
    "coffee/Beans.md": "Beans from the local roaster, espresso roast.\n",
    "garden/Monstera.md": "Monstera repotting in spring.\n",
}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Vault, Path]:
    vault = Vault(make_vault(tmp_path / "v", PAGES))
    qs = write_yaml(tmp_path / "q.yaml", [
        {"id": "q1", "query": "espresso grinder", "relevant": {"wiki/coffee/Grinder.md": 2}},
        {"id": "q2", "query": "monstera repotting", "relevant": {}},
    ], vault="v")
    return vault, qs


def test_pool_lists_each_unjudged_pair_once_with_strategies_and_snippet(setup) -> None:
    vault, path = setup
    pool = pool_queryset(vault, load_queryset(path), ["bm25", "bm25:analyzer=english"], depth=3)
    pairs = {(p["query_id"], p["page"]): p for p in pool["pairs"]}
    assert ("q1", "wiki/coffee/Grinder.md") not in pairs  # already judged
    espresso = pairs[("q1", "wiki/coffee/Espresso.md")]
    assert espresso["strategies"] == ["bm25", "bm25-english"]
    assert "nine bar" in espresso["snippet"] and espresso["best_rank"] >= 1
    assert ("q2", "wiki/garden/Monstera.md") in pairs
    assert len(pairs) == len(pool["pairs"])


def test_labels_go_to_a_new_file_with_judge_time_and_hash(setup, tmp_path: Path) -> None:
    vault, path = setup
    before_set, before_vault = path.read_bytes(), snapshot(vault.root)
    pool = pool_queryset(vault, load_queryset(path), ["bm25"], depth=3)
    table = nbjudging.label_table(pool)
    table.loc[table.page == "wiki/coffee/Espresso.md", "grade"] = 1
    out = tmp_path / "judged" / "q.yaml"
    saved = save_labels(path, pool, nbjudging.labels_from_table(table), judge="ana", out=out,
                        at="2026-01-01T00:00:00Z")
    assert saved["judgments_added"] == 1
    q1 = load_queryset(out)["q1"]
    assert q1.relevant == {"wiki/coffee/Grinder.md": 2, "wiki/coffee/Espresso.md": 1}
    record = q1.judged["wiki/coffee/Espresso.md"]
    digest = hashlib.sha256((vault.root / "wiki/coffee/Espresso.md").read_bytes()).hexdigest()
    assert record == {"sha256": f"sha256:{digest}", "judge": "ana", "at": "2026-01-01T00:00:00Z"}
    assert path.read_bytes() == before_set and snapshot(vault.root) == before_vault
    with pytest.raises(UsageError, match="inside the vault"):
        save_labels(path, pool, {}, judge="ana", out=vault.root / "q.yaml")
    with pytest.raises(UsageError, match="new file"):
        save_labels(path, pool, {}, judge="ana", out=path)
    with pytest.raises(VaultevalError, match="inside the vault"):  # a pool file cannot point outside the vault
        save_labels(path, pool, {("q1", "../../etc/passwd"): 1}, judge="ana", out=tmp_path / "x.yaml")


def test_merge_combines_judgments_and_reports_conflicts(setup, tmp_path: Path, capsys) -> None:
    vault, path = setup
    a = write_yaml(tmp_path / "a.yaml", [{"id": "q1", "query": "espresso grinder",
                                          "relevant": {"wiki/coffee/Grinder.md": 2, "wiki/coffee/Beans.md": 0}}],
                   vault="v")
    b = write_yaml(tmp_path / "b.yaml", [{"id": "q1", "query": "espresso grinder",
                                          "relevant": {"wiki/coffee/Beans.md": 1, "wiki/coffee/Espresso.md": 1}},
                                         {"id": "q3", "query": "beans", "relevant": {"wiki/coffee/Beans.md": 2}}],
                   vault="v")
    summary = merge_querysets([a, b], tmp_path / "m.yaml")
    merged = load_queryset(tmp_path / "m.yaml")
    assert merged["q1"].relevant == {"wiki/coffee/Grinder.md": 2, "wiki/coffee/Beans.md": 1,
                                     "wiki/coffee/Espresso.md": 1}
    assert "q3" in merged.by_id and summary["conflicts"] == ["q1: wiki/coffee/Beans.md graded 0 and 1"]
    assert main(["queryset", "merge", str(a), str(b), "--out", str(tmp_path / "m2.yaml")]) == 0
    assert "conflict (kept the higher grade)" in capsys.readouterr().out


def test_cli_pool_writes_yaml_and_metrics_report_judged_at_k(setup, tmp_path: Path) -> None:
    vault, path = setup
    out = tmp_path / "pool.yaml"
    assert main(["queryset", "pool", "--vault", str(vault.root), str(path), "--strategy", "bm25",
                 "--depth", "2", "--out", str(out), "--quiet"]) == 0
    pool = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert pool["depth"] == 2 and pool["strategies"] == ["bm25"] and pool["pairs"]
    ev = evaluate(vault, load_queryset(path), ["bm25"], measures=["nDCG@10"], k=3)
    judged = ev.metrics.set_index("measure").loc["Judged@3", "value"]
    returned = ev.run("bm25").ranking("q1")[:3]
    assert judged == pytest.approx(1 / len(returned))  # one of its top pages is judged


def test_condensed_lists_drop_unjudged_pages_before_scoring(setup) -> None:
    vault, path = setup
    ev = evaluate(vault, load_queryset(path), ["bm25"], measures=["RR"], k=3, condensed=True)
    values = ev.metrics.set_index("measure").value
    ranking = ev.run("bm25").ranking("q1")
    assert values["RR"] == pytest.approx(1 / (ranking.index("wiki/coffee/Grinder.md") + 1))
    assert values["condensed:RR"] == 1.0  # the only judged page is first once the others are gone


@pytest.fixture(scope="module")
def unjudged_set(embedded_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three questions over the embedded sample vault, nothing judged: every pooled page is listed."""
    base = tmp_path_factory.mktemp("pool-embedded")
    return write_yaml(base / "q.yaml", [
        {"id": "q1", "query": "coffee machine flow is weak and the steam wand sputters", "relevant": {}},
        {"id": "q2", "query": "dough slumps out of the basket when the kitchen is warm", "relevant": {}},
        {"id": "q3", "query": "starter smells like nail polish remover", "relevant": {}},
    ], vault=str(embedded_sample))


@pytest.mark.parametrize("strategy", ["dense", "hybrid:cc", "hybrid:rrf,bm25_top=30", "rerank:st,bm25_top=20"])
def test_a_pool_holds_exactly_the_pages_eval_run_ranks_for_that_strategy(embedded_sample: Path, unjudged_set: Path,
                                                                          strategy: str) -> None:
    vault, path = Vault(embedded_sample), unjudged_set
    qs, depth = load_queryset(path), 4
    pool = pool_queryset(vault, qs, [strategy], depth=depth)
    pooled: dict[str, list[str]] = {}
    for pair in pool["pairs"]:  # sorted by query, then best rank
        pooled.setdefault(pair["query_id"], []).append(pair["page"])
    ranked = {qid: pages[:depth] for qid, pages in run_strategy(vault, qs, Strategy.parse(strategy)).rankings().items()}
    assert pooled == ranked
    bm25 = {qid: pages[:depth] for qid, pages in run_strategy(vault, qs, Strategy.parse("bm25")).rankings().items()}
    assert ranked != bm25  # the strategy ranks otherwise than BM25, so a BM25 pool under its name would fail
