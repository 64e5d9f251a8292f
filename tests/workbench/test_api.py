"""The ranx-like workbench API: run -> Runs, Run.from_trec, compare -> Report, and evaluate() built from them.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_api.py -q``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vaulteval
from vaulteval.errors import UsageError
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import BUNDLED_SAMPLE, Vault
from vaulteval.workbench.evaluate import evaluate
from vaulteval.workbench.runs import Run

from evalkit import QUERYSET, eval_cache, make_vault, write_yaml  # noqa: F401

STRATEGIES = ["bm25", "bm25:analyzer=english"]
MEASURES = ["nDCG@10", "RR", "Success@10"]


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory: pytest.TempPathFactory):
    """The query set, run() on it and evaluate() on it, sharing one evaluation cache."""
    cache = tmp_path_factory.mktemp("api-cache")
    qs = load_queryset(QUERYSET, Vault(BUNDLED_SAMPLE))
    runs = vaulteval.run(qs, STRATEGIES, cache_dir=cache)
    ev = evaluate(qs, STRATEGIES, measures=MEASURES, cache_dir=cache)  # the vault is the set's
    return qs, runs, ev


def test_a_query_set_knows_its_vault() -> None:
    qs = load_queryset(QUERYSET, Vault(BUNDLED_SAMPLE))
    assert qs.vault is not None and qs.vault.root == Vault(BUNDLED_SAMPLE).root


def test_run_then_compare_gives_evaluates_report_json(sample_runs, tmp_path: Path) -> None:
    qs, runs, ev = sample_runs
    assert runs.names == [r.name for r in ev.runs] and runs["bm25"] is runs[0]
    report = vaulteval.compare(qs, runs, MEASURES, baseline="bm25")
    ours = report.save(tmp_path / "cmp")
    run_dir = ev.save(tmp_path / "runs", run_id="x")
    # Same data: every mean, interval, delta, p and MDE, the notes and the tables a run directory keeps;
    # evaluate() only adds what it checked before running (the stale-index count) to the parameters.
    mine, theirs = (json.loads((d / "report.json").read_text()) for d in (ours, run_dir))
    assert theirs["params"].pop("stale_pages") == 0
    assert mine == theirs
    assert (ours / "report.md").read_bytes() == (run_dir / "report.md").read_bytes()
    summary = json.loads((run_dir / "report.json").read_text())["tables"]["summary"]["rows"]
    assert {(r["run"], r["measure"]) for r in summary} == {(n, m) for n in runs.names for m in MEASURES}


def test_runs_read_back_from_trec_compare_alike(sample_runs, tmp_path: Path) -> None:
    qs, runs, ev = sample_runs
    paths = runs.save(tmp_path / "trec")
    assert [p.name for p in paths] == ["bm25.trec", "bm25-english.trec"]
    back = [Run.from_trec(p) for p in paths]
    for before, after in zip(runs, back):
        assert after.name == before.name
        assert after.df.reset_index(drop=True).equals(before.df.sort_values(["query_id", "rank"])
                                                      .reset_index(drop=True))
    # TREC runs carry no pool, so only the measures can be compared: they must be the same numbers.
    cols = ["run", "measure", "value", "ci_low", "ci_high", "delta", "delta_ci_low", "delta_ci_high", "mde",
            "p", "verdict", "more_queries"]
    from_trec = vaulteval.compare(qs, [str(p) for p in paths], MEASURES).to_dataframe()[cols]
    assert from_trec.equals(ev.report.to_dataframe()[cols])


def test_report_shows_means_intervals_deltas_p_and_mde(sample_runs) -> None:
    qs, runs, ev = sample_runs
    report = vaulteval.compare(qs, runs, ["nDCG@10"])
    row = report.to_dataframe().iloc[1]
    shown = report.overview().iloc[1]
    assert shown["mean [95% CI]"] == f"{row.value:.4f} [{row.ci_low:.4f}, {row.ci_high:.4f}]"
    assert shown["delta [CI]"].endswith(f"[{row.delta_ci_low:.4f}, {row.delta_ci_high:.4f}]")
    assert shown["p"] == f"{row.p:.4f}" and shown["verdict"] == row.verdict
    if row.verdict == "no detectable difference":
        assert shown["MDE"] == f"{row.mde:.4f}"
    html, text = report._repr_html_(), repr(report)
    for cell in (shown["mean [95% CI]"], shown["delta [CI]"], shown["MDE"], row.verdict):
        assert cell in html and cell in text
    assert "Latency per query" in text and report.notes[0] in text


def test_report_saved_to_a_file_without_extension_is_one_clear_error(sample_runs, tmp_path: Path) -> None:
    qs, runs, _ = sample_runs
    (tmp_path / "report").write_text("x", encoding="utf-8")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        vaulteval.compare(qs, runs, ["RR"]).save(tmp_path / "report")


def test_compare_refuses_a_run_of_another_query_set(sample_runs) -> None:
    import pandas as pd

    qs, runs, _ = sample_runs
    stray = Run("other", pd.DataFrame([("zz9", "wiki/a.md", 1.0, 1)], columns=["query_id", "doc_id", "score", "rank"]))
    with pytest.raises(UsageError, match="run other has 1 queries that query set .* lacks .*'zz9'"):
        vaulteval.compare(qs, [runs[0], stray])
    with pytest.raises(UsageError, match="takes the query set first"):
        vaulteval.compare(list(runs), qs)


def test_run_refuses_a_vault_other_than_the_query_sets(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", {"a.md": "# A\n\nZebra notes."})
    other = make_vault(tmp_path / "w", {"a.md": "# A\n\nOther notes."})
    qs = load_queryset(write_yaml(tmp_path / "q.yaml", [{"id": "q1", "query": "zebra", "relevant": {"[[a]]": 1}}]),
                       Vault(root))
    with pytest.raises(UsageError, match="was loaded against"):
        vaulteval.run(qs, "bm25", vault=Vault(other))
    with pytest.raises(UsageError, match="was loaded against"):
        evaluate(Vault(other), qs, ["bm25"])
    runs = vaulteval.run(qs, "bm25", use_vault_index=False)  # no vault= : the set's own
    assert runs["bm25"].ranking("q1") == ["wiki/a.md"]


@pytest.mark.parametrize("content, message", [
    (b"q1 Q0 wiki/a.md 1 2.5\n", r"x\.trec:1: 5 fields; a TREC run line is 'qid Q0 doc rank score name'"),
    (b"q1 Q0 wiki/a.md 1 2.5 r\nq1 Q0 wiki/b.md one 2.0 r\n", r"x\.trec:2: rank 'one' is not a whole number"),
    (b"q1 Q0 wiki/a.md 1 high r\n", r"x\.trec:1: score 'high' is not a number"),
    (b"q1 Q0 wiki/a.md 0 1.0 r\n", r"x\.trec:1: rank must be 1 or more"),
    (b"q1 Q0 wiki/a.md 1 nan r\n", r"x\.trec:1: rank must be 1 or more and score finite"),
    (b"q1 Q0 wiki/a.md 1 2.0 r\nq1 Q0 wiki/a.md 2 1.0 r\n", r"x\.trec:2: wiki/a\.md is listed twice for query q1"),
    (b"q1 Q0 wiki/\xff.md 1 2.0 r\n", r"x\.trec: not UTF-8 text"),
])
def test_a_malformed_trec_file_is_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.trec"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message) as info:
        Run.from_trec(path)
    assert "\n" not in str(info.value)


def test_a_missing_or_folder_run_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        Run.from_trec(tmp_path / "nope.trec")
    with pytest.raises(UsageError, match="is not a regular file"):
        Run.from_trec(tmp_path)


def test_an_empty_trec_file_is_an_empty_run(tmp_path: Path) -> None:
    (tmp_path / "empty.trec").write_text("", encoding="utf-8")
    run = Run.from_trec(tmp_path / "empty.trec")
    assert run.name == "empty" and run.df.empty
