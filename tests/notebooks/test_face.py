"""What the notebooks put in front of a reader: parameters papermill reads, headlines that match the run's
files, tables without NaN, a grader that escapes, saves atomically, resumes and refuses empty sets.

Usage: ``.venv/bin/python -m pytest tests/notebooks/test_face.py -q``
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.notebooks.run import NOTEBOOK_DIR, NotebookFailed, execute, names, parameters

from evalkit import QUERYSET, eval_cache  # noqa: F401

NOTEBOOKS = ["evaluate", "explore", "judge", "misses", "rerank_impact", "sweep", "tune"]
ANSWERING = ("evaluate", "rerank_impact", "tune")  # notebooks that compare strategies: their first lines answer


def _text(cell) -> str:
    return "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_papermill_reads_every_parameter_and_lists_it_in_help(name: str, caplog: pytest.LogCaptureFixture) -> None:
    import papermill

    with caplog.at_level(logging.WARNING, logger="papermill"):
        found = papermill.inspect_notebook(str(NOTEBOOK_DIR / f"{name}.ipynb"))
    assert not [r for r in caplog.records if "Unable to parse" in r.getMessage()]
    declared = parameters(name)
    assert list(found) == list(declared)
    assert all(p["inferred_type_name"] != "None" for p in found.values()), "every parameter has a type annotation"
    helped = subprocess.run([sys.executable, "-m", "papermill", "--help-notebook", str(NOTEBOOK_DIR / f"{name}.ipynb")],
                            capture_output=True, text=True, timeout=120).stdout
    listed = re.findall(r"^  (\w+): ", helped, re.M)
    assert listed == list(declared)


def test_tune_and_judge_take_out() -> None:
    assert "out" in parameters("tune") and "out" in parameters("judge")
    assert names() == NOTEBOOKS


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_first_output_is_a_headline_naming_the_vault_and_the_query_set(name: str) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    first = _text(code[0])
    lines = first.splitlines()
    if name in ANSWERING:  # line 1: the best strategy with its interval; line 2: how sure; then the ranking
        assert re.match(r"best for the bundled sample vault on sample-vault(-test)?: \S+,( held-out)? nDCG@10 "
                        r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", lines[0]), lines[0]
        assert lines[1].startswith("how sure: ") and "written for this set, none real" in lines[1]
        assert lines[2].startswith("1. ") and lines[2].split(":")[0][3:] in lines[0]
    else:
        assert first.startswith("the bundled sample vault, notes in wiki/: 53 pages; index: ")
    assert any(ln.startswith("the bundled sample vault, notes in wiki/: 53 pages; index: ") for ln in lines)
    if name == "tune":  # its numbers are the test split's: the confirmation run's own query set
        assert re.search(r"query set sample-vault-test: \d+ judged queries \(\d+ judgments\)", first)
    else:
        assert "query set sample-vault: 66 judged queries (98 judgments), 8 negative queries" in first
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in code for o in c.outputs)
    assert not re.search(r"<td[^>]*>\s*(NaN|None|&lt;NA&gt;)\s*</td>", html)


def test_the_stored_evaluate_headline_gives_each_comparison_a_verdict() -> None:
    from vaulteval.workbench.procedure import printed_contradictions

    nb = nbformat.read(NOTEBOOK_DIR / "evaluate.ipynb", as_version=4)
    first = _text(next(c for c in nb.cells if c.cell_type == "code" and "headline_of(ev)" in c.source))
    line = next(ln for ln in first.splitlines() if ln.startswith("bm25-english vs bm25, nDCG@10: Δ "))
    assert re.search(r"Δ [+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\] 95%, p \d\.\d{3} → "
                     r"(better|worse|no detectable difference \(the set detects \d\.\d{3} or more; "
                     r"needs about \d+ more queries\))$", line)
    assert printed_contradictions(first) == []


def test_eval_run_and_its_evaluate_notebook_show_the_headline_of_report_json(
        tmp_path: Path, capsys: pytest.CaptureFixture, eval_cache: Path) -> None:  # noqa: F811
    from vaulteval.workbench.headline import headline_of_dir

    code = main(["eval", "run", "--queryset", str(QUERYSET), "--strategy", "bm25", "--strategy",
                 "bm25:analyzer=english", "--out", str(tmp_path), "--id", "r", "--notebooks", "evaluate"])
    assert code == 0
    out = capsys.readouterr().out
    run_dir = tmp_path / "r"
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    row = next(r for r in report["tables"]["summary"]["rows"]
               if r["run"] == "bm25-english" and r["measure"] == "nDCG@10")
    expected = (f"Δ {row['delta']:+.3f} [{row['delta_ci_low']:+.3f}, {row['delta_ci_high']:+.3f}] 95%, "
                f"p {row['p']:.3f} → {row['verdict']}")
    headline = headline_of_dir(run_dir).text()
    assert expected in headline and out.startswith(headline)  # stdout opens with it
    assert "cannot be told from noise" not in out  # the MDE is on the comparison's line now
    nb = nbformat.read(run_dir / "evaluate.ipynb", as_version=4)
    shown = _text(next(c for c in nb.cells if c.cell_type == "code" and "headline_of(ev)" in c.source))
    assert [ln for ln in shown.splitlines() if " vs " in ln] == [ln for ln in headline.splitlines() if " vs " in ln]


def test_the_tune_notebooks_heldout_table_is_tune_json_and_metrics_csv(tmp_path: Path, eval_cache: Path) -> None:  # noqa: F811
    from vaulteval.notebooks.runfiles import read_tune_run, run_folder
    from vaulteval.notebooks.support import resolve_inputs
    from vaulteval.workbench.tune import tune

    v, qs = resolve_inputs("sample", "sample")
    with run_folder(tmp_path / "out") as folder:
        result = tune(v, qs, grid=["bm25", "bm25:analyzer=english"], out=folder, run_id="t")
        run = read_tune_run(result.run_dir)
    table = run["heldout"].set_index("run")
    decision = json.loads((tmp_path / "out" / "t" / "tune.json").read_text(encoding="utf-8"))["decision"]
    assert table.loc["default", "nDCG@10"] == pytest.approx(decision["default_mean"], abs=1e-9)
    if "best" in table.index:
        assert table.loc["best", "nDCG@10"] == pytest.approx(decision["best_mean"], abs=1e-9)
    metrics = pd.read_csv(tmp_path / "out" / "t" / "metrics.csv")
    overall = metrics[(metrics.slice_by == "all") & (metrics.measure == "nDCG@10")].set_index("run").value
    assert table["nDCG@10"].to_dict() == pytest.approx(overall.to_dict())
    decided = run["decided"].set_index("role")["nDCG@10 (held out)"]  # the notebook's table of tune.json's means
    assert decided["default"] == decision["default_mean"]
    assert decided.get("best on the tune split", decision["best_mean"]) == decision["best_mean"]
    first = run["headline"].answer[0]
    assert first.startswith("best for the bundled sample vault") and first.endswith(f"verdict: {decision['verdict']}")


def test_tune_without_out_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from vaulteval.notebooks.runfiles import run_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with run_folder("") as folder:
        (folder / "x").write_text("x")
    assert list(tmp_path.iterdir()) == []


def test_a_user_error_is_one_line_in_the_notebook(tmp_path: Path, eval_cache: Path) -> None:  # noqa: F811
    with pytest.raises(NotebookFailed) as failed:
        execute("explore", tmp_path / "explore.ipynb", {"queryset": str(tmp_path / "missing.yaml")})
    nb = nbformat.read(tmp_path / "explore.ipynb", as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert len(errors) == 1 and len(errors[0].traceback) == 1
    assert errors[0].traceback[0].startswith("vaulteval: error: ") and "missing.yaml" in errors[0].traceback[0]
    assert "missing.yaml" in str(failed.value)


def test_a_malformed_pool_is_one_line_in_the_judge_notebook(tmp_path: Path, eval_cache: Path) -> None:  # noqa: F811
    (tmp_path / "pool.yaml").write_text("depth: 3\nstrategies: [bm25]\npairs:\n- {query_id: q1, query: x, snippet: y}\n",
                                        encoding="utf-8")
    with pytest.raises(NotebookFailed):
        execute("judge", tmp_path / "judge.ipynb", {"pool": str(tmp_path / "pool.yaml")})
    nb = nbformat.read(tmp_path / "judge.ipynb", as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert len(errors) == 1 and len(errors[0].traceback) == 1
    assert errors[0].traceback[0].startswith("vaulteval: error: pool ") and "has no text 'page'" in errors[0].traceback[0]


# ------------------------------------------------------------------- grader

def _pool(vault: str) -> dict:
    return {"vault": vault, "depth": 3, "strategies": ["bm25"], "pairs": [
        {"query_id": "q01", "query": "<b>espresso</b> & milk", "page": "wiki/coffee/<x>.md", "best_rank": 1,
         "strategies": ["bm25"], "snippet": "<script>alert(1)</script> espresso", "llm_grade": 2, "llm_reason": "<i>"},
        {"query_id": "q02", "query": "grinder", "page": "wiki/coffee/Grinder.md", "best_rank": 2,
         "strategies": ["bm25"], "snippet": "burr grinder"}]}


def test_the_grader_escapes_vault_text_and_shows_llm_pregrades_as_suggestions() -> None:
    from vaulteval.notebooks.grader import Grader
    from vaulteval.vault.vault import BUNDLED_SAMPLE

    html = Grader(_pool(str(BUNDLED_SAMPLE)), queryset="sample").card_html()
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;espresso" in html
    assert "&lt;x&gt;.md" in html and "a suggestion" in html and "&lt;i&gt;" in html


def test_the_grader_saves_atomically_as_you_go_resumes_and_refuses_zero_judgments(tmp_path: Path) -> None:
    from vaulteval.errors import UsageError
    from vaulteval.notebooks.grader import Grader
    from vaulteval.vault.vault import BUNDLED_SAMPLE

    out = tmp_path / "judged.yaml"
    pool = _pool(str(BUNDLED_SAMPLE))
    pool["pairs"][0]["page"] = "wiki/coffee/Espresso machine.md"
    g = Grader(pool, queryset="sample", judge="ana", out=str(out))
    with pytest.raises(UsageError, match="0 judgments"):
        g.save()
    assert not out.exists()
    g.grade(2)
    assert g.position == 1 and "1 of 2 pairs graded" in g.progress()
    saved = yaml.safe_load(out.read_text(encoding="utf-8"))
    q01 = next(q for q in saved["queries"] if q["id"] == "q01")
    assert q01["relevant"]["wiki/coffee/Espresso machine.md"] == 2 and q01["judged"]["wiki/coffee/Espresso machine.md"]["judge"] == "ana"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judged.yaml"]  # no temporary file left
    again = Grader(pool, queryset="sample", judge="ana", out=str(out))
    assert again.grades == {("q01", "wiki/coffee/Espresso machine.md"): 2} and again.position == 1
    again.grade(None)  # skip
    assert again.skipped == {("q02", "wiki/coffee/Grinder.md")}


def test_the_grader_never_writes_over_its_source_query_set(tmp_path: Path) -> None:
    from vaulteval.errors import UsageError
    from vaulteval.notebooks.grader import Grader
    from vaulteval.vault.vault import BUNDLED_SAMPLE

    source = tmp_path / "q.yaml"
    source.write_text(QUERYSET.read_text(encoding="utf-8").replace("vault: ", "vault_was: "), encoding="utf-8")
    before = source.read_bytes()
    pool = _pool(str(BUNDLED_SAMPLE))
    pool["pairs"][0]["page"] = "wiki/coffee/Espresso machine.md"
    g = Grader(pool, queryset=str(source), judge="ana")
    g.grades[("q01", "wiki/coffee/Espresso machine.md")] = 2
    g.out = str(source)
    with pytest.raises(UsageError, match="is the source query set"):
        g.save()
    assert source.read_bytes() == before


# ------------------------------------------------------------ numbers shown

def test_a_threshold_that_keeps_under_half_the_answers_is_no_useful_threshold() -> None:
    from vaulteval.cli.querysets import abstention_lines
    from vaulteval.workbench.abstention import useful

    assert useful((0.5, 0.5, 0.1)) and not useful((31.4, 0.14, 0.1)) and not useful(None)
    metrics = pd.DataFrame([("a", "abstain_min_score@fp0.10", 31.37), ("a", "abstain_recall_kept@fp0.10", 0.14),
                            ("b", "abstain_min_score@fp0.10", 0.61), ("b", "abstain_recall_kept@fp0.10", 0.8)],
                           columns=["run", "measure", "value"])
    lines = abstention_lines(metrics)
    assert lines[0].startswith("a: no useful threshold") and "14%" in lines[0]
    assert lines[1].startswith("b: retrieve --min-score 0.61 keeps 80%")


class _Ctx:
    """A query context whose page shares no term with the query (as a dense or hybrid hit can)."""

    def __init__(self):
        self.terms = ["why", "flat"]
        self.index = type("I", (), {"doc": staticmethod(lambda d: d), "analyze": staticmethod(lambda w: [w])})()
        self.checker = type("C", (), {"current_record": staticmethod(lambda d: {"ok": 1})})()

    def absent_terms(self, docs):
        return list(self.terms)

    def best_rank(self, docs):
        return 7


def test_a_ranked_page_is_explained_by_its_rank_and_absent_terms_leave_out_stopwords() -> None:
    from vaulteval.workbench.misses import _cause

    cause, _, detail = _cause(_Ctx(), [0], "p.md", 11, 10, 100, False, [], semantic=True)
    assert cause == "below-cutoff" and "page rank 11" in detail and "flat" in detail and "why" not in detail
    cause, _, _ = _cause(_Ctx(), [0], "p.md", None, 10, 100, False, [], semantic=True)
    assert cause == "outside-pool"
    cause, _, detail = _cause(_Ctx(), [0], "p.md", None, 10, 100, False, [], semantic=False)
    assert cause == "no-query-term" and detail == "absent from the note: flat"


def test_tables_show_a_dash_with_a_footnote_integers_as_integers_and_no_index() -> None:
    from vaulteval.notebooks.tables import show

    t = show(pd.DataFrame({"run": ["bm25-english", "b"], "n": [8.0, 3.0], "value": [0.12345, float("nan")],
                           "grade": pd.array([1, None], dtype="Int64")}), "x")
    html, text = t._repr_html_(), t.text()
    assert ">8<" in html and ">0.123<" in html and "NaN" not in html and "&lt;NA&gt;" not in html
    assert "—: no value" in html and "—" in text and "nan" not in text.lower()
    assert "white-space: nowrap" in html and "row_heading" not in html


def test_a_notebook_opens_the_vault_with_its_remembered_notes_folder(tmp_path: Path, eval_cache: Path) -> None:  # noqa: F811
    import shutil

    from vaulteval.vault.vault import BUNDLED_SAMPLE

    vault = tmp_path / "v"  # neither wiki/ nor .obsidian/: only provision's record names the notes folder
    shutil.copytree(BUNDLED_SAMPLE / "wiki", vault / "notes")
    text = QUERYSET.read_text(encoding="utf-8").replace("wiki/", "notes/")
    (tmp_path / "q.yaml").write_text(re.sub(r"(?m)^vault:.*$", "", text), encoding="utf-8")
    assert main(["provision", "--vault", str(vault), "--notes-dir", "notes"]) == 0
    execute("explore", tmp_path / "explore.ipynb", {"vault": str(vault), "queryset": str(tmp_path / "q.yaml")})
    nb = nbformat.read(tmp_path / "explore.ipynb", as_version=4)
    first = _text([c for c in nb.cells if c.cell_type == "code" and "headline" in c.source][0])
    assert first.startswith("vault v, notes in notes/: 53 pages; index: current (every page as it is now), built ")
