"""The workbench in three calls, in the manner of ranx: run strategies, load runs, compare them.

Usage::

    import vaulteval
    qs = vaulteval.load_queryset("querysets/sample-vault.yaml")       # the set knows its vault
    runs = vaulteval.run(qs, ["bm25", "bm25:analyzer=english"])      # Runs: one Run per strategy
    runs.save("runs/trec/")                                           # runs/trec/bm25.trec, ...
    old = vaulteval.Run.from_trec("runs/old/bm25.trec", name="old")  # any TREC run over the same pages
    report = vaulteval.compare(qs, [*runs, old], ["nDCG@10", "RR"], baseline="bm25")
    report                      # a notebook shows means with 95% intervals, deltas, p and MDE
    report.save("runs/cmp/")    # report.json + report.md, as eval run writes them

``evaluate`` is ``run`` followed by ``compare`` plus the tables of a run
directory (misses, negatives, abstention, slices); these functions add no
metric or test of their own (ir-measures and scipy, through
``workbench.measures``, ``workbench.compare`` and ``workbench.intervals``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.report import Report
    from vaulteval.workbench.runs import Run
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace


@dataclass(eq=False)
class Runs(Sequence):
    """The runs of one ``run()`` call, in strategy order; ``runs["bm25"]`` or ``runs[0]`` picks one."""

    runs: list["Run"]
    workspace: "Workspace | None" = field(default=None, repr=False)
    executor: dict[str, Any] = field(default_factory=lambda: {"kind": "serial"}, repr=False)

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Iterator["Run"]:
        return iter(self.runs)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            for r in self.runs:
                if r.name == key:
                    return r
            raise KeyError(f"no run named {key!r}; the runs are {', '.join(self.names)}")
        return self.runs[key]

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.runs]

    @property
    def strategies(self) -> list["Strategy"]:
        return [r.strategy for r in self.runs if r.strategy is not None]

    def __repr__(self) -> str:
        return f"Runs({', '.join(self.names)})"

    def save(self, folder: str | os.PathLike[str]) -> list[Path]:
        """Usage: ``runs.save("runs/trec")`` -> ``<folder>/<name>.trec`` per run (the folder is made)."""
        target = Path(folder)
        target.mkdir(parents=True, exist_ok=True)
        return [r.to_trec(target / f"{r.name}.trec") for r in self.runs]


def parse_strategies(strategies: "Iterable[Strategy | str] | Strategy | str",
                     allow_remote_ollama: bool = False, vault: "Vault | None" = None) -> list["Strategy"]:
    """Strategy strings or values -> Strategies with unique names (the names label every table).

    The word ``default`` is the pipeline ``retrieve`` runs on ``vault`` with no ``--strategy``."""
    from vaulteval.workbench.strategy import DEFAULT_WORD, Strategy, default_strategy

    if isinstance(strategies, (str, Strategy)):
        strategies = [strategies]

    def one(s: "Strategy | str") -> "Strategy":
        if isinstance(s, Strategy):
            return s
        if s.strip().lower() == DEFAULT_WORD and vault is not None:
            return default_strategy(vault)
        return Strategy.parse(s)

    parsed = [one(s).with_remote_ollama(allow_remote_ollama) for s in strategies]
    if not parsed:
        raise UsageError("name at least one strategy, e.g. --strategy bm25")
    names = [s.name for s in parsed]
    if len(set(names)) != len(names):
        raise UsageError(f"two strategies share a name ({names}); add name=... to one of them")
    return parsed


def vault_of(queryset: "QuerySet", vault: "Vault | str | os.PathLike[str] | None" = None) -> "Vault":
    """The vault to run against: the query set's own, or ``vault`` when it is the same folder (or the set has none)."""
    from vaulteval.vault.vault import Vault

    chosen = vault if vault is None or isinstance(vault, Vault) else Vault(vault)
    own = getattr(queryset, "vault", None)
    if own is None and queryset.vault_root is not None and chosen is None:
        own = Vault(queryset.vault_root)
    if chosen is not None and own is not None and Path(chosen.root) != Path(own.root):
        raise UsageError(f"query set {queryset.name} was loaded against {own.root}, not {chosen.root}; "
                         "load it with load_queryset(path, vault) for the vault you mean to run")
    if chosen is None and own is None:
        raise UsageError(f"query set {queryset.name} does not know its vault; load it with "
                         "load_queryset(path, vault) or pass vault=")
    return chosen if chosen is not None else own


