"""Evaluate strategies on a query set and keep everything needed to reproduce the numbers.

``evaluate`` is ``vaulteval.run`` then ``vaulteval.compare`` (``workbench.api``) plus
the tables a run directory keeps. Usage::

    ev = evaluate(queryset, ["bm25", "bm25:analyzer=english"], measures=["nDCG@10", "RR"], k=10)  # qs.vault
    ev = evaluate(vault, queryset, ["bm25"])  # the same with the vault named (it must be the set's)
    ev.metrics            # run, measure, value, n, ci_low, ci_high   (IR measures, pool recall, negatives)
    ev.report             # compare() against the first strategy
    ev.save("runs/")      # runs/<id>/ with metrics.csv, per_query.csv, misses.csv, *.trec, manifest.json

``evaluate`` never writes the vault: strategies whose chunking or analyzer
differ from the vault's index are built in the evaluation cache
(``vaulteval.workbench.workspace``). The notebooks call ``evaluate`` and then
``EvalRun.save`` and add their executed notebook to the directory.
"""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import NotProvisioned, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench.report import Report
    from vaulteval.workbench.runs import Run
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.workspace import Workspace


class StaleIndex(NotProvisioned):
    """The vault's index does not hold the notes as they are now; the evaluation would measure old text."""


@dataclass
class StaleCount:
    """Pages the vault's own index does not hold as they are now, and how many of them the query set judges."""

    pages: int = 0
    judged: int = 0
    paths: frozenset[str] = frozenset()

    def judged_by(self, queryset: "QuerySet") -> "StaleCount":
        """The same stale pages, counted against another query set's judgments (a split of the checked one)."""
        return StaleCount(self.pages, len(self.paths & {page for q in queryset for page in q.relevant}), self.paths)

    def note(self) -> str:
        """The warning shown first on stdout and in the report when ``--allow-stale`` ran on such an index."""
        return (f"STALE INDEX: {self.pages} page(s) changed, were added or deleted since the vault's index was "
                f"built ({self.judged} judged by the query set); these numbers measure the old index "
                "(--allow-stale); run `vaulteval provision` and evaluate again")


