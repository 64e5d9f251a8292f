"""The judge notebook's grader: one pair at a time, buttons 0/1/2/skip, progress, saved as you go.

Usage::

    g = Grader(pool, queryset="sample", judge="ana", out="~/judged.yaml", passages=Passages(env))
    g                   # in JupyterLab: the widget (query, best passage with the query's terms marked,
                        # path and heading, an LLM pre-grade as a suggestion); elsewhere the same card as HTML
    g.grade(2)          # what the "2" button does: record, save atomically, go to the next ungraded pair
    g.save()            # refuses to write a query set with 0 judgments

Every grade is written at once to ``out`` (a new query set: the source plus the grades, through
``querysets.judging.save_labels``) by writing a temporary file beside it and renaming it over
``out``, so an interrupted save leaves the previous file whole. Opening a grader on an ``out`` that
exists resumes: its grades for the pool's pairs are read back and paging starts at the first
ungraded pair. All vault text is escaped before it is put into HTML.
"""

from __future__ import annotations

import os
import re
from html import escape
from pathlib import Path
from typing import Any

from vaulteval.errors import UsageError
from vaulteval.vault.paths import home_path

WORD = re.compile(r"\w+", re.UNICODE)
PASSAGE = 360


class Passages:
    """The best-matching passage of a page for a query, with its heading and the query's terms marked."""

    def __init__(self, env: Any):
        self.env = env
        self.pages: dict[str, list[int]] = {}
        for i, doc in enumerate(env.index.iter_docs()):
            self.pages.setdefault(doc.page_path, []).append(i)

    def terms(self, text: str) -> set[str]:
        """The analyzed terms of ``text`` that carry meaning (stopwords are neither marked nor matched)."""
        from vaulteval.workbench.misses import stop_terms

        return set(self.env.index.analyze(text)) - stop_terms(self.env.index)

    def best(self, query: str, page: str, fallback: str = "") -> tuple[str, str]:
        """(heading, passage) of the page's best chunk for ``query``; the pool's snippet when none is indexed."""
        index, checker = self.env.index, self.env.retriever.integrity()
        docs = [d for d in self.pages.get(page, []) if checker.current_record(index.doc(d)) is not None]
        if not docs:
            return "", fallback
        scores = index.score_tokens(index.analyze(query))
        doc = max(docs, key=lambda d: (scores[d], -d))
        text = (checker.current_record(index.doc(doc)) or {}).get("raw_text", "")
        wanted = self.terms(query)
        heading, best, best_hits, current = "", "", -1, ""
        for para in re.split(r"\n\s*\n", text):
            lines = [ln for ln in para.splitlines() if ln.strip()]
            if lines and lines[0].lstrip().startswith("#"):
                current = lines[0].lstrip("# ").strip()
                lines = lines[1:]
            body = " ".join(" ".join(lines).split())
            if not body:
                continue
            hits = len(self.terms(body) & wanted)
            if hits > best_hits:
                heading, best, best_hits = current, body, hits
        return heading, best[:PASSAGE] + ("…" if len(best) > PASSAGE else "")

    def marked(self, text: str, query: str) -> str:
        """``text`` as escaped HTML with every word whose analyzed form is a query term in ``<mark>``."""
        wanted, out, last = self.terms(query), [], 0
        for m in WORD.finditer(text):
            out.append(escape(text[last:m.start()]))
            word = escape(m.group())
            out.append(f"<mark>{word}</mark>" if wanted & self.terms(m.group()) else word)
            last = m.end()
        out.append(escape(text[last:]))
        return "".join(out)


