"""The bundled notebooks: stored outputs checked by nbval, parameters, execution through `eval run`.

Usage: ``.venv/bin/python -m pytest tests/notebooks/test_notebooks.py -q``

``make test`` already collects ``notebooks/`` with ``--nbval``; the
subprocess run of nbval here is skipped then, so no notebook runs twice.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from vaulteval.cli.main import main
from vaulteval.notebooks.run import NOTEBOOK_DIR, NotebookFailed, execute, names, notebook_params, parameters

from evalkit import QUERYSET, eval_cache  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = ["evaluate", "explore", "judge", "misses", "rerank_impact", "sweep", "tune"]
# Anything machine- or run-specific that must never be stored in an output.
VOLATILE = re.compile(r"/tmp/|/home/|/root/|/work/|site-packages|\d{4}-\d\d-\d\dT\d\d:\d\d|\d{8}-\d{6}-")


def _nbval(paths: list[Path], cache: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, VAULTEVAL_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    cmd = [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "-v",
           "--rootdir", str(cwd), *map(str, paths)]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(str(out.get("text", "")))
        parts += [str(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


# ----------------------------------------------------------- stored notebooks

def test_the_bundled_notebooks_ship_in_the_package_and_the_repo_root_links_to_them() -> None:
    assert names() == NOTEBOOKS
    assert (REPO / "notebooks").resolve() == NOTEBOOK_DIR.resolve()
    assert (REPO / "querysets" / "sample-vault.yaml").resolve() == \
        (REPO / "vaulteval" / "data" / "querysets" / "sample-vault.yaml").resolve()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_one_parameters_cell_whose_defaults_are_the_bundled_sample(name: str) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    params = parameters(name)
    assert params["vault"]["default"] == '"sample"' and params["queryset"]["default"] == '"sample"'
    assert params["cache"]["default"] == '""'
    assert all(p["help"] for p in params.values()), "every parameter says what it is"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_stored_outputs_are_portable_and_error_free(name: str) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    assert all(c.outputs for c in code), "every cell after the parameters has a stored output (run: vaulteval notebooks --refresh)"
    for cell in code:
        text = _outputs_text(cell)
        assert not VOLATILE.search(text), f"machine-specific output in {name}: {VOLATILE.search(text).group()!r}"
        assert all(o.output_type != "error" and o.get("name") != "stderr" for o in cell.outputs)
        timed = re.search(r"latency|seconds|environment_summary", cell.source)
        if timed:
            assert "NBVAL_IGNORE_OUTPUT" in cell.source, "timings only in NBVAL_IGNORE_OUTPUT cells"
    assert "papermill" not in nb.metadata


def test_nbval_passes_on_the_bundled_notebooks(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    args = [Path(a.split("::")[0]).resolve() for a in request.config.args]
    if request.config.getoption("nbval", default=False) and any(a == NOTEBOOK_DIR.resolve() for a in args):
        pytest.skip("this session already runs nbval on notebooks/ (make test)")
    proc = _nbval([REPO / "notebooks"], tmp_path / "cache", REPO)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"\d+ passed", proc.stdout) and "failed" not in proc.stdout.splitlines()[-1]


def test_nbval_fails_when_a_stored_metric_is_edited(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / "evaluate.ipynb", as_version=4)
    metrics = next(i for i, c in enumerate(nb.cells) if c.source.strip() == "tables.comparison(report)")
    nb.cells = nb.cells[: metrics + 1]  # parameters, setup and headline, the comparison table: enough to compare
    nbformat.write(nb, tmp_path / "unchanged.ipynb")
    data = nb.cells[metrics].outputs[0].data
    stored = re.search(r"0\.\d{3}", data["text/plain"]).group()
    edited = f"{stored[:-1]}{(int(stored[-1]) + 1) % 10}"
    for mime in ("text/plain", "text/html"):
        assert stored in data[mime]
        data[mime] = data[mime].replace(stored, edited, 1)
    nbformat.write(nb, tmp_path / "edited.ipynb")

    proc = _nbval([tmp_path / "unchanged.ipynb", tmp_path / "edited.ipynb"], tmp_path / "cache", tmp_path)
    assert proc.returncode != 0
    failed = re.findall(r"^FAILED (\S+\.ipynb)::Cell (\d+)", proc.stdout, re.M)
    assert failed == [("edited.ipynb", str(sum(c.cell_type == "code" for c in nb.cells) - 1))], proc.stdout[-3000:]
    code = sum(c.cell_type == "code" for c in nb.cells)
    assert len(re.findall(r"^unchanged\S*::Cell \d+ PASSED", proc.stdout, re.M)) == code  # the control passes


# -------------------------------------------------------------------- CLI

def test_notebooks_command_lists_every_notebook_with_its_parameters(capsys: pytest.CaptureFixture) -> None:
    assert main(["notebooks"]) == 0
    out = capsys.readouterr().out
    for name in NOTEBOOKS:
        assert f"\n{name}: " in out
    assert 'strategies = []' in out and 'reranked = ""' in out  # defaults holding "=" sit in the first code cell
    for name in NOTEBOOKS:  # parameters readable as typed: no escape anywhere a reader looks
        source = (NOTEBOOK_DIR / f"{name}.ipynb").read_text(encoding="utf-8")
        assert "\\N{" not in source, name
    evaluate = (NOTEBOOK_DIR / "evaluate.ipynb").read_text(encoding="utf-8")
    assert 'strategies or [\\"bm25\\", \\"bm25:analyzer=english\\"]' in evaluate
    assert main(["notebooks", "--json"]) == 0
    listed = {nb["name"]: nb["parameters"] for nb in json.loads(capsys.readouterr().out)}
    assert set(listed) == set(NOTEBOOKS)
    assert listed["sweep"]["k1"]["type"] == "list" and listed["sweep"]["allow_egress"]["default"] == "False"


def test_eval_run_executes_a_notebook_into_the_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["eval", "run", "--queryset", str(QUERYSET), "--strategy", "bm25", "--out", str(tmp_path),
                 "--id", "r1", "--notebooks", "misses", "--notebook-param", "snippet=80"])
    assert code == 0
    run_dir = tmp_path / "r1"
    assert f"notebook: {run_dir / 'misses.ipynb'}" in capsys.readouterr().out
    nb = nbformat.read(run_dir / "misses.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "snippet = 80" in injected.source and 'strategies = ["bm25"]' in injected.source
    assert all(o.output_type != "error" for c in nb.cells for o in c.get("outputs", []))
    misses = sum(1 for _ in open(run_dir / "misses.csv", encoding="utf-8")) - 1
    assert f"{misses} misses at k=10" in "".join(_outputs_text(c) for c in nb.cells)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["notebooks"][0]["name"] == "misses" and manifest["notebooks"][0]["parameters"]["snippet"] == 80


def test_notebook_parameters_are_checked_before_evaluating(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    base = ["eval", "run", "--queryset", str(QUERYSET), "--out", str(tmp_path)]
    assert main([*base, "--notebooks", "nope"]) == 2
    assert "no notebook named 'nope'" in capsys.readouterr().err
    assert main([*base, "--notebooks", "misses", "--notebook-param", "colour=red"]) == 2
    assert "no chosen notebook takes parameter colour" in capsys.readouterr().err
    assert main([*base, "--notebook-param", "k=3"]) == 2
    assert not list(tmp_path.iterdir())


def test_the_reranked_strategy_of_a_run_reaches_rerank_impact() -> None:
    context = {"vault": "/v", "queryset": "/q.yaml", "k": 5, "cache": None,
               "strategies": ["bm25", "rerank:ollama,bm25_top=50"]}
    got = notebook_params("rerank_impact", context)
    assert got == {"vault": "/v", "queryset": "/q.yaml", "k": 5, "reranked": "rerank:ollama,bm25_top=50"}
    assert "reranked" not in notebook_params("rerank_impact", {**context, "strategies": ["bm25"]})


def _broken_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("y = x + 1"),
                nbformat.v4.new_code_cell("y / 0")]
    nbformat.write(nb, path)
    return path


def test_a_failing_cell_is_one_line_with_its_index_and_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    broken = _broken_notebook(tmp_path / "broken.ipynb")
    with pytest.raises(NotebookFailed) as info:
        execute(broken, tmp_path / "out" / "broken.ipynb", {"x": 2})
    err = info.value
    assert (err.cell_index, err.ename) == (3, "ZeroDivisionError")  # parameters, injected, y = x + 1, y / 0
    assert "\n" not in str(err) and "cell 3: ZeroDivisionError: division by zero" in str(err)
    assert (tmp_path / "out" / "broken.ipynb").is_file()  # the partly executed copy is kept

    code = main(["eval", "run", "--queryset", str(QUERYSET), "--out", str(tmp_path / "runs"), "--id", "r",
                 "--notebooks", str(broken)])
    assert code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vaulteval: error: notebook broken.ipynb failed in cell 2: ")
    assert "ZeroDivisionError" in lines[0] and "Traceback" not in lines[0]
    assert (tmp_path / "runs" / "r" / "broken.ipynb").is_file() and broken.read_text().count('"outputs": []') == 3


def test_unknown_parameters_are_refused_not_warned(tmp_path: Path) -> None:
    from vaulteval.errors import UsageError

    with pytest.raises(UsageError, match="has no parameter colour"):
        execute("explore", tmp_path / "x.ipynb", {"colour": "red"})
    assert not (tmp_path / "x.ipynb").exists()
