"""The headline of an evaluation: what was measured, on what, and whether a change helped, in a few lines.

Usage::

    h = headline_of_dir("runs/<id>")          # from report.json and manifest.json, as eval run wrote them
    h = headline_of(ev)                       # the same from an EvalRun in memory (through the same data)
    print(h.text())                           # eval run's stdout; a notebook shows h as HTML
    h.comparisons[0]["verdict"]               # "better", "worse" or "no detectable difference"

Every number comes from the report's data (``Report.to_data``, i.e. report.json) and the run's
manifest. The first two lines answer (``answer``): the best strategy with its mean, interval and gain
over the default, then how sure that is; the ranking follows, then the inputs, then one line per run
against the baseline on the first measure, each printed by ``procedure.comparison_line`` (one test's
interval, p, verdict, MDE and queries still needed). A run whose reranker fell back carries the
warning on its own line, not after the tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.workbench.procedure import comparison_line

if TYPE_CHECKING:
    from vaulteval.workbench.evaluate import EvalRun


@dataclass
class Headline:
    """What a reader needs first: the inputs (``context``) and one verdict per compared run."""

    context: list[str]
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)  # the best strategy, how sure, the ranking

    def comparison_line(self, c: dict[str, Any]) -> str:
        return comparison_line(c) + (f"  ⚠ {c['warning']}" if c.get("warning") else "")

    def lines(self) -> list[str]:
        out = [*self.warnings, *self.answer, *self.context]
        out += [self.comparison_line(c) for c in self.comparisons]
        return out

    def text(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        parts = [f'<div class="vaulteval-headline" style="border-left:4px solid #3b6ea5;padding:4px 12px;'
                 f'margin:4px 0;font-size:14px">']
        parts += [f'<p style="color:#a00;font-weight:bold;margin:2px 0">{escape(w)}</p>' for w in self.warnings]
        parts += [f'<p style="margin:2px 0;font-size:{16 if i == 0 else 14}px">{"<b>" if i < 2 else ""}{escape(a)}'
                  f'{"</b>" if i < 2 else ""}</p>' for i, a in enumerate(self.answer)]
        parts += [f'<p style="margin:2px 0">{escape(c)}</p>' for c in self.context]
        for c in self.comparisons:
            colour = {"better": "#176e2b", "worse": "#a00"}.get(c["verdict"], "#444")
            body = escape(self.comparison_line(c).split("  ⚠ ")[0])
            warn = (f' <span style="color:#a00;font-weight:bold">⚠ {escape(c["warning"])}</span>'
                    if c.get("warning") else "")
            parts.append(f'<p style="margin:2px 0;color:{colour}"><b>{body}</b>{warn}</p>')
        parts.append("</div>")
        return "".join(parts)


def _index_line(manifest: dict[str, Any]) -> str:
    vault = manifest.get("vault") or {}
    stale = int(vault.get("stale_pages") or 0)
    state = (f"STALE: {stale} page(s) changed since it was built" if stale else "current")
    own = [s["index"] for s in manifest.get("strategies", []) if (s.get("index") or {}).get("source") == "vault"]
    cache = [s for s in manifest.get("strategies", []) if (s.get("index") or {}).get("source") == "cache"]
    where = []
    if own:
        built = str(own[0].get("built_at") or "")[:10]
        where.append(f"the vault's own index ({state}, built {built or 'at an unknown date'})")
    if cache:
        where.append(f"{len(cache)} strateg{'y' if len(cache) == 1 else 'ies'} on indexes built in the "
                     "evaluation cache from the notes as they are now")
    return "index: " + ("; ".join(where) if where else state)


CANNOT_JUDGE = "CANNOT JUDGE SEMANTIC STRATEGIES"
SEMANTIC_CAVEAT = ("most of this set's queries share their page's words, which favours BM25: "
                   "judge real questions before trusting a dense, hybrid or rerank verdict")


def _semantic(strategy: Any) -> bool:
    """A manifest's strategy record that matches meaning: a dense or hybrid first stage, or a reranker."""
    if not isinstance(strategy, dict):
        return False
    from vaulteval.errors import UsageError
    from vaulteval.pipeline.stages import registry

    first = strategy.get("first") if isinstance(strategy.get("first"), dict) else {}
    try:
        semantic = registry.stage(str(first.get("stage"))).semantic  # as the stage declares it
    except UsageError:
        semantic = False
    return semantic or strategy.get("rerank") is not None


def vault_label(manifest: dict[str, Any]) -> str:
    """``the bundled sample vault`` or ``vault <folder name>``, from a run's manifest."""
    vault = manifest.get("vault") or {}
    return "the bundled sample vault" if vault.get("bundled") else f"vault {Path(str(vault.get('root', '?'))).name}"


