"""What the notebooks show, read back from a run's own files: report.json, metrics.csv, tune.json.

Usage::

    report = report_data(ev)                      # report.json's content for an evaluation in memory
    with run_folder(out) as folder:               # ``out``, or a temporary folder removed afterwards
        result = tune(..., out=folder)
        files = read_tune_run(result.run_dir)     # tune.json, metrics.csv's overall rows, the headline,
        files["decided"]                          # tune.json's held-out means and the decision's comparison

A number shown in a notebook is a number in these files, so the notebook and ``eval verify`` agree.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from vaulteval.vault.paths import home_path

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.workbench.evaluate import EvalRun


def report_data(ev: "EvalRun") -> dict[str, Any]:
    """Exactly what report.json holds for ``ev`` (through JSON, so the notebook sees the stored values)."""
    return json.loads(json.dumps(ev.report.to_data(), ensure_ascii=False))


@contextmanager
def run_folder(out: str | os.PathLike[str] = "") -> Iterator[Path]:
    """``out`` (made if missing), or a temporary folder that is removed when the block ends."""
    if out:
        folder = home_path(out).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="vaulteval-notebook-") as temp:
        yield Path(temp)


def overall_metrics(run_dir: str | os.PathLike[str]) -> "pd.DataFrame":
    """metrics.csv's overall rows (``slice_by == "all"``): one value per (run, measure), no slice averaged in."""
    import pandas as pd

    metrics = pd.read_csv(Path(run_dir) / "metrics.csv")
    return metrics[metrics.slice_by == "all"].drop(columns=["slice_by", "slice"]).reset_index(drop=True)


def heldout_table(run_dir: str | os.PathLike[str], measures: list[str]) -> "pd.DataFrame":
    """The test split's means per run (rows) and measure (columns), from metrics.csv's overall rows."""
    rows = overall_metrics(run_dir)
    rows = rows[rows.measure.isin(measures)]
    wide = rows.pivot_table(index="run", columns="measure", values="value", sort=False)
    return wide.reindex(columns=[m for m in measures if m in set(rows.measure)]).reset_index().rename_axis(columns=None)


def read_tune_run(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """tune.json, the held-out table (metrics.csv) and the headline (report.json, manifest.json) of a tune run."""
    from vaulteval.workbench.headline import headline_of_dir

    from vaulteval.workbench.answer import tune_lines
    from vaulteval.workbench.headline import vault_label
    from vaulteval.workbench.verdict import verdict_line

    folder = Path(run_dir)
    tune = json.loads((folder / "tune.json").read_text(encoding="utf-8"))
    measure = tune["params"]["measure"]
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    headline = headline_of_dir(folder)
    # The first lines answer the tune run's question (the best strategy of the grid, held out), not the test run's.
    where = f"{vault_label(manifest)} on {(manifest.get('queryset') or {}).get('name', '?')}"
    headline.answer = tune_lines(tune, report, where)
    headline.context.append(verdict_line(tune["decision"], tune["best"], tune["baseline"]))  # `vaulteval tune`'s line
    return {"tune": tune, "heldout": heldout_table(folder, [measure, "R@100"]), "headline": headline,
            "report": report, "decided": decided_table(tune)}


def decided_table(tune: dict[str, Any]) -> "pd.DataFrame":
    """tune.json's held-out means and the decision's comparison: default and best on the test split."""
    import pandas as pd

    d = tune["decision"]
    comp = d.get("comparison") or {}
    rows = [{"strategy": tune["baseline"], "role": "default", f"{d['measure']} (held out)": d.get("default_mean"),
             "Δ vs default [interval]": None, "verdict": "—"}]
    if tune["best"] != tune["baseline"]:
        low, high = comp.get("delta_ci_low"), comp.get("delta_ci_high")
        rows.append({"strategy": tune["best"], "role": "best on the tune split",
                     f"{d['measure']} (held out)": d.get("best_mean"),
                     "Δ vs default [interval]": f"{d['delta']:+.3f} [{low:+.3f}, {high:+.3f}]"
                     if low is not None and high is not None else None, "verdict": comp.get("verdict", "—")})
    return pd.DataFrame(rows)
