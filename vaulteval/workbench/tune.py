"""Pick a retrieval strategy for a vault on its own query set: search on a tune split, confirm on a test split.

Usage::

    result = tune(vault, queryset, test_queryset=None, grid=None, out="runs/")
    result.decision       # {"verdict": "adopt", "chosen": "hybrid:rrf", "ci95": [...], "retrieve": {...}, ...}
    result.search         # tune-split mean of the measure per grid strategy
    result.run_dir        # runs/<id>/: the test-split evaluation (baseline vs best) plus tune.json

The tune and test splits are two query sets (``test_queryset``), or one query
set split by its queries' own ``split`` field (``queryset generate`` assigns
``tune``/``test``), else by a seeded hash of each query id. Every grid strategy is scored on
the tune split by :func:`search_scores`, as (strategy, shard) tasks on the
workbench executor, so ``scheduler="local:2"`` or a Dask cluster address
spreads the search without changing its result. The best strategy and the current default are
then evaluated on the test split like ``eval run`` does (paired tests, Holm,
report, manifest). The decision is a verdict (``vaulteval.workbench.verdict``):
``adopt`` only when the paired t-test's 95% interval of the gain lies above 0
(``procedure``) and no query kind or overlap band loses by the same test, ``keep`` when the default is as good
or better, else ``inconclusive`` with the number of judged queries a decision
would need. ``eval verify`` recomputes the test run and, from ``tune.json``,
the search and the decision.

When a set holds written or real questions (``kind: written``, judged questions
from a log, hand-written ones) and generated queries, the search and the
verdict use the questions only; the default and the best are run on the
generated queries as a regression check, reported beside the verdict and
never part of it. ``decision["evidence"]`` says how many questions the
verdict rests on, who wrote them and the smallest difference they detect
(``vaulteval.workbench.evidence``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.workbench.grid import default_grid, parse_grid  # noqa: F401  (tune's grid, re-exported)

if TYPE_CHECKING:
    from collections.abc import Callable

    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace

TUNE_FILE = "tune.json"


def search_scores(vault: "Vault", queryset: "QuerySet", strategies: "list[Strategy]", measure: str, *,
                  cache_dir: str | os.PathLike[str] | None = None, executor: Any = None,
                  workspace: "Workspace | None" = None) -> list[dict[str, float]]:
    """Usage: ``search_scores(vault, tune_qs, parsed, "nDCG@10")`` -> one {query id: value} per strategy.

    The strategies run as (strategy, shard) tasks on ``executor`` (serial when None, or a Dask
    executor from ``make_executor``); the scores are the same either way.
    """
    from vaulteval.workbench import measures as M
    from vaulteval.workbench.executor import run_strategies
    from vaulteval.workbench.workspace import Workspace

    runs = run_strategies(vault, queryset, strategies, workspace=workspace or Workspace(vault, cache_dir),
                          executor=executor)
    scores = []
    for run in runs:
        table = M.per_query(run, queryset, [measure])
        scores.append({str(q): float(v) for q, v in zip(table.query_id, table.value)})
    return scores


def subset(qs: "QuerySet", ids: Iterable[str], label: str) -> "QuerySet":
    """The same query set restricted to ``ids`` (in the set's own order)."""
    wanted = set(ids)
    return replace(qs, name=f"{qs.name}-{label}", queries=[q for q in qs.queries if q.query_id in wanted])


def tune_test_split(queryset: "QuerySet", test_fraction: float, seed: int) -> tuple[list[str], list[str], str]:
    """Tune and test ids of one query set: its own ``split`` fields when it has both (a generated set
    assigns them), else a seeded hash of each id. The one split of ``tune`` and ``sweep``."""
    marked = {q.split for q in queryset.positive}
    if {"tune", "test"} <= marked:
        return ([q.query_id for q in queryset.positive if q.split == "tune"],
                [q.query_id for q in queryset.positive if q.split == "test"], "the query set's split field")
    from vaulteval.workbench.splits import holdout_split

    tune_ids, test_ids = holdout_split([q.query_id for q in queryset.positive], test_fraction, seed)
    return tune_ids, test_ids, f"sha256 hash, seed {seed}"


BASELINES = ("default", "tuned")


def current_default(vault: "Vault", *, tuned: bool = False) -> str:
    """The strategy ``retrieve`` runs with nothing tuned (``tuned``: with the ``.vaulteval.json`` pipeline when
    there is one), as a workbench strategy string on the vault's own index settings."""
    from vaulteval.workbench.strategy import default_strategy

    strategy = default_strategy(vault, tuned=tuned)
    return strategy.with_name(strategy.default_name()).text()


def tune_baseline(vault: "Vault", baseline: str = "default") -> tuple[str, str]:
    """``(strategy text, what it is)`` of the baseline tune confirms against: ``default`` (the untuned default,
    so a forced ``--write`` never becomes a later tune's baseline), ``tuned`` (the stored pipeline), or a strategy."""
    from vaulteval.pipeline.tuned import tuned_strategy

    if baseline == "default":
        return current_default(vault), "the untuned default"
    if baseline == "tuned":
        entry = tuned_strategy(vault)
        if entry is None:
            raise UsageError(f"--baseline tuned: {vault.root / '.vaulteval.json'} holds no tuned pipeline")
        forced = " (forced)" if entry.get("forced") else ""
        return current_default(vault, tuned=True), f"the tuned pipeline of .vaulteval.json{forced}"
    return baseline, "the strategy given"


@dataclass
class TuneResult:
    search: list[dict[str, Any]]
    baseline: str
    best: str
    decision: dict[str, Any]
    run_dir: Path | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "best": self.best, "decision": self.decision, "search": self.search,
                "run_dir": str(self.run_dir) if self.run_dir else None, "params": self.params}