def read_grades(out: str | os.PathLike[str], pairs: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """The grades an earlier session saved to ``out`` for these pairs (resume); {} when ``out`` does not exist."""
    from vaulteval.querysets.formats import load_yaml_file
    from vaulteval.querysets.problems import QuerySetInvalid

    path = home_path(out)
    if not path.is_file():
        return {}
    try:
        data = load_yaml_file(path) or {}
    except QuerySetInvalid as exc:
        raise UsageError(f"cannot resume from {exc}; choose another out") from None
    if not isinstance(data, dict):
        raise UsageError(f"cannot resume from {path}: it is not a query set; choose another out")
    wanted = {(p["query_id"], p["page"]) for p in pairs}
    found = {}
    for q in data.get("queries") or []:
        if not isinstance(q, dict) or not isinstance(q.get("relevant"), dict):
            continue
        for page, grade in q["relevant"].items():
            if (str(q.get("id")), page) in wanted and grade in (0, 1, 2):
                found[(str(q.get("id")), page)] = int(grade)
    return found


class Grader:
    """Pages through every pair of a pool; see the module docstring."""

    def __init__(self, pool: dict[str, Any], *, queryset: str, judge: str = "", out: str = "",
                 passages: Passages | None = None):
        self.pool, self.pairs = pool, list(pool["pairs"])
        self.queryset, self.judge, self.out = queryset, judge.strip(), out
        self.passages = passages
        self.grades: dict[tuple[str, str], int] = read_grades(out, self.pairs) if out else {}
        self.skipped: set[tuple[str, str]] = set()
        self.position = self.next_open(0)
        self.message = f"resumed {len(self.grades)} grades from {Path(out).name}" if self.grades else ""
        self._widgets: Any = None

    @staticmethod
    def key(pair: dict[str, Any]) -> tuple[str, str]:
        return pair["query_id"], pair["page"]

    def next_open(self, start: int) -> int:
        """The first pair at or after ``start`` with no grade (and not skipped), else ``start`` itself."""
        for i in list(range(start, len(self.pairs))) + list(range(0, start)):
            k = self.key(self.pairs[i])
            if k not in self.grades and k not in self.skipped:
                return i
        return min(start, max(len(self.pairs) - 1, 0))

    def progress(self) -> str:
        done = len(self.grades)
        return (f"{done} of {len(self.pairs)} pairs graded, {len(self.skipped)} skipped; "
                f"showing pair {self.position + 1 if self.pairs else 0} of {len(self.pairs)}"
                + self.pregrade_agreement())

    def pregrade_agreement(self) -> str:
        """How often the LLM's pre-grade matched the grade given, over the graded pairs that had one ("" if none):
        whether its suggestions deserve a glance."""
        both = [(p["llm_grade"], self.grades[self.key(p)]) for p in self.pairs
                if p.get("llm_grade") is not None and self.key(p) in self.grades]
        if not both:
            return ""
        same = sum(1 for suggested, given in both if suggested == given)
        return f"; the LLM pre-grade matched yours on {same} of {len(both)}"

    def grade(self, value: int | None) -> None:
        """Grade the current pair (None: skip it), save, and move to the next open pair."""
        if not self.pairs:
            return
        k = self.key(self.pairs[self.position])
        if value is None:
            self.skipped.add(k)
            self.grades.pop(k, None)
        elif value in (0, 1, 2):
            self.grades[k] = int(value)
            self.skipped.discard(k)
        else:
            raise UsageError(f"grade must be 0, 1 or 2, got {value!r}")
        self.message = self.save() if self.judge and self.out and self.grades else \
            "not saved: set judge and out in the parameters to save as you go" if value is not None else ""
        self.position = self.next_open(self.position)
        self._refresh()

    def go(self, step: int) -> None:
        if self.pairs:
            self.position = (self.position + step) % len(self.pairs)
            self._refresh()

    def save(self) -> str:
        """Write ``out`` atomically (temporary file, then rename); refuses 0 judgments. Returns a one-line note."""
        from vaulteval.notebooks.support import queryset_path
        from vaulteval.querysets.judging import save_labels

        if not self.grades:
            raise UsageError("no pair is graded yet: nothing to save (a query set with 0 judgments is not written)")
        if not self.judge or not self.out:
            raise UsageError("set judge (your name) and out (a new query set file outside the vault) to save")
        target = home_path(self.out).resolve()
        saved = save_labels(queryset_path(self.queryset), self.pool, self.grades, judge=self.judge, out=target)
        return f"saved {saved['judgments_added']} judgments by {saved['judge']} to {target.name}"

    # ------------------------------------------------------------------ display

    def card_html(self, index: int | None = None) -> str:
        """The pair at ``index`` (default: the current one) as HTML; every piece of vault text escaped."""
        if not self.pairs:
            return "<p>The pool has no unjudged pairs: every page the strategies returned is judged already.</p>"
        p = self.pairs[self.position if index is None else index]
        heading, passage = self.passages.best(p["query"], p["page"], p.get("snippet", "")) if self.passages \
            else ("", p.get("snippet", ""))
        body = self.passages.marked(passage, p["query"]) if self.passages else escape(passage)
        grade = self.grades.get(self.key(p))
        parts = [f'<div style="font-size:13px;color:#555">{escape(self.progress())}</div>',
                 f'<div style="font-size:16px;margin:6px 0"><b>{escape(p["query_id"])}</b>: {escape(p["query"])}</div>',
                 f'<div><code>{escape(p["page"])}</code>'
                 + (f' &rsaquo; <i>{escape(heading)}</i>' if heading else "")
                 + f' <span style="color:#777">(best rank {escape(str(p.get("best_rank", "")))} in '
                 f'{escape(", ".join(p.get("strategies", [])))})</span></div>',
                 f'<blockquote style="border-left:3px solid #ccc;margin:6px 0;padding:4px 10px">{body}</blockquote>']
        if p.get("llm_grade") is not None:
            reason = f": {escape(str(p['llm_reason']))}" if p.get("llm_reason") else ""
            model = f" by {escape(str(p['llm_model']))}" if p.get("llm_model") else ""
            parts.append(f'<div style="color:#555">LLM pre-grade{model} (a suggestion, not a judgment): '
                         f'<b>{escape(str(p["llm_grade"]))}</b>{reason}</div>')
        if grade is not None:
            parts.append(f"<div>your grade: <b>{grade}</b></div>")
        if self.message:
            parts.append(f'<div style="color:#176e2b">{escape(self.message)}</div>')
        return "".join(parts)

    def widget(self) -> Any:
        """The ipywidgets UI (None without ipywidgets): the card, buttons 0/1/2/skip, previous/next."""
        try:
            import ipywidgets as w
        except ImportError:
            return None
        if self._widgets is None:
            card = w.HTML(self.card_html())
            buttons = []
            for label, value, tip in (("0 not relevant", 0, "0"), ("1 partly", 1, "1"), ("2 answers it", 2, "2"),
                                      ("skip", None, "skip")):
                b = w.Button(description=label, tooltip=f"grade {tip}")
                b.on_click(lambda _b, v=value: self.grade(v))
                buttons.append(b)
            prev, nxt = w.Button(description="◀ previous"), w.Button(description="next ▶")
            prev.on_click(lambda _b: self.go(-1))
            nxt.on_click(lambda _b: self.go(1))
            self._widgets = (card, w.VBox([card, w.HBox(buttons), w.HBox([prev, nxt])]))
        return self._widgets[1]

    def _refresh(self) -> None:
        if self._widgets is not None:
            self._widgets[0].value = self.card_html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        ui = self.widget()
        bundle = dict(ui._repr_mimebundle_()) if ui is not None and hasattr(ui, "_repr_mimebundle_") else {}
        bundle["text/html"] = self.card_html()  # what a static page (nbconvert, GitHub) shows instead of the widget
        bundle["text/plain"] = self.progress()
        return bundle
