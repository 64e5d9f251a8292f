"""The bundled notebooks: list them, read their parameters, execute them with papermill.

Usage::

    names()                                     # ["evaluate", "explore", "misses", "rerank_impact", "sweep"]
    parameters("evaluate")                      # {"vault": {"default": '"sample"', "help": ...}, ...}
    execute("evaluate", "runs/x/evaluate.ipynb", {"vault": "/v", "queryset": "/v/q.yaml"})
    run_for_eval(["evaluate"], run_dir, context)  # what `vaulteval eval run --notebooks` does

Notebooks run in a kernel of the current Python (the one that imported
vaulteval), whatever kernels Jupyter has registered. A failing cell raises
:class:`NotebookFailed` carrying papermill's cell index, error name and
value; its message is one line and the partly executed notebook is kept.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from vaulteval.errors import UsageError, VaultevalError
from vaulteval.vault.paths import home_path
from vaulteval.vault.vault import PACKAGE_DIR

log = logging.getLogger(__name__)

NOTEBOOK_DIR = PACKAGE_DIR / "notebooks"
# Cell metadata that changes on every execution; stripped when stored outputs are refreshed.
VOLATILE_CELL_KEYS = ("papermill", "execution")


class NotebookFailed(VaultevalError):
    """A notebook raised an error in one of its cells."""

    def __init__(self, notebook: str, cell_index: int, ename: str, evalue: str, output: Path | None):
        self.notebook, self.cell_index, self.ename, self.evalue, self.output = notebook, cell_index, ename, evalue, output
        first = (evalue or "").strip().splitlines()
        where = f" (executed copy: {output})" if output else ""
        super().__init__(f"notebook {notebook} failed in cell {cell_index}: {ename}: "
                         f"{first[0] if first else ''}{where}")


class NotebookMissing(UsageError):
    """No bundled notebook has that name."""


def names() -> list[str]:
    """Usage: ``names()`` -> the bundled notebooks, without ``.ipynb``, sorted."""
    return sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb"))


def notebook_path(name: str | os.PathLike[str]) -> Path:
    """A bundled notebook by name (``evaluate`` or ``evaluate.ipynb``), or any ``.ipynb`` path."""
    text = str(name)
    if text.endswith(".ipynb") and ("/" in text or os.sep in text):
        path = home_path(text)
        if not path.is_file():
            raise NotebookMissing(f"notebook {path} does not exist")
        return path
    stem = text.removesuffix(".ipynb")
    path = NOTEBOOK_DIR / f"{stem}.ipynb"
    if not path.is_file():
        raise NotebookMissing(f"no notebook named {stem!r}; choose from {', '.join(names())}")
    return path


def parse_names(value: str | list[str]) -> list[str]:
    """Usage: ``parse_names("evaluate,rerank_impact")`` -> checked names (or .ipynb paths), in order, once each."""
    items = value if isinstance(value, list) else [value]
    out = [n.strip() for item in items for n in str(item).split(",") if n.strip()]
    if not out:
        raise UsageError(f"name at least one notebook: {', '.join(names())}")
    checked = [p.stem if p.parent.resolve() == NOTEBOOK_DIR.resolve() else str(p) for p in map(notebook_path, out)]
    return list(dict.fromkeys(checked))


def parameters(name: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Usage: ``parameters("sweep")`` -> {name: {"type", "default", "help"}} from the ``parameters`` cell.

    The cell is read with ``ast``; papermill's ``inspect_notebook`` reads the same
    names (the cells write ``=`` inside values as ``\N{EQUALS SIGN}``, because
    papermill's line parser skips a line with two ``=``). ``help`` is the
    comment after the value; ``default`` is the value as Python source.
    """
    import ast

    nb = json.loads(notebook_path(name).read_text(encoding="utf-8"))
    cells = [c for c in nb.get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not cells:
        return {}
    source = "".join(cells[0].get("source", ""))
    lines = source.splitlines()
    out: dict[str, dict[str, Any]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
            continue
        default = ast.get_source_segment(source, node.value) or ""
        try:
            value = ast.literal_eval(node.value)
            kind = type(value).__name__
            default = _shown(value)  # "bm25:analyzer=english", not the cell's \N{EQUALS SIGN} spelling
        except ValueError:
            kind = "expression"
        tail = lines[node.end_lineno - 1][node.end_col_offset:].strip()
        out[targets[0].id] = {"type": kind, "default": default, "help": tail.lstrip("#").strip()}
    return out


def _shown(value: Any) -> str:
    """A parameter's value as Python source, strings in double quotes (as the cells write them)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(map(_shown, value)) + "]"
    return repr(value)


def describe() -> list[dict[str, Any]]:
    """Every bundled notebook with its title (first heading) and parameters."""
    out = []
    for n in names():
        nb = json.loads(notebook_path(n).read_text(encoding="utf-8"))
        title = ""
        for cell in nb.get("cells", []):
            if cell.get("cell_type") == "markdown":
                text = "".join(cell.get("source", ""))
                title = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("#")), "")
                break
        out.append({"name": n, "title": title, "parameters": parameters(n)})
    return out


def execute(name: str | os.PathLike[str], output: str | os.PathLike[str], params: dict[str, Any] | None = None, *,
            cwd: str | os.PathLike[str] | None = None, timeout: float | None = None) -> Path:
    """Usage: ``execute("evaluate", "out/evaluate.ipynb", {"vault": "/v"})``; raises NotebookFailed on a cell error.

    Only parameters the notebook declares are accepted (anything else is a
    UsageError, not papermill's warning). Relative paths in ``params`` are
    the caller's business: pass absolute ones.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    source = notebook_path(name)
    declared = parameters(source)
    unknown = sorted(set(params or {}) - set(declared))
    if unknown:
        raise UsageError(f"notebook {source.stem} has no parameter {', '.join(unknown)}; "
                         f"it takes {', '.join(declared)}")
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    quiet = logging.getLogger("papermill")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # parameters are checked above; papermill's own check misreads "a=b" values
    try:
        papermill.execute_notebook(str(source), str(target), parameters=params or {}, progress_bar=False,
                                   cwd=str(cwd) if cwd else None, execution_timeout=timeout,
                                   kernel_manager_class=_current_env_kernel_manager())
    except PapermillExecutionError as exc:
        raise NotebookFailed(source.name, exc.cell_index, exc.ename, exc.evalue, target) from None
    finally:
        quiet.setLevel(level)
    return target


def notebook_params(name: str, context: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parameters an evaluation passes to one notebook: those it declares, from ``context`` then ``overrides``.

    ``context`` holds vault, queryset, k, cache and strategies (strategy
    strings). A notebook about one reranker (it declares ``reranked``) gets
    the first reranking strategy, when there is one.
    """
    declared = parameters(name)
    out = {k: v for k, v in context.items() if k in declared and v is not None}
    reranked = [s for s in map(str, context.get("strategies") or []) if _reranks(s)]
    if "reranked" in declared and reranked:
        out["reranked"] = reranked[0]
    out.update({k: v for k, v in (overrides or {}).items() if k in declared})
    return out


def run_for_eval(notebooks: list[str], run_dir: str | os.PathLike[str], context: dict[str, Any],
                 overrides: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Execute each notebook into ``run_dir/<name>.ipynb`` and record them in the run's manifest.

    Every override must be declared by at least one of the notebooks.
    """
    folder = Path(run_dir)
    check_overrides(notebooks, overrides)
    done = []
    for n in notebooks:
        params = notebook_params(n, context, overrides)
        path = execute(n, folder / f"{notebook_path(n).stem}.ipynb", params, cwd=folder)
        done.append({"name": n, "file": path.name, "parameters": params})
        _record(folder, done)
    return done


def check_overrides(notebooks: list[str], overrides: dict[str, Any] | None) -> None:
    """Raise UsageError for an override that none of ``notebooks`` declares."""
    declared = [parameters(n) for n in notebooks]
    stray = sorted(k for k in (overrides or {}) if not any(k in d for d in declared))
    if stray:
        raise UsageError(f"no chosen notebook takes parameter {', '.join(stray)}; "
                         f"see `vaulteval notebooks` for their parameters")


def _record(folder: Path, done: list[dict[str, Any]]) -> None:
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        return
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["notebooks"] = done
    manifest.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def refresh(notebooks: list[str] | None = None) -> list[Path]:
    """Re-execute bundled notebooks in place with their defaults and keep clean outputs (for nbval).

    Papermill's and nbclient's timing metadata is removed so a refresh that
    changes no number changes no byte of output.
    """
    import nbformat

    out = []
    for n in notebooks or names():
        path = notebook_path(n)
        execute(path, path, {}, cwd=path.parent)
        nb = nbformat.read(path, as_version=4)
        nb.metadata.pop("papermill", None)
        nb.metadata.pop("widgets", None)  # live widget state: new model ids on every run, useless once saved
        for cell in nb.cells:
            for key in VOLATILE_CELL_KEYS:
                cell.metadata.pop(key, None)
            if cell.metadata.get("tags") == []:
                del cell.metadata["tags"]
        nbformat.write(nb, path)
        out.append(path)
    return out


def _current_env_kernel_manager() -> type:
    """A kernel manager whose ``python3`` kernel is this interpreter (as nbval's --nbval-current-env)."""
    import ipykernel.kernelspec as ipk
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from traitlets import default

    class CurrentEnvSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str):  # type: ignore[override]
            return self.kernel_spec_class(resource_dir=ipk.RESOURCES, **ipk.get_kernel_dict())

    class CurrentEnvKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _default_specs(self) -> KernelSpecManager:
            return CurrentEnvSpecs(data_dir=self.data_dir)

        @default("transport_encryption")
        def _default_encryption(self) -> str:
            # CurveZMQ keys when available: note text stays private and the kernel does not warn about TCP.
            return "auto" if _curve_available() else "disabled"

    return CurrentEnvKernelManager


def _curve_available() -> bool:
    import zmq

    return bool(zmq.has("curve"))


def _reranks(text: str) -> bool:
    """True when the strategy string names a reranker (a string that does not parse names none)."""
    from vaulteval.errors import UsageError
    from vaulteval.workbench.strategy import Strategy

    try:
        return Strategy.parse(text).reranker is not None
    except UsageError:
        return False