def build(report: dict[str, Any], manifest: dict[str, Any]) -> Headline:
    """Usage: ``build(json.load(report.json), json.load(manifest.json))`` -> Headline."""
    vault, qs = manifest.get("vault") or {}, manifest.get("queryset") or {}
    name = vault_label(manifest)
    notes = vault.get("notes_dir")
    folder = f", notes in {notes}/" if notes else ", notes at the root"
    context = [f"{name}{folder}: {vault.get('pages', '?')} pages; {_index_line(manifest)}",
               f"query set {qs.get('name', '?')}: {qs.get('positive', '?')} judged queries "
               f"({qs.get('judgments', '?')} judgments), {qs.get('negative', '?')} negative queries"]
    warnings = [n for n in report.get("notes", []) if n.startswith("STALE INDEX")]
    # A generated set of mostly shared-word queries: the report says so once; every comparison with a
    # semantic strategy carries it on its own line, where a reader decides.
    cannot_judge = any(n.startswith(CANNOT_JUDGE) for n in report.get("notes", []))
    semantic = {s["name"] for s in manifest.get("strategies", []) if _semantic(s.get("strategy"))}
    fallback = {s["name"]: s["fallback"] for s in manifest.get("strategies", []) if s.get("fallback")}
    rows = report.get("tables", {}).get("summary", {}).get("rows", [])
    measures = (report.get("params") or {}).get("measures") or list(dict.fromkeys(r["measure"] for r in rows))
    first = measures[0] if measures else None
    comparisons = []
    for r in rows:
        if r.get("measure") != first or r.get("status") == "baseline":
            continue
        warning = None
        if r["run"] in fallback:
            warning = f"{fallback[r['run']]}: those queries kept BM25's order, so these numbers are partly BM25's"
            if str(r.get("status", "")).startswith("fallback"):
                warning = f"{fallback[r['run']]}: every query kept BM25's order; there is no reranker to judge"
        if cannot_judge and ({r["run"], report.get("baseline")} & semantic):
            warning = "; ".join(filter(None, [warning, SEMANTIC_CAVEAT]))
        if not r.get("verdict"):  # a full fallback has no comparison; a report of format 1 has no verdicts
            continue
        comparisons.append({**r, "baseline": report.get("baseline"), "warning": warning})
    if not comparisons:
        context.append(f"one strategy ({report.get('baseline')}): nothing to compare; add a second with --strategy")
    from vaulteval.workbench.answer import best_line, ranking_lines, sure_line

    answer = []
    if len({r["run"] for r in rows}) > 1:  # one strategy answers no "which is best"
        answer = [line for line in (best_line(report, f"{name} on {qs.get('name', '?')}"), sure_line(report)) if line]
        answer += ranking_lines(report) if answer else []
    return Headline(context, comparisons, warnings, answer)


def index_state(vault: Any) -> str:
    """The vault's own index in words: provisioned or not, current or stale, and when it was built (doctor)."""
    from vaulteval.pipeline.doctor import doctor

    rep = doctor(vault)
    if not rep.index_present:
        return "index: the vault is not provisioned; indexes are built in the evaluation cache (vault untouched)"
    built = str((rep.stats or {}).get("built_at") or "")[:10] or "at an unknown date"
    if not rep.index_readable:
        return f"index: UNREADABLE ({'; '.join(rep.problems)}); run {rep.rebuild}"
    if rep.stale_pages or rep.missing_pages or rep.unindexed_pages:
        return (f"index: STALE, built {built}: {rep.stale_pages} changed, {rep.missing_pages} deleted and "
                f"{rep.unindexed_pages} new page(s) since; run {rep.rebuild}")
    return f"index: current (every page as it is now), built {built}"


def inputs(vault: Any, queryset: Any) -> Headline:
    """Usage: ``inputs(v, qs)``: the headline of a notebook that compares nothing (vault, index, query set)."""
    s = queryset.summary()
    name = "the bundled sample vault" if vault.is_bundled else f"vault {vault.root.name}"
    folder = f"notes in {vault.notes_rel}/" if vault.notes_rel else "notes at the root"
    pages = sum(1 for _ in vault.iter_pages())
    return Headline([f"{name}, {folder}: {pages} pages; {index_state(vault)}",
                     f"query set {s['name']}: {s['positive']} judged queries ({s['judgments']} judgments), "
                     f"{s['negative']} negative queries"])


def headline_of_dir(run_dir: str | Path) -> Headline:
    """The headline of a run directory, from its report.json and manifest.json."""
    folder = Path(run_dir)
    return build(json.loads((folder / "report.json").read_text(encoding="utf-8")),
                 json.loads((folder / "manifest.json").read_text(encoding="utf-8")))


def headline_of(ev: "EvalRun") -> Headline:
    """The headline of an evaluation in memory, through the same JSON that report.json and manifest.json hold."""
    from vaulteval.workbench.manifest import build_manifest

    report = json.loads(json.dumps(ev.report.to_data(), ensure_ascii=False))
    return build(report, json.loads(json.dumps(build_manifest(ev, "notebook"), default=str)))
