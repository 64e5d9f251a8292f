"""Pick a retrieval strategy for a vault on its own query set: search on a tune split, confirm on a test split.

Usage::

    result = tune(vault, queryset, test_queryset=None, grid=None, out="runs/")
    result.decision       # {"chosen": "hybrid:rrf", "adopt": True, "p_randomization": ..., "warning": ...}
    result.search         # tune-split mean of the measure per grid strategy
    result.run_dir        # runs/<id>/: the test-split evaluation (baseline vs best) plus tune.json

The tune and test splits are two query sets (``test_queryset``), or one query
set split by its queries' own ``split`` field (``queryset generate`` assigns
``tune``/``test``), else by a seeded hash of each query id. Every grid strategy is scored on
the tune split by :func:`search_scores`, as (strategy, shard) tasks on the
workbench executor, so ``scheduler="local:2"`` or a Dask cluster address
spreads the search without changing its result. The best strategy and the current default are
then evaluated on the test split like ``eval run`` does (paired tests, Holm,
report, manifest), plus a paired bootstrap CI of the difference. The best is
adopted when it beats the default on the test split; the decision says
whether that gain is significant, and warns when the test split is too small
to tell. ``eval verify`` recomputes the test run and, from ``tune.json``, the
search and the decision.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.strategy import Strategy

TUNE_FILE = "tune.json"
MIN_TEST_QUERIES = 30
ALPHA = 0.05


def search_scores(vault: "Vault", queryset: "QuerySet", strategies: "list[Strategy]", measure: str, *,
                  cache_dir: str | os.PathLike[str] | None = None, executor: Any = None) -> list[dict[str, float]]:
    """Usage: ``search_scores(vault, tune_qs, parsed, "nDCG@10")`` -> one {query id: value} per strategy.

    The strategies run as (strategy, shard) tasks on ``executor`` (serial when None, or a Dask
    executor from ``make_executor``); the scores are the same either way.
    """
    from vaulteval.workbench import measures as M
    from vaulteval.workbench.executor import run_strategies
    from vaulteval.workbench.workspace import Workspace

    runs = run_strategies(vault, queryset, strategies, workspace=Workspace(vault, cache_dir), executor=executor)
    scores = []
    for run in runs:
        table = M.per_query(run, queryset, [measure])
        scores.append({str(q): float(v) for q, v in zip(table.query_id, table.value)})
    return scores


def subset(qs: "QuerySet", ids: Iterable[str], label: str) -> "QuerySet":
    """The same query set restricted to ``ids`` (in the set's own order)."""
    from dataclasses import replace

    wanted = set(ids)
    return replace(qs, name=f"{qs.name}-{label}", queries=[q for q in qs.queries if q.query_id in wanted])


def hash_split(ids: list[str], test_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Usage: ``tune_ids, test_ids = hash_split(ids, 0.5, 0)``: stable per id, independent of order."""
    if not 0 < test_fraction < 1:
        raise UsageError(f"--test-fraction must be between 0 and 1, got {test_fraction}")
    tune_ids, test_ids = [], []
    for qid in ids:
        h = int(hashlib.sha256(f"{seed}:{qid}".encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
        (test_ids if h < test_fraction else tune_ids).append(qid)
    return tune_ids, test_ids


def own_split(queryset: "QuerySet", test_fraction: float, seed: int) -> tuple[list[str], list[str], str]:
    """Tune and test ids of one query set: its own ``split`` fields when it has both (a generated set
    assigns them), else a seeded hash of each id."""
    marked = {q.split for q in queryset.positive}
    if {"tune", "test"} <= marked:
        return ([q.query_id for q in queryset.positive if q.split == "tune"],
                [q.query_id for q in queryset.positive if q.split == "test"], "the query set's split field")
    tune_ids, test_ids = hash_split([q.query_id for q in queryset.positive], test_fraction, seed)
    return tune_ids, test_ids, f"sha256 hash, seed {seed}"


def current_default(vault: "Vault") -> str:
    """The strategy ``retrieve`` uses today, as a workbench strategy string on the vault's own index settings."""
    from vaulteval.pipeline.stages.registry import parse_first_stage
    from vaulteval.pipeline.tuned import built_index_settings, tuned_strategy
    from vaulteval.workbench.strategy import IndexSettings, Strategy

    tuned = tuned_strategy(vault)
    first = {"first": parse_first_stage(tuned["strategy"])} if tuned else {}
    return Strategy(**first, index=IndexSettings.from_settings(built_index_settings(vault))).text()


def default_grid(vault: "Vault", baseline: str) -> list[str]:
    """Usage: ``default_grid(vault, "bm25")``: the registry's grid (``strategy.tune_grid``); dense stages when embedded."""
    from vaulteval.rerank.store import store_path
    from vaulteval.workbench.strategy import tune_grid

    available = frozenset({"bm25", "dense"} if store_path(vault.meta_dir).exists() else {"bm25"})
    return list(dict.fromkeys([baseline, *tune_grid(available)]))


def parse_grid(spec: str) -> list[str]:
    """``--grid``: strategies separated by ``;``, or ``@FILE`` with one per line (``#`` comments)."""
    if spec.startswith("@"):
        try:
            text = Path(spec[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--grid {spec}: cannot read it ({exc})") from None
        items = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    else:
        items = [part.strip() for part in spec.split(";")]
    items = [i for i in items if i]
    if not items:
        raise UsageError("--grid names no strategy")
    return items


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
         progress: bool = False) -> TuneResult:
    """Search the grid on the tune split, confirm the best against the current default on the test split.

    ``scheduler`` (``"local:2"``, ``"tcp://HOST:PORT"``) runs the search and the confirmation as Dask
    tasks; the decision is the same as a serial run's.
    """
    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.workbench.executor import make_executor

    baseline = current_default(vault)
    grid, parsed = _unique_grid([baseline, *(grid or default_grid(vault, baseline))])  # usage errors first
    if test_queryset is None:
        tune_ids, test_ids, method = own_split(queryset, test_fraction, seed)
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
    # One executor (one Dask cluster) for the search and the held-out confirmation.
    with make_executor(scheduler, allow_remote_workers=allow_remote_workers, progress=progress) as ex:
        scores = search_scores(vault, tune_qs, parsed, measure, cache_dir=cache_dir, executor=ex)
        search = search_table(grid, scores)
        best = search[0]["strategy"]
        names = {baseline: "default", best: "best"}
        chosen = [parsed[grid.index(baseline)].with_name("default")]
        if best != baseline:
            chosen.append(parsed[grid.index(best)].with_name("best"))
        ev = evaluate(vault, test_qs, chosen, measures=[measure, "R@100"], k=10, baseline="default",
                      cache_dir=cache_dir, seed=seed, executor=ex)
    decision = decide(ev.per_query, measure, best != baseline, seed)
    chosen_strategy = parsed[grid.index(best if decision["adopt"] else baseline)]
    # retrieve can only pick the first stage; analyzer, BM25 parameters and chunking are the index's.
    decision.update(chosen=best if decision["adopt"] else baseline, best=best, baseline=baseline,
                    retrieve_strategy=chosen_strategy.retrieve_text(), index=chosen_strategy.index_settings())
    params = {"measure": measure, "seed": seed, "grid": grid, "splits": splits, "names": names}
    run_dir = ev.save(out, run_id=run_id)
    result = TuneResult(search, baseline, best, decision, run_dir, params)
    (run_dir / TUNE_FILE).write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    return result


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


def decide(per_query: Any, measure: str, has_best: bool, seed: int) -> dict[str, Any]:
    """Adopt the best when its test-split mean beats the default's; significance, CI and size warning."""
    from vaulteval.workbench.stats import paired_test

    table = per_query[per_query.measure == measure].pivot_table(index="query_id", columns="run", values="value")
    base = table["default"].to_numpy(dtype=float)
    n = int(base.size)
    out: dict[str, Any] = {"measure": measure, "n_test": n, "default_mean": float(base.mean()) if n else 0.0}
    if not has_best:
        out.update(adopt=False, reason="the current default is the best on the tune split", best_mean=out["default_mean"],
                   delta=0.0, ci95=[0.0, 0.0], p_randomization=1.0, significant=False)
    else:
        best = table["best"].to_numpy(dtype=float)
        test = paired_test(best, base, seed=seed)
        low, high = bootstrap_ci(best - base, seed)
        adopt = test.mean_delta > 0
        out.update(best_mean=float(best.mean()), delta=float(test.mean_delta), ci95=[low, high],
                   p_randomization=float(test.p_randomization), wins=test.wins, ties=test.ties, losses=test.losses,
                   significant=bool(test.p_randomization < ALPHA), adopt=bool(adopt),
                   reason=("better on the test split" + (" (significant)" if test.p_randomization < ALPHA
                                                         else " (not significant)")) if adopt
                   else "not better than the default on the test split")
    warning = None
    if n < MIN_TEST_QUERIES:
        warning = f"the test split has {n} queries (< {MIN_TEST_QUERIES}): too small to tell strategies apart"
    elif has_best and not out["significant"] and out["ci95"][1] - out["ci95"][0] > 0.1:
        warning = "the test split is too small to tell: the 95% CI of the difference is wider than 0.1"
    out["warning"] = warning
    return out


def bootstrap_ci(deltas: Any, seed: int, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean per-query difference (scipy.stats.bootstrap), seeded."""
    import numpy as np
    from scipy.stats import bootstrap

    deltas = np.asarray(deltas, dtype=float)
    if deltas.size < 2 or np.allclose(deltas, deltas[0]):
        value = float(deltas.mean()) if deltas.size else 0.0
        return value, value
    res = bootstrap((deltas,), np.mean, confidence_level=level, n_resamples=2000, method="percentile",
                    random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def read_tune(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``tune.json`` of a run directory, or None for a plain ``eval run``."""
    path = Path(run_dir) / TUNE_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def test_split_ids(tune_info: dict[str, Any] | None) -> list[str] | None:
    """The test query ids of a hash-split tune run (None: the run's query set is the whole test set)."""
    return None if not tune_info else tune_info.get("params", {}).get("splits", {}).get("test_ids")


def verify_tune(tune_info: dict[str, Any], per_query: Any, vault_root: str, cache_dir: str | None = None,
                tolerance: float = 1e-9) -> list[str]:
    """Re-run the search on the tune split and re-derive the decision; one line per difference."""
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.vault.vault import Vault

    params = tune_info["params"]
    tune_split = params["splits"]["tune"]
    vault = Vault(vault_root)
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
    decision = decide(per_query, params["measure"], tune_info["best"] != tune_info["baseline"], params["seed"])
    old = tune_info["decision"]
    for key in ("adopt", "significant", "n_test"):
        if decision.get(key) != old.get(key):
            diffs.append(f"tune.json: decision {key}: {old.get(key)} -> {decision.get(key)}")
    for key in ("delta", "p_randomization", "default_mean", "best_mean"):
        a, b = old.get(key), decision.get(key)
        if a is None or b is None or abs(a - b) > tolerance * max(1.0, abs(a)):
            diffs.append(f"tune.json: decision {key}: {a} -> {b}")
    return diffs
