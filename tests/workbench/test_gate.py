"""The CI gate (`eval compare BASE NEW --fail-on worse`) on runs built to be better, worse and indistinguishable;
a baseline kept beside its query set verifies after the repository moves; a run of the older report format
still verifies and says which version wrote it.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_gate.py -q``
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vaulteval.cli.main import main
from vaulteval.cli.sample import copy_sample
from vaulteval.workbench.procedure import printed_contradictions
from vaulteval.workbench.report import Report
from vaulteval.workbench.verify import verify_run

from evalkit import QUERYSET, eval_cache  # noqa: F401

# top=1 keeps one page per query: built to be worse than bm25 on nDCG@10; k1/b moves nothing detectable.
WORSE, SAME = "bm25:top=1", "bm25:k1=0.9,b=0.4"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gate")
    vault = copy_sample(root / "v")
    repo = root / "repo" / "querysets"
    repo.mkdir(parents=True)
    queryset = repo / "sample.yaml"
    queryset.write_text(QUERYSET.read_text(encoding="utf-8").replace("vault: ../sample-vault", f"vault: {vault}"),
                        encoding="utf-8")
    out = {}
    for name, strategy, where in (("base", "bm25", repo), ("worse", WORSE, root / "runs"),
                                  ("same", SAME, root / "runs")):
        args = ["eval", "run", "--vault", str(vault), "--queryset", str(queryset), "--strategy", strategy,
                "--measures", "nDCG@10", "RR", "--out", str(where), "--id", name, "--cache", str(root / "cache")]
        assert main(args) == 0
        out[name] = where / name
    out["vault"], out["cache"] = vault, root / "cache"
    return out


def _gate(base: Path, new: Path, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["eval", "compare", str(base), str(new), "--fail-on", "worse", *extra])
    return code, capsys.readouterr().out


def test_a_worse_run_fails_the_gate_with_the_lines_it_prints(runs: dict[str, Path],
                                                             capsys: pytest.CaptureFixture) -> None:
    code, out = _gate(runs["base"], runs["worse"], capsys)
    assert code == 1, out
    failed = [ln for ln in out.splitlines() if ln.startswith("gate: ") and "→ worse" in ln]
    assert failed and all(ln.removeprefix("gate: ") in out.replace("- ", "", 1) for ln in failed)
    assert "gate: FAILED" in out and printed_contradictions(out) == []


def test_a_better_run_and_an_indistinguishable_one_pass(runs: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    code, out = _gate(runs["worse"], runs["base"], capsys)  # bm25 against the truncated run: better
    assert code == 0 and "→ better" in out and "gate: passed" in out
    code, out = _gate(runs["base"], runs["same"], capsys)
    assert code == 0 and "→ no detectable difference" in out and "→ worse" not in out
    assert printed_contradictions(out) == []


def test_the_gate_looks_only_at_the_named_measures(runs: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    code, out = _gate(runs["base"], runs["worse"], capsys, "--measures", "nDCG@10")
    assert code == 1 and ", RR:" not in out


def test_a_baseline_kept_beside_its_query_set_verifies_after_the_repository_moves(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    original = runs["base"].parent.parent
    moved = tmp_path / "checkout"
    shutil.copytree(original, moved)
    hidden = original.rename(original.with_name("elsewhere"))  # the recorded query set path is gone
    try:
        baseline = moved / "querysets" / "base"
        assert main(["eval", "verify", str(baseline), "--cache", str(runs["cache"])]) == 0, capsys.readouterr().out
        code, out = _gate(baseline, runs["same"], capsys)
        assert code == 0 and "gate: passed" in out
    finally:
        hidden.rename(original)


def _as_report_format_1(run_dir: Path) -> None:
    """report.json and report.md as vaulteval 0.1.0 wrote them: Holm-adjusted randomization p values beside
    bootstrap intervals, no report_format, no verdicts."""
    path = run_dir / "report.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    summary = data["tables"]["summary"]
    old = ["run", "measure", "value", "ci_low", "ci_high", "baseline_value", "delta", "delta_ci_low", "delta_ci_high",
           "mde", "wins", "ties", "losses", "p_randomization", "p_ttest", "p_holm", "significant", "status"]
    for row in summary["rows"]:
        tested = row.get("p") is not None
        row.update(p_randomization=row["p"], p_ttest=row["p"], p_holm=row["p"],
                   significant=(row["p"] < 0.05) if tested else None, mde=row.get("mde") or (0.1 if tested else None))
        for key in [k for k in row if k not in old]:
            del row[key]
    summary["columns"] = old
    summary["dtypes"] = {c: summary["dtypes"].get(c, "float64") for c in old}
    summary["dtypes"]["significant"] = "object"
    for key in ("report_format", "procedure", "questions"):
        data["params"].pop(key, None)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (run_dir / "report.md").write_text(Report.from_data(data).to_markdown() + "\n", encoding="utf-8")


def test_a_run_of_the_older_report_format_verifies_and_says_which_version_wrote_it(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "old"
    shutil.copytree(runs["same"], run_dir)
    _as_report_format_1(run_dir)
    result = verify_run(run_dir, cache_dir=runs["cache"])
    assert result.ok, result.diffs
    assert len(result.notes) == 1 and "written by vaulteval" in result.notes[0] and "format 1" in result.notes[0]
    assert main(["eval", "verify", str(run_dir), "--cache", str(runs["cache"])]) == 0
    assert "note: report.json was written by vaulteval" in capsys.readouterr().out
    data = json.loads((run_dir / "report.json").read_text())
    data["tables"]["summary"]["rows"][1]["delta"] = 0.5  # the numbers both formats hold are still checked
    (run_dir / "report.json").write_text(json.dumps(data))
    assert any("delta" in d for d in verify_run(run_dir, cache_dir=runs["cache"]).diffs)
