"""Run directories are untrusted too: a safe run id, a checked manifest, and a report.md that verify checks.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_run_safety.py -q``
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from vaulteval.cli.main import main
from vaulteval.cli.sample import copy_sample
from vaulteval.pipeline.provision import provision
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault
from vaulteval.workbench.evaluate import evaluate
from vaulteval.workbench.verify import verify_run

from evalkit import QUERYSET, eval_cache, snapshot  # noqa: F401


@pytest.fixture(scope="module")
def made_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("runsafety")
    vault = Vault(copy_sample(base / "v"))
    provision(vault)
    ev = evaluate(vault, load_queryset(QUERYSET, vault), ["bm25", "bm25:analyzer=english"],
                  measures=["nDCG@10", "RR"], k=10, cache_dir=base / "cache")
    return ev.save(base / "runs", run_id="r1")


@pytest.fixture
def run_dir(made_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "runs" / "r1"
    shutil.copytree(made_run, copy)
    return copy


# -- item 2: the run id is one safe path component ------------------------------

@pytest.mark.parametrize("bad", ["../x", "../v/wiki/injected", "a/b", "..", ".hidden", "", "a\\b", "x" * 200])
def test_eval_run_refuses_an_unsafe_id_before_writing(made_run: Path, tmp_path: Path, bad: str,
                                                      capsys: pytest.CaptureFixture) -> None:
    vault = made_run.parent.parent / "v"
    out = tmp_path / "out"
    out.mkdir()
    before_vault, before_tmp = snapshot(vault), snapshot(tmp_path)
    code = main(["eval", "run", "--vault", str(vault), "--queryset", str(QUERYSET), "--strategy", "bm25",
                 "--out", str(out), "--id", bad])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "run id" in err
    assert snapshot(vault) == before_vault and snapshot(tmp_path) == before_tmp


def test_verify_refuses_a_manifest_whose_id_leaves_the_run_folder(run_dir: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    manifest = run_dir / "manifest.json"
    data = json.loads(manifest.read_text())
    data["id"] = "../x"
    manifest.write_text(json.dumps(data))
    before = snapshot(run_dir.parent.parent)
    assert main(["eval", "verify", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "run id" in err and "Traceback" not in err
    assert snapshot(run_dir.parent.parent) == before


# -- item 6 (manifest): malformed manifests get one line and exit 2 -------------

def _set(path: list, value):
    def apply(data: dict) -> dict:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return data
    return apply


MALFORMED = {
    "list": lambda d: [d],
    "string": lambda d: "manifest",
    "null": lambda d: None,
    "no-vault": lambda d: {k: v for k, v in d.items() if k != "vault"},
    "vault-list": _set(["vault"], []),
    "vault-root-int": _set(["vault", "root"], 7),
    "queryset-str": _set(["queryset"], "q.yaml"),
    "parameters-null": _set(["parameters"], None),
    "measures-str": _set(["parameters", "measures"], "nDCG@10"),
    "k-str": _set(["parameters", "k"], "10"),
    "strategies-dict": _set(["strategies"], {}),
    "strategies-empty": _set(["strategies"], []),
    "strategy-int": _set(["strategies"], [3]),
    "strategy-settings-str": _set(["strategies", 0, "strategy"], "bm25"),
    "strategy-unknown-field": _set(["strategies", 0, "strategy"], {"bogus": 1}),
    "strategy-k1-nan": _set(["strategies", 0, "strategy", "k1"], float("nan")),
    "strategy-rerank-bad": _set(["strategies", 0, "strategy", "rerank"], {"nonsense": True}),
    "trec-escape": _set(["strategies", 0, "trec"], "../../etc/passwd"),
    "trec-int": _set(["strategies", 0, "trec"], 5),
    "id-int": _set(["id"], 12),
}


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_malformed_manifest_is_one_line_exit_2(run_dir: Path, shape: str, capsys: pytest.CaptureFixture) -> None:
    manifest = run_dir / "manifest.json"
    manifest.write_text(json.dumps(MALFORMED[shape](json.loads(manifest.read_text()))))
    code = main(["eval", "verify", str(run_dir)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "internal error" not in err


# -- item 4: every reported number is data, and report.md is checked -------------

def test_report_numbers_are_stored_as_data(run_dir: Path) -> None:
    data = json.loads((run_dir / "report.json").read_text())
    summary = data["tables"]["summary"]
    assert {"p", "verdict", "delta_ci_low", "delta_ci_high", "mde", "more_queries", "delta", "wins"} \
        <= set(summary["columns"])
    assert any(row["p"] is not None for row in summary["rows"])
    assert data["params"]["report_format"] == 2
    assert verify_run(run_dir).ok


def _edit_first_p_value(text: str) -> str:
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("| bm25-english") and "nDCG@10" in line:
            cells = line.split("|")
            # summary columns: run, measure, value, ci_low, ci_high, baseline_value, delta, delta_ci_low,
            # delta_ci_high, p, ...
            cells[10] = re.sub(r"\d\.\d{4}", "0.0001", cells[11])
            lines[i] = "|".join(cells)
            return "".join(lines)
    raise AssertionError("no summary row for bm25-english")


def test_a_hand_edited_p_value_in_report_md_fails_verify(run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    report = run_dir / "report.md"
    report.write_text(_edit_first_p_value(report.read_text()))
    result = verify_run(run_dir)
    assert not result.ok
    assert any(d.startswith("report.md: line") and "bm25-english | nDCG@10" in d for d in result.diffs), result.diffs
    assert main(["eval", "verify", str(run_dir)]) == 1
    assert "report.md: line" in capsys.readouterr().out


def test_a_hand_edited_verdict_in_report_md_fails_verify(run_dir: Path) -> None:
    report = run_dir / "report.md"
    text = report.read_text()
    flipped = text.replace("→ no detectable difference", "→ better", 1)
    assert flipped != text
    report.write_text(flipped)
    assert any(d.startswith("report.md: line") for d in verify_run(run_dir).diffs)


@pytest.mark.parametrize("column,value", [("p", 0.0001), ("verdict", "better"), ("delta", 0.5),
                                          ("wins", 999)])
def test_an_edited_number_in_report_json_fails_verify(run_dir: Path, column: str, value) -> None:
    path = run_dir / "report.json"
    data = json.loads(path.read_text())
    row = next(r for r in data["tables"]["summary"]["rows"] if r["run"] == "bm25-english")
    row[column] = value
    path.write_text(json.dumps(data))
    diffs = verify_run(run_dir).diffs
    assert any(d.startswith("report.json summary: bm25-english") and column in d for d in diffs), diffs


def test_a_malformed_report_json_is_a_difference_not_a_crash(run_dir: Path) -> None:
    (run_dir / "report.json").write_text('{"tables": 3}')
    diffs = verify_run(run_dir).diffs
    assert any(d.startswith("report.json: unreadable or malformed") for d in diffs)


# -- issue 42: a malformed value or a special file in a run directory --------------------------------

@pytest.mark.parametrize("edit, said", [
    ('"seed": NaN', "NaN"),
    ('"seed": 1e999', "past the largest number"),
    ('"seed": "x"', "parameters.seed must be a whole number"),
    ('"seed": true', "parameters.seed must be a whole number"),
    ('"condensed": 1', "parameters.condensed must be true or false"),
])
def test_a_non_finite_or_mistyped_manifest_value_is_malformed(run_dir: Path, edit: str, said: str,
                                                              capsys: pytest.CaptureFixture) -> None:
    path = run_dir / "manifest.json"
    key = edit.split(":")[0]
    text = re.sub(key + r': [^,\n]+', edit, path.read_text(encoding="utf-8"), count=1)
    assert edit in text
    path.write_text(text, encoding="utf-8")
    assert main(["eval", "verify", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert said in err and "malformed" in err and len(err.strip().splitlines()) == 1, err


def test_a_fifo_manifest_or_queryset_path_never_blocks(run_dir: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    fifo = tmp_path / "q.yaml"
    os.mkfifo(fifo)
    manifest["queryset"]["path"] = str(fifo)
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = verify_run(run_dir)
    assert result.diffs and "not a regular file" in result.diffs[0], result.diffs

    (run_dir / "manifest.json").unlink()
    os.mkfifo(run_dir / "manifest.json")
    assert main(["eval", "verify", str(run_dir)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_tampered_vault_pages_file_is_a_difference(run_dir: Path) -> None:
    pages = run_dir / "vault-pages.txt"
    lines = pages.read_text(encoding="utf-8").splitlines(keepends=True)
    digest, rel = lines[0].rstrip("\n").split("  ", 1)
    pages.write_text("".join(["sha256:" + "0" * 64 + "  " + rel + "\n"] + lines[1:]), encoding="utf-8")
    diffs = verify_run(run_dir).diffs
    assert any(line.startswith("vault-pages.txt: not the page list") for line in diffs), diffs
    assert f"vault: changed: {rel}" in diffs
    pages.unlink()
    assert "vault-pages.txt: missing from the run directory" in verify_run(run_dir).diffs


def test_a_fifo_or_malformed_table_in_a_run_directory_is_one_line(run_dir: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    (run_dir / "pool.csv").unlink()
    os.mkfifo(run_dir / "pool.csv")
    assert main(["eval", "compare", str(run_dir)]) == 2
    assert "pool.csv cannot be read (not a regular file)" in capsys.readouterr().err
    assert any(line.startswith("pool.csv: ") for line in verify_run(run_dir).diffs)  # a difference, no wait
    (run_dir / "pool.csv").unlink()
    (run_dir / "pool.csv").write_bytes(b'run,query_id\n"unclosed\n')
    assert main(["eval", "compare", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "pool.csv is malformed" in err and len(err.strip().splitlines()) == 1, err
