"""The CI gate (`eval compare BASE NEW --fail-on worse`) on runs built to be better, worse and indistinguishable;
a baseline kept beside its query set verifies after the repository moves; a run of another report format
is refused in one line.

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


def test_a_run_of_another_report_format_is_refused_in_one_line(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "old"
    shutil.copytree(runs["same"], run_dir)
    path = run_dir / "report.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["params"].pop("report_format") == 2  # as a report written before the format was recorded
    path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["eval", "verify", str(run_dir), "--cache", str(runs["cache"])]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "report format None" in err and "vaulteval eval run" in err