@dataclass
class EvalRun:
    """The runs of one evaluation and every table derived from them."""

    vault: "Vault"
    queryset: "QuerySet"
    strategies: list["Strategy"]
    runs: list["Run"]
    measures: list[str]
    k: int
    metrics: "pd.DataFrame"
    per_query: "pd.DataFrame"
    misses: "pd.DataFrame"
    negatives: "pd.DataFrame"
    abstention: "pd.DataFrame"
    slices: "pd.DataFrame"
    report: "Report"
    workspace: "Workspace"
    started_at: str = ""
    finished_at: str = ""
    seconds: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    executor: dict[str, Any] = field(default_factory=lambda: {"kind": "serial"})
    stale: StaleCount = field(default_factory=StaleCount)

    def run(self, name: str) -> "Run":
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(name)

    def per_query_wide(self) -> "pd.DataFrame":
        """One row per (run, query): negative flag, results returned, top score, then one column per measure."""
        import pandas as pd

        wide = self.per_query.pivot_table(index=["run", "query_id"], columns="measure", values="value",
                                          sort=False).reset_index()
        wide = wide.reindex(columns=["run", "query_id", *self.measures])
        counts = pd.concat([r.df.groupby("query_id").agg(n_returned=("doc_id", "size"), top_score=("score", "max"))
                            .reset_index().assign(run=r.name) for r in self.runs])
        base = pd.DataFrame([(r.name, q.query_id, q.is_negative) for r in self.runs for q in self.queryset],
                            columns=["run", "query_id", "negative"])
        out = base.merge(counts, on=["run", "query_id"], how="left").merge(wide, on=["run", "query_id"], how="left")
        out["n_returned"] = out.n_returned.fillna(0).astype(int)
        return out

    def metrics_long(self) -> "pd.DataFrame":
        """metrics.csv: the overall rows (slice_by = slice = "all") followed by every slice's rows."""
        import pandas as pd

        overall = self.metrics.assign(slice_by="all", slice="all")
        return pd.concat([overall, self.slices], ignore_index=True) if len(self.slices) else overall

    def save(self, out: str | os.PathLike[str], run_id: str | None = None) -> Path:
        """Usage: ``ev.save("runs/")`` -> ``runs/<id>/``; see ``vaulteval.workbench.manifest.write_run_dir``."""
        from vaulteval.workbench.manifest import write_run_dir

        return write_run_dir(self, Path(out), run_id)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def evaluate(vault: "Vault | QuerySet", queryset: "QuerySet | list[Strategy | str]",
             strategies: "list[Strategy | str] | None" = None, *,
             measures: list[Any] | str | None = None, k: int = 10, baseline: str | None = None,
             cache_dir: str | os.PathLike[str] | None = None, use_vault_index: bool = True, seed: int = 0,
             progress: bool = False, allow_remote_ollama: bool = False, condensed: bool = False,
             scheduler: str | None = None, allow_remote_workers: bool = False,
             shards: int | None = None, executor: Any = None, allow_stale: bool = False,
             workspace: "Workspace | None" = None, checked: StaleCount | None = None) -> "EvalRun":
    """Run every strategy, then measures, misses, negatives and a comparison against ``baseline``.

    A strategy that runs on the vault's own index first checks it holds every page as it is now;
    otherwise :class:`StaleIndex` (exit 10, naming ``provision``), or with ``allow_stale`` the run goes
    on and ``EvalRun.stale`` counts the pages (shown in the report and recorded in the manifest).

    ``scheduler`` (``"local:2"``, ``"tcp://127.0.0.1:8786"``) runs the strategies as Dask tasks
    (``vaulteval.workbench.executor``); the result is the same as without it. An open
    ``executor`` (from ``make_executor``) is used as given and left open.
    ``evaluate(qs, strategies)`` runs on the query set's own vault (``qs.vault``).
    ``workspace`` (of the same vault) is used instead of a new one, and ``checked`` is the staleness
    ``require_current`` already found on it: ``tune`` confirms on the index its search ran on without
    hashing every note a second time.
    """
    import pandas as pd

    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench import measures as M
    from vaulteval.workbench.api import parse_strategies, run, vault_of
    from vaulteval.workbench.compare import compare
    from vaulteval.workbench.executor import make_executor
    from vaulteval.workbench.misses import find_misses
    from vaulteval.workbench.workspace import Workspace

    if isinstance(vault, QuerySet):  # evaluate(qs, strategies): the set knows its vault
        if strategies is not None:
            raise UsageError("evaluate(queryset, strategies) or evaluate(vault, queryset, strategies), not both")
        vault, queryset, strategies = None, vault, queryset
    vault = vault_of(queryset, vault)  # the set's own vault; another one is refused before any work
    if strategies is None:
        raise UsageError("name at least one strategy, e.g. evaluate(qs, [\"bm25\"])")
    if not 1 <= k <= 1000:
        raise UsageError(f"--k must be from 1 to 1000, got {k}")
    parsed = parse_strategies(strategies, allow_remote_ollama, vault)
    ms = [str(m) for m in M.parse_measures(measures, k)]
    started, t0 = _now(), time.perf_counter()
    # Connect first: an unreachable scheduler fails before any page is read.
    with (nullcontext(executor) if executor is not None
          else make_executor(scheduler, allow_remote_workers=allow_remote_workers, progress=progress)) as ex:
        ws = workspace or Workspace(vault, cache_dir, use_vault_index=use_vault_index)
        if checked is None:
            stale = require_current(ws, parsed, queryset, allow_stale=allow_stale)
        else:
            stale = checked.judged_by(queryset)
        made = run(queryset, parsed, vault=vault, workspace=ws, allow_remote_ollama=allow_remote_ollama,
                   shards=shards, executor=ex)
    runs, executor = list(made), made.executor
    per_query = pd.concat([M.per_query(r, queryset, ms) for r in runs], ignore_index=True)
    negatives = pd.concat([M.negatives(r, queryset) for r in runs], ignore_index=True)
    from vaulteval.workbench.abstention import COLUMNS, abstention_curve

    curves = [abstention_curve(r, queryset, k) for r in runs]
    abstention = pd.concat([c for c in curves if len(c)], ignore_index=True) if any(len(c) for c in curves) \
        else pd.DataFrame(columns=COLUMNS)
    metrics = _metrics_table(runs, queryset, per_query, negatives, seed, k, abstention)
    if condensed:  # the same measures on condensed lists: unjudged pages removed before scoring
        pq_c = pd.concat([M.per_query(M.condensed(r, queryset), queryset, ms) for r in runs], ignore_index=True)
        rows = M.with_intervals(M.aggregate(pq_c), pq_c, seed=seed)
        metrics = pd.concat([metrics, rows.assign(measure="condensed:" + rows.measure)], ignore_index=True)
    misses = pd.concat([find_misses(r, queryset, k) for r in runs], ignore_index=True)
    from vaulteval.workbench.slices import slice_metrics

    slices = slice_metrics(per_query, queryset, seed=seed)
    report = compare(runs, queryset, ms, baseline=baseline, k=k, seed=seed, per_query_df=per_query)
    report.params["stale_pages"] = stale.pages
    if stale.pages:
        report.notes.insert(0, stale.note())
    return EvalRun(vault=vault, queryset=queryset, strategies=parsed, runs=runs, measures=ms, k=k,
                   metrics=metrics, per_query=per_query, misses=misses, negatives=negatives, abstention=abstention,
                   slices=slices, report=report,
                   workspace=ws, started_at=started, finished_at=_now(), seconds=time.perf_counter() - t0,
                   params={"k": k, "measures": ms, "baseline": report.baseline, "seed": seed,
                           "use_vault_index": use_vault_index, "condensed": condensed, "allow_stale": allow_stale},
                   executor=executor, stale=stale)