def tune(vault: "Vault", queryset: "QuerySet", *, test_queryset: "QuerySet | None" = None,
         grid: list[str] | None = None, measure: str = "nDCG@10", test_fraction: float = 0.5, seed: int = 0,
         out: str | os.PathLike[str] = "runs", cache_dir: str | os.PathLike[str] | None = None,
         run_id: str | None = None, scheduler: str | None = None, allow_remote_workers: bool = False,
         progress: bool = False, allow_stale: bool = False, baseline: str = "default",
         on_run: "Callable[[str], None] | None" = None) -> TuneResult:
    """Search the grid on the tune split, confirm the best against ``baseline`` (``tune_baseline``) on the test split.

    Like ``evaluate``, it first checks that the vault's own index (where a strategy runs on it) holds the
    notes as they are now: :class:`StaleIndex` before any search otherwise, unless ``allow_stale``.

    ``scheduler`` (``"local:2"``, ``"tcp://HOST:PORT"``) runs the search and the confirmation as Dask
    tasks; the decision is the same as a serial run's. ``on_run`` is told each strategy's name as its run ends.
    """
    from vaulteval.workbench.evaluate import evaluate, require_current
    from vaulteval.workbench.executor import make_executor
    from vaulteval.workbench.workspace import Workspace

    from vaulteval.workbench.evidence import evidence_facts, regression_check

    baseline, baseline_source = tune_baseline(vault, baseline)
    grid, parsed = _unique_grid([baseline, *(grid or default_grid(vault, baseline))])  # usage errors first
    # The pages either set judges, before written or real questions are set apart from generated queries.
    judged = queryset if test_queryset is None else replace(queryset, queries=[*queryset.queries,
                                                                              *test_queryset.queries])
    queryset, test_queryset, generated = decisive_sets(queryset, test_queryset)
    if test_queryset is None:
        tune_ids, test_ids, method = tune_test_split(queryset, test_fraction, seed)
        tune_qs, test_qs = subset(queryset, tune_ids, "tune"), subset(queryset, test_ids, "test")
        splits = {"tune": {"path": str(queryset.path), "split": queryset.extra.get("split") or "test",
                           "ids": tune_ids}, "test_ids": test_ids, "method": method,
                  "test_fraction": test_fraction}
    else:
        tune_qs, test_qs = queryset, test_queryset
        tune_ids = [q.query_id for q in queryset.positive]
        splits = {"tune": {"path": str(queryset.path), "split": queryset.extra.get("split") or "test",
                           "ids": tune_ids}, "method": "two query sets"}
    if not tune_ids or not test_qs.positive:
        raise UsageError("the tune and the test split each need at least one query with relevant pages")
    ws = Workspace(vault, cache_dir)  # the search runs on the index this checked
    stale = require_current(ws, parsed, judged, allow_stale=allow_stale, what="tune")
    slices, high = verdict_slices(test_qs)
    # One executor (one Dask cluster) for the search and the held-out confirmation.
    with make_executor(scheduler, allow_remote_workers=allow_remote_workers, progress=progress) as ex:
        ex.on_run = on_run
        scores = search_scores(vault, tune_qs, parsed, measure, cache_dir=cache_dir, executor=ex, workspace=ws)
        search = search_table(grid, scores)
        best = search[0]["strategy"]
        by_text = dict(zip(grid, parsed))
        semantic = {"candidate": is_semantic(by_text[best]), "default": is_semantic(by_text[baseline]),
                    "grid": any(is_semantic(s) for s in parsed)}
        names = {baseline: "default", best: "best"}
        chosen = [by_text[baseline].with_name("default")]
        if best != baseline:
            chosen.append(by_text[best].with_name("best"))
        rival = _rival(search, by_text, semantic, high, test_qs)
        if rival is not None:
            names[rival] = "rival"
            chosen.append(by_text[rival].with_name("rival"))
        ev = evaluate(vault, test_qs, chosen, measures=[measure, "R@100"], k=10, baseline="default",
                      cache_dir=cache_dir, seed=seed, executor=ex, allow_stale=allow_stale,
                      workspace=ws, checked=stale)
        regression = None
        if generated is not None and generated.positive and best != baseline:
            old, new = search_scores(vault, generated, [by_text[baseline], by_text[best]], measure,
                                     cache_dir=cache_dir, executor=ex, workspace=ws)
            regression = regression_check(old, new, measure=measure)
    columns = measure_columns(ev.per_query, measure)
    evidence = evidence_facts(test_qs, len(tune_ids), columns["default"],
                              columns.get("best") if best != baseline else None, measure=measure,
                              generated=len(generated.positive) if generated is not None else 0)
    decision = decide(ev.per_query, measure, best != baseline, seed, slices=slices, high_overlap=high,
                      semantic=semantic)
    chosen_strategy = by_text[best if decision["adopt"] else baseline]
    # retrieve can only pick the pipeline; analyzer, BM25 parameters and chunking are the index's.
    decision.update(chosen=best if decision["adopt"] else baseline, best=best, baseline=baseline,
                    baseline_source=baseline_source,
                    retrieve_strategy=chosen_strategy.retrieve_text(), index=chosen_strategy.index_settings(),
                    retrieve=pipeline_settings(chosen_strategy), best_retrieve=pipeline_settings(by_text[best]),
                    best_index=by_text[best].index_settings())
    params = {"measure": measure, "seed": seed, "grid": grid, "splits": splits, "names": names,
              "test_slices": slices, "high_overlap": sorted(high) if high is not None else None,
              "semantic": semantic, "allow_stale": allow_stale, "stale_pages": stale.pages}
    decision["evidence"] = evidence
    if regression is not None:
        decision["regression"] = regression
    if generated is not None:
        params["regression_ids"] = [q.query_id for q in generated.queries]
    if stale.pages:
        decision["stale"] = stale.note()
    run_dir = ev.save(out, run_id=run_id)
    result = TuneResult(search, baseline, best, decision, run_dir, params)
    (run_dir / TUNE_FILE).write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    return result


