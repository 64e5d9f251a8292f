"""Where strategies run: in this process, or as tasks on a Dask cluster. Same rows either way.

Usage::

    runs = run_strategies(vault, qs, strategies, workspace=ws)                      # serial, no Dask import
    runs = run_strategies(vault, qs, strategies, workspace=ws, scheduler="local:2")  # a LocalCluster
    with make_executor("tcp://127.0.0.1:8786") as ex:                               # an existing cluster
        runs = run_strategies(vault, qs, strategies, workspace=ws, executor=ex)

The unit of work is one (strategy, query-set shard) task. Before the shards
of a strategy run, one *prepare* task per strategy opens its index (building
the variant in the shared evaluation cache under a file lock, so it is built
once) and, for a rerank strategy, embeds every candidate chunk of every query
into the shared embedding cache in one fixed order. Shard tasks then only
retrieve. Every task first checks that it sees the client's vault (page
fingerprint) and, for shards, the index its prepare task opened; a worker
that sees anything else fails the run with a message naming it. Shard rows
come back to the client, are joined in query-set order and turned into Runs
exactly as a serial run builds them, so the run directory is byte-identical
whatever the executor. The Dask side lives in ``dask_executor`` and is
imported only when a scheduler is given.
"""

from __future__ import annotations

import math
import os
import re
from typing import TYPE_CHECKING, Any, Protocol

from vaulteval.errors import UsageError
from vaulteval.hosts import host_setting
from vaulteval.workbench.splits import shard_queries
from vaulteval.workbench.tasks import (Prepared, ShardResult, TaskContext, WorkerMismatch,  # noqa: F401
                                       prepare_task, shard_task, short_fp)

if TYPE_CHECKING:
    from collections.abc import Callable

    from vaulteval.querysets.queryset import Query, QuerySet
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.runs import Run
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace

_LOCAL_RE = re.compile(r"local(?::(\d+))?")
MAX_LOCAL_WORKERS = 64


class Executor(Protocol):
    """Runs prepare and shard tasks; ``describe()`` is the manifest's ``executor`` field; ``on_run``, when set, is
    told each strategy's name once its run is done (progress for a caller such as the MCP ``tune`` tool)."""

    on_run: "Callable[[str], None] | None"

    def run(self, ctx: TaskContext, strategies: "list[Strategy]", shards: "list[list[Query]]",
            workspace: "Workspace") -> "list[list[ShardResult]]": ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


# ----------------------------------------------------------------------------- choosing an executor

def parse_scheduler(text: str) -> tuple[str, Any]:
    """Usage: ``parse_scheduler("local:2")`` -> ("local", 2); ``("address", "tcp://h:8786")`` for a cluster."""
    value = (text or "").strip()
    m = _LOCAL_RE.fullmatch(value)
    if m:
        n = int(m.group(1)) if m.group(1) else (os.cpu_count() or 1)
        if not 1 <= n <= MAX_LOCAL_WORKERS:
            raise UsageError(f"--scheduler local:N needs N from 1 to {MAX_LOCAL_WORKERS}, got {n}")
        return "local", n
    if re.fullmatch(r"(tcp|tls)://[^\s/?#@]+:\d{1,5}", value):
        return "address", value
    raise UsageError(f"--scheduler {text!r} is neither local[:N] nor tcp://HOST:PORT")


def make_executor(scheduler: str | None = None, *, allow_remote_workers: bool = False,
                  progress: bool = False) -> "Executor":
    """Usage: ``make_executor(None)`` -> serial; ``make_executor("local:2")`` connects a Dask cluster now.

    Connecting happens here, before any work, so an unreachable scheduler is
    one usage error (exit 2) and nothing has been computed.
    """
    if scheduler is None or not str(scheduler).strip():
        return SerialExecutor(progress=progress)
    kind, value = parse_scheduler(str(scheduler))
    try:
        import distributed  # noqa: F401  (the optional extra)
    except ImportError:
        raise UsageError("--scheduler needs Dask: pip install 'vaulteval[dask]'") from None
    from vaulteval.workbench.dask_executor import DaskExecutor

    return DaskExecutor(kind, value, allow_remote_workers=allow_remote_workers, progress=progress)


class SerialExecutor:
    """Every task in this process, in order, on the caller's workspace (a per-query bar with ``progress``)."""

    def __init__(self, progress: bool = False) -> None:
        self.progress = progress
        self.tasks = 0
        self.on_run: "Callable[[str], None] | None" = None

    def run(self, ctx: TaskContext, strategies: "list[Strategy]", shards: "list[list[Query]]",
            workspace: "Workspace") -> "list[list[ShardResult]]":
        out = []
        for s in strategies:
            prepared = prepare_task(ctx, s, [q for shard in shards for q in shard], workspace=workspace)
            out.append([shard_task(ctx, s, shard, prepared, workspace=workspace, progress=self.progress)
                        for shard in shards])
            self.tasks += 1 + len(shards)
            if self.on_run is not None:
                self.on_run(s.name)
        return out

    def describe(self) -> dict[str, Any]:
        return {"kind": "serial", "tasks": self.tasks}

    def close(self) -> None:
        pass

    def __enter__(self) -> "SerialExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ----------------------------------------------------------------------------- the one call

def run_strategies(vault: "Vault", queryset: "QuerySet", strategies: "list[Strategy]", *,
                   workspace: "Workspace", executor: "Executor | None" = None, scheduler: str | None = None,
                   allow_remote_workers: bool = False, shards: int | None = None,
                   progress: bool = False) -> "list[Run]":
    """Usage: ``run_strategies(vault, qs, strategies, workspace=ws, scheduler="local:2")`` -> one Run each.

    ``executor`` (from ``make_executor``) is used as given and left open;
    otherwise one is made from ``scheduler`` and closed at the end.
    ``shards`` splits the query set into that many contiguous parts per
    strategy (default: 1 serially, enough to keep every worker busy on Dask).
    """
    from vaulteval.workbench.runs import RunRows

    own = executor is None
    ex = make_executor(scheduler, allow_remote_workers=allow_remote_workers, progress=progress) if own else executor
    try:
        ctx = TaskContext(vault_root=str(vault.root), cache_dir=str(workspace.cache_dir),
                          use_vault_index=workspace.use_vault_index,
                          vault_fingerprint=workspace.fingerprint.digest, ollama_host=host_setting(None),
                          check_vault=not isinstance(ex, SerialExecutor), notes_dir=vault.notes_rel,
                          ignore_obsidian_settings=vault.ignore_obsidian_settings)
        n = shards or _default_shards(len(queryset.queries), len(strategies), getattr(ex, "n_workers", 1))
        parts = shard_queries(queryset.queries, n)
        results = ex.run(ctx, list(strategies), parts, workspace)
    finally:
        if own:
            ex.close()
    runs = []
    for s, shard_results in zip(strategies, results):
        env = workspace.env(s)
        for r in shard_results:
            if r.index_fingerprint != env.fingerprint:
                raise WorkerMismatch(f"worker {r.worker} ran {s.name} on another index than this client sees "
                                     f"({short_fp(r.index_fingerprint)} vs {short_fp(env.fingerprint)}); "
                                     "workers must share the client's filesystem")
        runs.append(RunRows.concat([r.rows for r in shard_results]).to_run(s, env))
    return runs


def _default_shards(n_queries: int, n_strategies: int, n_workers: int) -> int:
    """Enough tasks for two per worker, but shards of at least 20 queries (each shard opens its index)."""
    if n_workers <= 1:
        return 1
    wanted = math.ceil(2 * n_workers / max(1, n_strategies))
    return max(1, min(wanted, n_queries // 20))


