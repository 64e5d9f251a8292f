"""The headline puts a generated set's "cannot judge semantic strategies" caveat on each comparison it concerns."""

from __future__ import annotations

from vaulteval.workbench.headline import SEMANTIC_CAVEAT, build


def _strategy(name: str, stage: str, rerank: dict | None = None) -> dict:
    return {"name": name, "strategy": {"format": 2, "name": name, "first": {"stage": stage}, "rerank": rerank}}


def _inputs(notes: list[str]) -> tuple[dict, dict]:
    rows = [{"run": "bm25", "measure": "nDCG@10", "status": "baseline", "value": 0.5},
            {"run": "hybrid-cc", "measure": "nDCG@10", "status": "ok", "value": 0.56, "delta": 0.06,
             "delta_ci_low": 0.04, "delta_ci_high": 0.09, "p": 0.001, "verdict": "better", "comparisons": 2},
            {"run": "bm25-fields", "measure": "nDCG@10", "status": "ok", "value": 0.5, "delta": 0.0,
             "delta_ci_low": -0.02, "delta_ci_high": 0.02, "p": 1.0, "mde": 0.03, "more_queries": 100001,
             "verdict": "no detectable difference", "comparisons": 2}]
    report = {"baseline": "bm25", "notes": notes, "params": {"measures": ["nDCG@10"]},
              "tables": {"summary": {"rows": rows}}, "per_query": {}}
    manifest = {"vault": {"root": "/v", "pages": 3}, "queryset": {"name": "gen", "positive": 10, "negative": 0},
                "strategies": [_strategy("bm25", "bm25"), _strategy("hybrid-cc", "hybrid"),
                               _strategy("bm25-fields", "bm25")]}
    return report, manifest


def test_a_semantic_comparison_on_a_set_that_cannot_judge_it_carries_the_caveat() -> None:
    report, manifest = _inputs(["CANNOT JUDGE SEMANTIC STRATEGIES: 6 of 10 queries (60%) share most ..."])
    by_run = {c["run"]: c for c in build(report, manifest).comparisons}
    assert SEMANTIC_CAVEAT in by_run["hybrid-cc"]["warning"]
    assert by_run["bm25-fields"]["warning"] is None  # two lexical strategies: the set can judge them


def test_a_set_that_can_judge_semantic_strategies_adds_no_caveat() -> None:
    report, manifest = _inputs([])
    assert all(c["warning"] is None for c in build(report, manifest).comparisons)