def run(queryset: "QuerySet", strategies: "Iterable[Strategy | str] | Strategy | str", *,
        vault: "Vault | str | os.PathLike[str] | None" = None, cache_dir: str | os.PathLike[str] | None = None,
        use_vault_index: bool = True, allow_remote_ollama: bool = False, progress: bool = False,
        scheduler: str | None = None, allow_remote_workers: bool = False, shards: int | None = None,
        executor: Any = None, workspace: "Workspace | None" = None) -> Runs:
    """Retrieve every query of ``queryset`` with each strategy -> Runs (pools, labels and timings included).

    The vault is the query set's (``load_queryset`` records it). ``scheduler``
    (``"local:2"``, a Dask address) or an open ``executor`` spreads the work;
    the runs are the same either way. Nothing is written to the vault: indexes
    a strategy needs beyond the vault's own are built in ``cache_dir`` (or in
    an open ``workspace``, which ``evaluate`` checks for a stale index first).
    """
    from vaulteval.workbench.executor import make_executor, run_strategies
    from vaulteval.workbench.workspace import Workspace

    chosen = vault_of(queryset, vault)
    parsed = parse_strategies(strategies, allow_remote_ollama, chosen)
    # Connect first: an unreachable scheduler fails before any page is read.
    with (nullcontext(executor) if executor is not None
          else make_executor(scheduler, allow_remote_workers=allow_remote_workers, progress=progress)) as ex:
        ws = workspace or Workspace(chosen, cache_dir, use_vault_index=use_vault_index)
        runs = run_strategies(chosen, queryset, parsed, workspace=ws, executor=ex, shards=shards)
        described = ex.describe()
    return Runs(runs, workspace=ws, executor=described)


def as_runs(runs: "Runs | Run | Iterable[Run | str | os.PathLike[str]] | dict[str, Run]") -> list["Run"]:
    """Runs, one Run, a list of Runs and TREC paths, or {name: Run} -> a list of Runs (paths are read)."""
    from vaulteval.workbench.runs import Run

    if isinstance(runs, Run):
        return [runs]
    if isinstance(runs, dict):
        return list(runs.values())
    if isinstance(runs, (str, os.PathLike)):
        runs = [runs]
    out = []
    for item in runs:
        if isinstance(item, Run):
            out.append(item)
        elif isinstance(item, (str, os.PathLike)):
            out.append(Run.from_trec(item))
        else:
            raise UsageError(f"compare takes Runs, Run objects or TREC file paths, not {type(item).__name__}")
    return out


def check_comparable(queryset: "QuerySet", runs: list["Run"]) -> None:
    """A run with queries the set does not have was made for another query set: refuse it, naming one."""
    known = set(queryset.by_id)
    for r in runs:
        foreign = sorted(set(r.df.query_id.astype(str)) - known)
        if foreign:
            raise UsageError(f"run {r.name} has {len(foreign)} queries that query set {queryset.name} lacks "
                             f"(e.g. {foreign[0]!r}); compare it with the query set it was made for")


def compare(queryset: "QuerySet", runs: "Runs | Iterable[Run | str | os.PathLike[str]] | dict[str, Run]",
            measures: "Iterable[Any] | str | None" = None, *, baseline: "str | Run | None" = None, k: int = 10,
            alpha: float = 0.05, seed: int = 0) -> "Report":
    """Usage: ``compare(qs, runs, ["nDCG@10", "RR"], baseline="bm25")`` -> Report (default baseline: the first run).

    Means with 95% bootstrap intervals, and per run against the baseline one procedure: a paired
    t-test's delta interval, p and verdict (Bonferroni across runs), the minimum detectable effect and
    the queries still needed; see ``vaulteval.workbench.procedure``.
    """
    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench.compare import compare as compare_runs

    if not isinstance(queryset, QuerySet):
        raise UsageError(f"compare(queryset, runs, ...) takes the query set first, got {type(queryset).__name__}")
    if not 1 <= k <= 1000:
        raise UsageError(f"k must be from 1 to 1000, got {k}")
    run_list = as_runs(runs)
    check_comparable(queryset, run_list)
    return compare_runs(run_list, queryset, measures, baseline=baseline, k=k, alpha=alpha, seed=seed)