def is_semantic(strategy: "Strategy") -> bool:
    """Dense, hybrid or reranked: a strategy that matches meaning, not only shared words."""
    return strategy.semantic


def pipeline_settings(strategy: "Strategy") -> dict[str, Any]:
    """What ``retrieve`` needs to run ``strategy`` itself: first stage, reranker (or None) and depth."""
    rerank = None if strategy.reranker is None else strategy.reranker.settings()
    return {"strategy": strategy.retrieve_text(), "rerank": rerank, "bm25_top": strategy.bm25_top}


def verdict_slices(queryset: "QuerySet") -> "tuple[dict[str, list[str]], set[str] | None]":
    """Query ids per kind (``kind=title``) and per overlap band (``overlap=high``), and the high-overlap ids
    (None when the set records no overlap band)."""
    from vaulteval.workbench.verdict import overlap_band

    slices: dict[str, list[str]] = {}
    banded = False
    for q in queryset.positive:
        if q.kind:
            slices.setdefault(f"kind={q.kind}", []).append(q.query_id)
        band = overlap_band(q)
        if band is not None:
            banded = True
            slices.setdefault(f"overlap={band}", []).append(q.query_id)
    high = set(slices.get("overlap=high", [])) if banded else None
    return slices, high


def _rival(search: list[dict[str, Any]], by_text: "dict[str, Strategy]", semantic: dict[str, bool],
           high: set[str] | None, test_qs: "QuerySet") -> str | None:
    """On a mostly high-overlap test split whose grid holds semantic strategies, the verdict sizes real questions
    from the spread between a semantic and a lexical strategy: when the default and the best are of one family,
    the search's best of the other family is evaluated too."""
    if high is None or not semantic["grid"] or semantic["candidate"] != semantic["default"]:
        return None
    ids = [q.query_id for q in test_qs.positive]
    if sum(q in high for q in ids) * 2 <= len(ids):
        return None
    want = not semantic["default"]
    return next((row["strategy"] for row in search if is_semantic(by_text[row["strategy"]]) == want), None)