def require_current(ws: "Workspace", strategies: "list[Strategy]", queryset: "QuerySet", *,
                    allow_stale: bool = False, what: str = "the evaluation") -> StaleCount:
    """``index_staleness``, raising :class:`StaleIndex` (exit 10, one line naming provision and
    ``--allow-stale``) when the vault's own index is stale and ``allow_stale`` is not given."""
    stale = index_staleness(ws, strategies, queryset)
    if stale.pages and not allow_stale:
        raise StaleIndex(f"the vault's index is stale: {stale.pages} page(s) changed, were added or deleted "
                         f"since it was built ({stale.judged} judged by the query set), so {what} "
                         "would measure old text; run provision, or pass --allow-stale to measure it anyway",
                         rebuild=ws.vault.rebuild_command())
    return stale


def index_staleness(ws: "Workspace", strategies: "list[Strategy]", queryset: "QuerySet") -> StaleCount:
    """Usage: ``index_staleness(ws, parsed, qs)``: doctor's page checks on the vault's own index, when a
    strategy runs on it (cache builds are made from the current notes)."""
    from vaulteval.pipeline.doctor import stale_pages

    if not any(ws.uses_vault_index(s) for s in strategies):
        return StaleCount()
    pages = frozenset(stale_pages(ws.vault, ws.own))
    return StaleCount(len(pages), 0, pages).judged_by(queryset)


def _abstention_rows(name: str, abstention: "pd.DataFrame | None", negatives: int) -> list[tuple]:
    """The suggested --min-score (false positives <= 10%) and the recall it keeps, when the set has negatives."""
    from vaulteval.workbench.abstention import MAX_FP, suggest

    if abstention is None or abstention.empty or name not in set(abstention.run):
        return []
    best = suggest(abstention[abstention.run == name])
    if best is None:
        return []
    return [(name, f"abstain_min_score@fp{MAX_FP:.2f}", best[0], negatives),
            (name, f"abstain_recall_kept@fp{MAX_FP:.2f}", best[1], negatives)]


def _metrics_table(runs: list["Run"], queryset: "QuerySet", per_query: "pd.DataFrame",
                   negatives: "pd.DataFrame", seed: int = 0, k: int = 10,
                   abstention: "pd.DataFrame | None" = None) -> "pd.DataFrame":
    """Long table: IR measures (mean over positive queries, 95% bootstrap interval), pool recall, negatives."""
    import pandas as pd

    from vaulteval.workbench import measures as M

    agg = M.with_intervals(M.aggregate(per_query), per_query, seed=seed)
    extra = []
    neg = M.negatives_summary(negatives).set_index("run") if len(negatives) else None
    for r in runs:
        if r.strategy is not None:
            extra.append((r.name, f"pool_recall@{r.strategy.bm25_top}", M.pool_recall(r, queryset),
                          len(queryset.positive)))
        extra.append((r.name, f"Judged@{k}", M.judged_at(r, queryset, k), len(queryset.positive)))
        if neg is not None and r.name in neg.index:
            row = neg.loc[r.name]
            extra.append((r.name, "negatives_returned_any", float(row.returned_any), int(row.negatives)))
            extra.append((r.name, "negatives_max_top_score", row.max_top_score, int(row.negatives)))
        extra += _abstention_rows(r.name, abstention, int(row.negatives) if neg is not None and r.name in neg.index
                                  else 0)
    more = pd.DataFrame(extra, columns=["run", "measure", "value", "n"]).reindex(columns=list(agg.columns))
    return pd.concat([agg, more], ignore_index=True)
