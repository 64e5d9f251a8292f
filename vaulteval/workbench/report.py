"""A comparison report: named tables that show themselves in notebooks, Markdown, HTML or files.

Usage::

    report = vaulteval.compare(qs, runs)  # see vaulteval.workbench.api and .compare
    report                                # a notebook renders _repr_html_: mean [95% CI], delta [CI], p, verdict
    print(report)                         # the same overview as text
    report.overview()                     # that overview as a DataFrame (strings, for people)
    print(report.to_markdown()); report.save("runs/x/report.md")
    report.save("runs/x/")                # a folder: report.json + report.md, as eval run writes them

Markdown tables are written here (no tabulate dependency).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

# Section title for each table, in display order.
SECTIONS = {
    "summary": "Measures vs baseline",
    "rerank": "Rerank impact (pages rescued and lost vs the BM25 order of the same pool)",
    "pool": "Candidate pool recall (ceiling of any reranker)",
    "negatives": "Negative queries (nothing relevant in the vault)",
    "latency": "Latency per query (ms)",
}
# Sections that measure this machine, not the ranking: kept out of a run directory's report.json and
# report.md, so those are the same bytes on every re-run and every executor (latencies stay in queries.csv).
TIMED = ("latency",)
REPORT_DATA, REPORT_TEXT = "report.json", "report.md"


def _cell(value: Any, digits: int) -> str:
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return _cell(value.item(), digits)
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: "pd.DataFrame", digits: int = 4) -> str:
    """Usage: ``markdown_table(df)`` -> a GitHub-flavoured Markdown table (numbers right-aligned)."""
    import pandas as pd

    if df.empty:
        return "_(none)_"
    cols = [str(c) for c in df.columns]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in df.columns]
    rows = [[_cell(v, digits) for v in row] for row in df.itertuples(index=False)]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)) + " |"

    rule = "| " + " | ".join(("-" * (w - 1) + ":") if num else "-" * w for w, num in zip(widths, numeric)) + " |"
    return "\n".join([line(cols), rule] + [line(r) for r in rows])


def interval_table(metrics: "pd.DataFrame", digits: int = 4) -> "pd.DataFrame":
    """Usage: ``interval_table(ev.metrics)`` -> run x measure cells ``0.6654 [0.5517, 0.7717]`` (95% bootstrap)."""
    def cell(row: Any) -> str:
        value = _cell(row.value, digits)
        lo, hi = getattr(row, "ci_low", None), getattr(row, "ci_high", None)
        if lo is None or hi is None or (isinstance(lo, float) and math.isnan(lo)):
            return value
        return f"{value} [{_cell(float(lo), digits)}, {_cell(float(hi), digits)}]"

    shown = metrics.assign(shown=[cell(r) for r in metrics.itertuples(index=False)])
    return shown.pivot_table(index="run", columns="measure", values="shown", aggfunc="first",
                             sort=False).reset_index().rename_axis(columns=None)


@dataclass
class Report:
    """Tables keyed by section (see SECTIONS) plus per-query deltas; ``notes`` are shown first."""

    tables: dict[str, "pd.DataFrame"]
    per_query: "pd.DataFrame"
    baseline: str
    notes: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, section: str) -> "pd.DataFrame":
        return self.tables[section]

    def to_dataframe(self) -> "pd.DataFrame":
        """The summary table: one row per (run, measure)."""
        return self.tables["summary"]

    def verdict_lines(self) -> list[str]:
        """One ``procedure.comparison_line`` per run and measure against the baseline (none in a format 1 report)."""
        from vaulteval.workbench.procedure import comparison_line

        summary = self.tables.get("summary")
        if summary is None or "verdict" not in summary.columns:
            return []
        rows = [r for r in summary.to_dict("records") if isinstance(r.get("verdict"), str)]
        return [comparison_line({**r, "baseline": self.baseline}) for r in rows]

    def to_markdown(self) -> str:
        parts = [f"# Comparison against `{self.baseline}`", ""]
        parts += [f"> {n}" for n in self.notes] + ([""] if self.notes else [])
        verdicts = self.verdict_lines()
        if verdicts:
            parts += ["## Verdicts", "", str(self.params.get("procedure", "")), ""]
            parts += [f"- {line}" for line in verdicts] + [""]
        for key, title in SECTIONS.items():
            table = self.tables.get(key)
            if table is not None and not table.empty:
                parts += [f"## {title}", "", markdown_table(table), ""]
        return "\n".join(parts)

    def overview(self, digits: int = 4) -> "pd.DataFrame":
        """One row per (run, measure): ``mean [95% CI]``, ``delta [CI]`` against the baseline with the p and the
        verdict of the same test (``procedure``), the minimum detectable effect and the status. Text, for people."""
        import pandas as pd

        def interval(value: Any, low: Any, high: Any, sign: bool = False) -> str:
            shown = _cell(value, digits)
            if shown and sign and float(value) >= 0:
                shown = "+" + shown
            lo, hi = _cell(low, digits), _cell(high, digits)
            return f"{shown} [{lo}, {hi}]" if shown and lo and hi else shown

        rows = [{"run": r.get("run"), "measure": r.get("measure"),
                 "mean [95% CI]": interval(r.get("value"), r.get("ci_low"), r.get("ci_high")),
                 "delta [CI]": interval(r.get("delta"), r.get("delta_ci_low"), r.get("delta_ci_high"), sign=True),
                 "p": _cell(r.get("p"), digits), "verdict": _cell(r.get("verdict"), digits),
                 "MDE": _cell(r.get("mde"), digits), "status": _cell(r.get("status"), digits)}
                for r in self.tables["summary"].to_dict("records")]
        return pd.DataFrame(rows, columns=["run", "measure", "mean [95% CI]", "delta [CI]", "p", "verdict", "MDE",
                                           "status"])

    def _shown(self) -> list[tuple[str, "pd.DataFrame"]]:
        """What a notebook or a terminal shows: the overview, then every other non-empty section."""
        out = [("Measures vs baseline: mean [95% CI], paired delta [its test's interval], p, verdict, minimum "
                "detectable effect", self.overview())]
        return out + [(title, self.tables[key]) for key, title in SECTIONS.items()
                      if key != "summary" and self.tables.get(key) is not None and not self.tables[key].empty]

    def _repr_html_(self) -> str:
        from html import escape

        html = [f"<h3>Comparison against <code>{escape(self.baseline)}</code></h3>"]
        html += [f"<p><b>{escape(n)}</b></p>" for n in self.notes]
        html += [f"<p>{escape(line)}</p>" for line in self.verdict_lines()]
        for title, table in self._shown():
            html += [f"<h4>{escape(title)}</h4>",
                     table.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4f}")]
        return "\n".join(html)

    def __repr__(self) -> str:
        parts = [f"Comparison against {self.baseline}"] + [f"> {n}" for n in self.notes] + self.verdict_lines()
        for title, table in self._shown():
            parts += ["", title, markdown_table(table)]
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out = {k: json.loads(v.to_json(orient="records")) for k, v in self.tables.items()}
        return {"baseline": self.baseline, "notes": self.notes, "params": self.params, "tables": out,
                "per_query": json.loads(self.per_query.to_json(orient="records"))}

    def to_data(self) -> dict[str, Any]:
        """Every number in the report as plain JSON, with each column's dtype so ``from_data`` renders it alike.

        Usage: ``Report.from_data(json.loads(json.dumps(report.to_data()))).to_markdown()``.
        """
        def table(df: "pd.DataFrame") -> dict[str, Any]:
            return {"columns": [str(c) for c in df.columns], "dtypes": {str(c): str(t) for c, t in df.dtypes.items()},
                    "rows": json.loads(df.to_json(orient="records", double_precision=15))}

        return {"baseline": self.baseline, "notes": list(self.notes), "params": self.params,
                "tables": {k: table(v) for k, v in self.tables.items()}, "per_query": table(self.per_query)}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "Report":
        """The report that ``to_data`` stored (raises ValueError when ``data`` is not such a dict)."""
        import pandas as pd

        def frame(spec: Any) -> "pd.DataFrame":
            if not isinstance(spec, dict) or not isinstance(spec.get("rows"), list) \
                    or not isinstance(spec.get("columns"), list) or not isinstance(spec.get("dtypes"), dict):
                raise ValueError("a report table needs columns, dtypes and rows")
            df = pd.DataFrame(spec["rows"], columns=spec["columns"])
            for col, dtype in spec["dtypes"].items():
                if col in df.columns:
                    df[col] = df[col].astype(dtype)
            return df

        if not isinstance(data, dict) or not isinstance(data.get("tables"), dict) \
                or not isinstance(data.get("baseline"), str) or not isinstance(data.get("notes"), list):
            raise ValueError("report data needs baseline, notes and tables")
        try:
            return cls(tables={str(k): frame(v) for k, v in data["tables"].items()},
                       per_query=frame(data.get("per_query")), baseline=data["baseline"],
                       notes=[str(n) for n in data["notes"]], params=data.get("params") or {})
        except (TypeError, KeyError) as exc:
            raise ValueError(f"report data is malformed: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Usage: ``report.save("report.md")``; the format follows the extension: .md, .html, .json, .csv.

        A path without an extension (or an existing folder) is a run directory: ``save_dir``.
        """
        target = Path(path)
        suffix = target.suffix.lower()
        if target.is_dir() or not suffix:
            return self.save_dir(target)
        if suffix == ".md":
            target.write_text(self.to_markdown() + "\n", encoding="utf-8")
        elif suffix in (".html", ".htm"):
            target.write_text(self._repr_html_(), encoding="utf-8")
        elif suffix == ".json":
            target.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
        elif suffix == ".csv":
            self.to_dataframe().to_csv(target, index=False)
        else:
            from vaulteval.errors import UsageError

            raise UsageError(f"cannot save a report as {target.name}; use .md, .html, .json, .csv or a folder")
        return target

    def save_dir(self, folder: str | os.PathLike[str]) -> Path:
        """``folder/report.json`` (every number, as data) and ``folder/report.md`` rendered from it, as in a
        run directory; machine timings (TIMED) are left out so re-runs give the same bytes. Returns the folder."""
        target = Path(folder)
        if target.exists() and not target.is_dir():
            from vaulteval.errors import UsageError

            raise UsageError(f"{target} is a file, not a folder; save the report to a folder or a .md/.json path")
        target.mkdir(parents=True, exist_ok=True)
        data = json.loads(json.dumps(self.to_data(), ensure_ascii=False))
        for key in TIMED:
            data["tables"].pop(key, None)
        (target / REPORT_DATA).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        # report.md is rendered from report.json, so every number it shows is stored as data and verifiable.
        Report.from_data(data).save(target / REPORT_TEXT)
        return target