def _unique_grid(items: list[str]) -> "tuple[list[str], list[Strategy]]":
    """Parse every grid entry; two spellings of one strategy (same name) are searched once."""
    from vaulteval.workbench.strategy import Strategy

    grid, parsed, seen = [], [], set()
    for text in items:
        strategy = Strategy.parse(text)
        if strategy.name not in seen:
            seen.add(strategy.name)
            grid.append(text)
            parsed.append(strategy)
    return grid, parsed


def search_table(grid: list[str], scores: list[dict[str, float]]) -> list[dict[str, Any]]:
    """Grid strategies by tune-split mean, best first; ties keep grid order (the default first)."""
    rows = [{"strategy": s, "mean": (sum(v.values()) / len(v)) if v else 0.0, "n": len(v), "order": i}
            for i, (s, v) in enumerate(zip(grid, scores))]
    rows.sort(key=lambda r: (-round(r["mean"], 12), r["order"]))
    return [{k: v for k, v in r.items() if k != "order"} for r in rows]


def decide(per_query: Any, measure: str, has_best: bool, seed: int, *, slices: dict[str, list[str]] | None = None,
           high_overlap: set[str] | None = None, semantic: dict[str, bool] | None = None) -> dict[str, Any]:
    """The verdict on the test split (``vaulteval.workbench.verdict``) from ``evaluate``'s per-query table.

    Runs named ``default`` and ``best`` (and ``rival``: the best of the other family, when both are lexical
    or both semantic on a mostly high-overlap set); ``semantic`` says which of candidate/default/grid are semantic.
    """
    from vaulteval.workbench.verdict import Evidence, judge

    column = measure_columns(per_query, measure)
    ev = Evidence(default=column["default"], candidate=column.get("best") if has_best else None,
                  slices=slices or {}, high_overlap=high_overlap, rival=column.get("rival"))
    flags = semantic or {}
    return judge(ev, seed=seed, measure=measure, candidate_semantic=flags.get("candidate", False),
                 default_semantic=flags.get("default", False), grid_semantic=flags.get("grid", False))


def measure_columns(per_query: Any, measure: str) -> dict[str, dict[str, float]]:
    """{run name: {query id: value}} of one measure from ``evaluate``'s per-query table."""
    table = per_query[per_query.measure == measure].pivot_table(index="query_id", columns="run", values="value")
    return {name: {str(q): float(v) for q, v in table[name].items()} for name in table.columns}


