"""tune on a set holding written questions and generated queries: the questions decide, the generated queries only
check for regressions, and the report says how many questions, who wrote them and what they detect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pipeline_fixtures import run_json, run_main
from vaulteval.querysets.generate.core import generate_queryset
from vaulteval.querysets.queryset import Query, QuerySet
from vaulteval.vault.vault import Vault
from vaulteval.workbench.evidence import evidence_facts, evidence_line, partition, regression_check, writer_of
from vaulteval.workbench.intervals import detectable_at

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = REPO / "querysets" / "sample-vault.yaml"
GRID = "bm25;bm25:w_title=2,w_aliases=2;bm25:k1=0.5,b=0.3"


def _mixed_set(vault: Path, tmp_path: Path) -> tuple[Path, Path, list[str], list[str]]:
    """The sample vault's hand-written questions, two in three marked as written by an agent or a person, plus a
    generated title set; the path of the mixed set and of the generated set alone, and their ids."""
    questions = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))["queries"]
    for i, q in enumerate(questions):
        if i % 3:
            q.update(kind="written", writer="agent" if i % 3 == 1 else "person")
    generate_queryset(Vault(vault), tmp_path / "generated.yaml", kinds=["title"], n=30, seed=3)
    generated = yaml.safe_load((tmp_path / "generated.yaml").read_text(encoding="utf-8"))
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(yaml.safe_dump({"name": "mixed", "vault": str(vault),
                                     "queries": [*questions, *generated["queries"]]}, allow_unicode=True),
                     encoding="utf-8")
    return mixed, tmp_path / "generated.yaml", [q["id"] for q in questions], [q["id"] for q in generated["queries"]]


def test_the_verdict_decides_on_the_written_questions_when_a_set_holds_both_kinds(provisioned_sample: Path,
                                                                                  tmp_path: Path) -> None:
    mixed, generated_only, question_ids, generated_ids = _mixed_set(provisioned_sample, tmp_path)
    code, stdout, err = run_main("tune", "--vault", provisioned_sample, "--queryset", mixed, "--grid", GRID,
                                 "--out", tmp_path / "runs")
    assert code == 0, err
    out = json.loads((Path(yaml.safe_load(stdout)["run_dir"]) / "tune.json").read_text(encoding="utf-8"))
    splits, decision = out["params"]["splits"], out["decision"]
    assert set(splits["tune"]["ids"]) <= set(question_ids) and set(splits["test_ids"]) <= set(question_ids)
    assert all(row["n"] == len(splits["tune"]["ids"]) for row in out["search"])  # the search ran on questions only
    assert decision["n_test"] == len(splits["test_ids"])
    evidence = decision["evidence"]
    assert evidence["basis"] == "questions" and evidence["questions"] == decision["n_test"]
    assert set(evidence["writers"]) <= {"agent", "person", "hand-written"} and len(evidence["writers"]) >= 2
    assert sum(evidence["writers"].values()) == decision["n_test"]
    assert evidence["generated_set_aside"] == len(generated_ids)
    assert out["params"]["regression_ids"] == generated_ids
    assert evidence["mde"] > 0 and evidence["queries_for_real_effect"]["effect"] == 0.05
    if out["best"] != out["baseline"]:
        regression = decision["regression"]
        assert regression["queries"] == len(generated_ids) and regression["measure"] == "nDCG@10"
        assert regression["ci95"][0] <= regression["delta"] <= regression["ci95"][1]
    else:
        assert "regression" not in decision
    line = next(x for x in err.splitlines() if "the verdict rests on" in x)
    assert f"the verdict rests on {decision['n_test']} written or real test questions (" in line
    assert f"{len(generated_ids)} generated queries with an answer only check for regressions" in line

    code, verified, verify_err = run_main("eval", "verify", out["run_dir"])
    assert code == 0, verified + verify_err

    alone = run_json("tune", "--vault", provisioned_sample, "--queryset", generated_only, "--grid", GRID,
                     "--out", tmp_path / "runs2")
    alone["params"] = json.loads((Path(alone["run_dir"]) / "tune.json").read_text(encoding="utf-8"))["params"]
    assert alone["decision"]["evidence"]["basis"] == "generated" and "regression" not in alone["decision"]
    assert alone["decision"]["evidence"]["writers"] == {"generated": alone["decision"]["n_test"]}
    assert set(alone["params"]["splits"]["tune"]["ids"]) <= set(generated_ids)


def _query(qid: str, kind: str = "", tags: tuple[str, ...] = (), relevant: dict | None = None, **fields) -> Query:
    return Query(qid, "text", {"wiki/a.md": 2} if relevant is None else relevant, tags,
                 fields={**({"kind": kind} if kind else {}), **fields})


def _set(*queries: Query) -> QuerySet:
    return QuerySet("s", Path("s.yaml"), list(queries), "sha256:0", "yaml")


def test_partition_sets_generated_queries_apart_only_when_questions_are_there_too() -> None:
    written = _query("w1", "written", writer="agent")
    logged = _query("r1", tags=("from-log",))
    unanswerable = _query("w2", "written", relevant={}, writer="person")
    title = _query("t1", "title")
    assert partition(_set(written, logged, unanswerable, title)) == (["w1", "r1", "w2"], ["t1"])
    assert partition(_set(title, _query("t2", "llm"))) == (["t1", "t2"], [])
    assert partition(_set(written, logged)) == (["w1", "r1"], [])
    assert partition(_set(unanswerable, title)) == (["w2", "t1"], [])  # no question with an answer: nothing decides
    assert [writer_of(q) for q in (written, logged, _query("h1"), title, _query("w3", "written"))] == [
        "agent", "real", "hand-written", "generated", "unnamed"]


def test_what_the_questions_detect_is_the_minimum_detectable_effect_at_their_spread() -> None:
    ids = [f"w{i}" for i in range(12)]
    qs = _set(*[_query(q, "written", writer="agent" if i < 8 else "model:qwen2.5-7b") for i, q in enumerate(ids)])
    default = {q: 0.4 for q in ids}
    diffs = [0.5, 0.3, 0.6, 0.2, 0.4, 0.5, 0.1, 0.3, 0.4, 0.6, 0.2, 0.5]
    better = {q: 0.4 + d for q, d in zip(ids, diffs)}
    facts = evidence_facts(qs, 5, default, better, measure="nDCG@10", generated=40)
    import numpy as np

    assert facts["mde"] == pytest.approx(detectable_at(float(np.std(diffs, ddof=1)), 12))
    assert facts["enough"] and facts["writers"] == {"agent": 8, "model:qwen2.5-7b": 4}
    assert facts["questions"] == 12 and facts["tune_questions"] == 5 and facts["generated_set_aside"] == 40
    slight = {q: 0.4 + d / 20 - 0.0175 for q, d in zip(ids, diffs)}  # the same spread shrunk: a tiny gain
    assert not evidence_facts(qs, 5, default, slight, measure="nDCG@10")["enough"]
    line = evidence_line(facts, regression_check(default, better, measure="nDCG@10"))
    assert line.startswith("the verdict rests on 12 written or real test questions (agent 8, model:qwen2.5-7b 4)")
    assert "40 generated queries with an answer only check for regressions" in line and "does not lose" in line


def test_a_regression_on_generated_queries_is_reported_not_a_veto() -> None:
    ids = [f"t{i}" for i in range(20)]
    check = regression_check({q: 0.9 for q in ids}, {q: 0.5 + (i % 3) * 0.01 for i, q in enumerate(ids)},
                             measure="nDCG@10")
    assert check["loses"] and check["ci95"][1] < 0 and check["queries"] == 20
