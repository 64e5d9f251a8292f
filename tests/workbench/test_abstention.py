"""Abstention: the false-positive / recall-kept curve, the suggested threshold, and retrieve --min-score.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_abstention.py -q``
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from vaulteval.cli.main import main
from vaulteval.querysets.queryset import Query, QuerySet
from vaulteval.workbench.abstention import abstention_curve, suggest
from vaulteval.workbench.runs import Run


def _qs() -> QuerySet:
    queries = [Query("p1", "a", {"d1": 2}), Query("p2", "b", {"d2": 1}), Query("p3", "c", {"d3": 1})]
    queries += [Query(f"n{i}", f"neg {i}", {}) for i in range(10)]
    return QuerySet("t", Path("t.yaml"), queries, "sha256:x", "yaml")


def test_curve_and_suggestion_by_hand() -> None:
    rows = [("p1", "d1", 9.0, 1), ("p2", "x", 8.0, 1), ("p2", "d2", 5.0, 2), ("p3", "d3", 2.0, 1)]
    rows += [(f"n{i}", "x", 1.0 + i * 0.1, 1) for i in range(9)]  # n9 returns nothing
    run = Run("bm25", pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"]))
    curve = abstention_curve(run, _qs(), k=10).set_index("threshold")
    assert curve.loc[1.0, "fp_rate"] == pytest.approx(0.9) and curve.loc[1.0, "recall_kept"] == 1.0
    assert curve.loc[2.0, "fp_rate"] == 0.0 and curve.loc[2.0, "recall_kept"] == 1.0
    assert curve.loc[5.0, "recall_kept"] == pytest.approx(2 / 3)
    threshold, kept, fp = suggest(curve.reset_index())
    # The lowest threshold with at most 1 of 10 negatives answering: just above 1.7 (n7 at 1.7, n8 at 1.8).
    assert threshold == pytest.approx(1.8) and kept == 1.0 and fp == pytest.approx(0.1)


def test_no_negatives_means_no_curve() -> None:
    qs = QuerySet("t", Path("t.yaml"), [Query("p1", "a", {"d1": 2})], "sha256:x", "yaml")
    run = Run("bm25", pd.DataFrame([("p1", "d1", 3.0, 1)], columns=["query_id", "doc_id", "score", "rank"]))
    assert abstention_curve(run, qs).empty


def test_retrieve_min_score_drops_and_counts(provisioned_sample: Path, capsys) -> None:
    base = ["retrieve", "--vault", str(provisioned_sample), "espresso machine descaling", "--no-rerank", "--top", "5"]
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    scores = [c["scores"]["bm25"] for c in plain["candidates"]]
    assert "min_score" not in plain and len(scores) >= 2
    cut = (scores[0] + scores[1]) / 2
    assert main(base + ["--min-score", str(cut)]) == 0
    kept = json.loads(capsys.readouterr().out)
    assert [c["scores"]["bm25"] for c in kept["candidates"]] == [s for s in scores if s >= cut]
    assert kept["min_score"] == cut and kept["dropped_below_min_score"] == len(scores) - len(kept["candidates"])
    with pytest.raises(SystemExit) as bad:
        main(base + ["--min-score", "nan"])
    assert bad.value.code == 2 and "--min-score needs a number" in capsys.readouterr().err


def test_the_suggested_command_ranks_as_the_run_does() -> None:
    from vaulteval.cli.querysets import abstention_lines
    from vaulteval.workbench.strategy import Strategy

    names = ["bm25", "hybrid-rrf", "rerank-st", "hybrid-cc-w_title=2"]
    metrics = pd.DataFrame([(run, m, v) for run in names
                            for m, v in (("abstain_min_score@fp0.10", 0.5), ("abstain_recall_kept@fp0.10", 0.8))],
                           columns=["run", "measure", "value"])
    strategies = {s.name: s for s in map(Strategy.parse, ["bm25", "hybrid:rrf", "rerank:st", "hybrid:cc,w_title=2"])}
    lines = dict(line.split(": ", 1) for line in abstention_lines(metrics, strategies))
    assert lines["bm25"].startswith("retrieve --no-rerank --min-score 0.5 keeps 80%")
    assert lines["hybrid-rrf"].startswith("retrieve --strategy hybrid:rrf --no-rerank --min-score 0.5")
    assert lines["rerank-st"].startswith("retrieve --embedder st --min-score 0.5")
    assert lines["hybrid-cc-w_title=2"].startswith("retrieve --strategy hybrid:cc,w_title=2 --no-rerank --min-score")