def decisive_sets(queryset: "QuerySet", test_queryset: "QuerySet | None"
                  ) -> "tuple[QuerySet, QuerySet | None, QuerySet | None]":
    """The sets the verdict decides on, and the generated queries set apart for the regression check (None when
    no set holds both written or real questions and generated queries; ``vaulteval.workbench.evidence``)."""
    from vaulteval.workbench.evidence import partition

    sets, apart = [], []
    for qs in (queryset, test_queryset):
        if qs is None:
            sets.append(None)
            continue
        questions, generated = partition(qs)
        sets.append(subset(qs, questions, "questions") if generated else qs)
        apart += [qs[q] for q in generated]
    generated_qs = replace(queryset, name=f"{queryset.name}-generated", queries=apart) if apart else None
    return sets[0], sets[1], generated_qs


def read_tune(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``tune.json`` of a run directory, or None for a plain ``eval run``; a decision of another
    procedure (``decision.procedure``) is refused in one line."""
    from vaulteval.workbench.manifest import NotARunDir, read_run_json
    from vaulteval.workbench.procedure import REPORT_FORMAT

    path = Path(run_dir) / TUNE_FILE
    if not path.is_file():
        return None
    data = read_run_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("params", {}), dict):
        raise NotARunDir(f"{path} is malformed: expected the mapping tune writes")
    decision = data.get("decision")
    procedure = decision.get("procedure") if isinstance(decision, dict) else None
    if procedure != REPORT_FORMAT:
        raise NotARunDir(f"{path} holds a decision of procedure {str(procedure)[:40]}; this vaulteval reads "
                         f"procedure {REPORT_FORMAT} only: run `vaulteval tune` again")
    return data


def test_split_ids(tune_info: dict[str, Any] | None) -> list[str] | None:
    """The test query ids of a hash-split tune run (None: the run's query set is the whole test set)."""
    return None if not tune_info else tune_info.get("params", {}).get("splits", {}).get("test_ids")


def verify_tune(tune_info: dict[str, Any], per_query: Any, vault_root: str, cache_dir: str | None = None,
                notes_dir: str | None = None,
                tolerance: float = 1e-9) -> list[str]:
    """Re-run the search on the tune split and re-derive the decision; one line per difference."""
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.vault.vault import Vault

    params = tune_info["params"]
    tune_split = params["splits"]["tune"]
    vault = Vault(vault_root, notes_dir=notes_dir, notes_dir_change=True)
    tune_qs = subset(load_queryset(tune_split["path"], vault, split=tune_split["split"]), tune_split["ids"], "tune")
    grid, parsed = _unique_grid(list(params["grid"]))
    search = search_table(grid, search_scores(vault, tune_qs, parsed, params["measure"], cache_dir=cache_dir))
    diffs = []
    stored = {row["strategy"]: row["mean"] for row in tune_info["search"]}
    for row in search:
        old = stored.get(row["strategy"])
        if old is None or abs(old - row["mean"]) > tolerance * max(1.0, abs(old)):
            diffs.append(f"tune.json: search {row['strategy']}: {old} -> {row['mean']}")
    if search[0]["strategy"] != tune_info["best"]:
        diffs.append(f"tune.json: best {tune_info['best']} -> {search[0]['strategy']}")
    high = params.get("high_overlap")
    decision = decide(per_query, params["measure"], tune_info["best"] != tune_info["baseline"], params["seed"],
                      slices=params.get("test_slices"), high_overlap=set(high) if high is not None else None,
                      semantic=params.get("semantic"))
    old = tune_info["decision"]
    for key in ("verdict", "adopt", "significant", "n_test"):
        if decision.get(key) != old.get(key):
            diffs.append(f"tune.json: decision {key}: {old.get(key)} -> {decision.get(key)}")
    for key in ("delta", "p", "default_mean", "best_mean"):
        a, b = old.get(key), decision.get(key)
        if a is None or b is None or abs(a - b) > tolerance * max(1.0, abs(a)):
            diffs.append(f"tune.json: decision {key}: {a} -> {b}")
    return diffs
