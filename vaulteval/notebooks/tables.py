"""Tables a person reads: pandas' Styler, 3 decimals, integers as integers, no index, "—" with a footnote.

Usage::

    show(df, caption="Measures per run")            # a Table: a notebook renders it as HTML, print() as text
    show(df, notes={"—": "no baseline to compare"})  # the footnote for empty cells says why they are empty
    delta_cell(0.012, -0.01, 0.03)                  # "+0.012 [-0.010, +0.030]"
    comparison(report_data)                         # report.json's summary as one tidy table

Why the Styler and not a table widget: it renders to static HTML, so the same table shows in
JupyterLab, in nbconvert's HTML, on GitHub and in nbval's stored output (a widget needs a live
kernel and stores no readable output). The Styler's element ids are fixed (``set_uuid``) so a
re-run stores the same bytes; the plain-text form nbval also compares is ``to_string``.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

DASH = "—"
DIGITS = 3
# Columns that name a run or a strategy: never wrapped ("bm25-\nenglish" reads as two names).
NOWRAP = ("run", "strategy", "baseline", "measure", "cause", "slice", "slice_by", "key", "tag", "change")


def _missing(value: Any) -> bool:
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _integral(series: "pd.Series") -> bool:
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    if pd.api.types.is_integer_dtype(series):
        return True
    values = series.dropna()
    return len(values) > 0 and bool(((values - values.round()).abs() < 1e-9).all()) and values.abs().max() >= 1


def formatters(df: "pd.DataFrame", digits: int = DIGITS) -> dict[str, Any]:
    """One formatter per column: integers as integers, other numbers with ``digits`` decimals, "—" for nothing."""
    import pandas as pd

    out = {}
    for col in df.columns:
        series = df[col]
        if _integral(series):
            out[col] = lambda v: DASH if _missing(v) else f"{int(round(float(v)))}"
        elif pd.api.types.is_float_dtype(series):
            out[col] = lambda v, d=digits: DASH if _missing(v) else f"{float(v):.{d}f}"
        else:
            out[col] = lambda v: DASH if _missing(v) else ("yes" if v is True else "no" if v is False else str(v))
    return out


class Table:
    """A DataFrame shown for reading; ``.data`` is the frame itself (tests read it, not the HTML)."""

    def __init__(self, data: "pd.DataFrame", caption: str = "", notes: dict[str, str] | None = None,
                 name: str = "table", digits: int = DIGITS):
        self.data = data.reset_index(drop=True)
        self.caption, self.name, self.digits = caption, re.sub(r"\W+", "-", name), digits
        self.notes = dict(notes or {})

    def _has_missing(self) -> bool:
        return bool(self.data.map(_missing).to_numpy().any()) if len(self.data.columns) else False

    def footnotes(self) -> list[str]:
        """The footnotes shown under the table: why a cell is "—", then any other note."""
        out = []
        if self._has_missing() and DASH not in self.notes:
            out.append(f"{DASH}: no value (not measured or not applicable)")
        out += [f"{mark}: {text}" for mark, text in self.notes.items() if mark != DASH or self._has_missing()]
        return out

    def text(self) -> str:
        fmt = formatters(self.data, self.digits)
        shown = self.data.copy()
        for col in shown.columns:
            shown[col] = [fmt[col](v) for v in shown[col]]
        body = shown.to_string(index=False) if len(shown) else "(no rows)"
        head = [self.caption] if self.caption else []
        return "\n".join([*head, body, *self.footnotes()])

    def __repr__(self) -> str:
        return self.text()

    def styler(self) -> Any:
        import pandas as pd

        data = self.data
        styler = data.style.format(formatters(data, self.digits)).hide(axis="index").set_uuid(self.name)
        text_cols = [c for c in data.columns if not pd.api.types.is_numeric_dtype(data[c])]
        nowrap = [c for c in data.columns if str(c) in NOWRAP or str(c).split(" ")[0] in NOWRAP]
        styles = [{"selector": "", "props": "border-collapse:collapse;font-size:13px;margin:4px 0;"},
                  {"selector": "th", "props": "text-align:left;padding:3px 8px;border-bottom:1px solid #999;"},
                  {"selector": "td", "props": "padding:3px 8px;border-bottom:1px solid #e4e4e4;"},
                  {"selector": "caption", "props": "caption-side:top;text-align:left;font-weight:bold;"}]
        styler = styler.set_table_styles(styles)
        if text_cols:
            styler = styler.set_properties(subset=text_cols, **{"text-align": "left"})
        numeric = [c for c in data.columns if c not in text_cols]
        if numeric:
            styler = styler.set_properties(subset=numeric, **{"text-align": "right"})
        if nowrap:
            styler = styler.set_properties(subset=nowrap, **{"white-space": "nowrap"})
        prose = [c for c in text_cols if c not in nowrap]
        if prose:  # long text (queries, snippets) wraps inside its column so the table fits the page
            styler = styler.set_properties(subset=prose, **{"max-width": "22em", "white-space": "normal",
                                                            "overflow-wrap": "anywhere"})
        if self.caption:
            styler = styler.set_caption(self.caption)
        return styler

    def _repr_html_(self) -> str:
        from html import escape

        html = self.styler().to_html()
        notes = "".join(f'<div style="font-size:12px;color:#555">{escape(n)}</div>' for n in self.footnotes())
        return f'<div class="vaulteval-table">{html}{notes}</div>'


def show(df: "pd.DataFrame", caption: str = "", notes: dict[str, str] | None = None, name: str | None = None,
         digits: int = DIGITS) -> Table:
    """Usage: ``show(df, "Misses per cause")`` -> a Table for the notebook (see the module docstring)."""
    return Table(df, caption, notes, name or caption or "table", digits)


def _signed(value: float, digits: int = DIGITS) -> str:
    return f"{value:+.{digits}f}"


def delta_cell(delta: Any, low: Any, high: Any, digits: int = DIGITS) -> Any:
    """``+0.012 [-0.010, +0.030]``; None when there is no difference."""
    if _missing(delta):
        return None
    body = _signed(float(delta), digits)
    if not _missing(low) and not _missing(high):
        body += f" [{_signed(float(low), digits)}, {_signed(float(high), digits)}]"
    return body


def mean_cell(value: Any, low: Any, high: Any, digits: int = DIGITS) -> Any:
    """``0.900 [0.845, 0.944]``; None when there is no value."""
    if _missing(value):
        return None
    if _missing(low) or _missing(high):
        return f"{float(value):.{digits}f}"
    return f"{float(value):.{digits}f} [{float(low):.{digits}f}, {float(high):.{digits}f}]"


def comparison(report: dict[str, Any], measures: list[str] | None = None) -> Table:
    """report.json's summary: run, measure, mean [95% CI], then against the baseline one test's Δ [interval], p and
    verdict (``procedure``), the MDE and the queries still needed (only while undecided), W/T/L, status."""
    import pandas as pd

    from vaulteval.workbench.procedure import p_text

    rows = []
    for r in report["tables"]["summary"]["rows"]:
        if measures and r["measure"] not in measures:
            continue
        wtl = None if _missing(r.get("wins")) else f"{int(r['wins'])}/{int(r['ties'])}/{int(r['losses'])}"
        more = r.get("more_queries")
        rows.append({"run": r["run"], "measure": r["measure"],
                     "mean [95% CI]": mean_cell(r.get("value"), r.get("ci_low"), r.get("ci_high")),
                     "Δ vs baseline [interval]": delta_cell(r.get("delta"), r.get("delta_ci_low"), r.get("delta_ci_high")),
                     "p": None if _missing(r.get("p")) else p_text(r["p"]), "verdict": r.get("verdict"),
                     "MDE": r.get("mde"), "needs": None if _missing(more) else
                     (f"over {int(more) - 1:,}" if int(more) > 100_000 else f"{int(more)} more"),
                     "wins/ties/losses": wtl, "status": r.get("status")})
    df = pd.DataFrame(rows, columns=["run", "measure", "mean [95% CI]", "Δ vs baseline [interval]", "p", "verdict",
                                     "MDE", "needs", "wins/ties/losses", "status"])
    m = max([int(r.get("comparisons") or 1) for r in report["tables"]["summary"]["rows"]] or [1])
    level = f"{100 * (1 - 0.05 / m):.4g}%"
    return show(df, f"Against the baseline {report['baseline']}", name="comparison",
                notes={DASH: "nothing to compare (the baseline row), or already detected (MDE, needs)",
                       "[interval]": f"the paired t-test's {level} interval" + (f", Bonferroni over {m} runs; p is "
                                                                               f"multiplied by {m}" if m > 1 else "")})
