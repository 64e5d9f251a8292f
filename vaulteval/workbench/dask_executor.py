"""The Dask side of the executor: a LocalCluster or an existing scheduler, tasks, retries, progress.

Usage (through ``executor.make_executor``, which imports this module only for a scheduler)::

    ex = DaskExecutor("local", 2)                       # LocalCluster: 2 worker processes on 127.0.0.1
    ex = DaskExecutor("address", "tcp://127.0.0.1:8786")
    results = ex.run(ctx, strategies, shards, workspace)
    ex.close()

Vault text (queries, chunk text inside results) goes only to a scheduler and
workers on this machine unless ``allow_remote_workers`` is set: the scheduler
address and every worker address are checked with the loopback rule of
``vaulteval.hosts`` before anything is submitted, and tasks are pinned to the
workers that passed. A worker that dies mid-task has its task rerun on
another worker by the scheduler; the task is deterministic, so the rows are
the same.
"""

from __future__ import annotations

import logging
import sys
import uuid
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from vaulteval.errors import UsageError, VaultevalError
from vaulteval.hosts import address_is_local
from vaulteval.workbench.tasks import prepare_task, shard_task

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import Query
    from vaulteval.workbench.tasks import ShardResult, TaskContext
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace

CONNECT_TIMEOUT = 5.0  # seconds to reach a scheduler (and see a worker) before giving up
PROGRESS_EVERY = 1.0   # seconds between progress lines
QUIET_WORKERS = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}


class SchedulerUnreachable(UsageError):
    """No Dask scheduler answers at the address (or it has no workers)."""


class TaskFailed(VaultevalError):
    """A task could not be completed on any worker."""


class DaskExecutor:
    """Tasks on a Dask cluster; ``kind`` is "local" (value: workers) or "address" (value: tcp://HOST:PORT)."""

    def __init__(self, kind: str, value: Any, *, allow_remote_workers: bool = False, progress: bool = False,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.kind, self.value = kind, value
        self.allow_remote = allow_remote_workers
        self.progress = progress
        self.tasks = 0
        self.on_run = None  # told each strategy's name once the whole batch is done (as SerialExecutor's)
        self.cluster = None
        self.client = None
        if kind == "address" and not allow_remote_workers and not address_is_local(value):
            raise UsageError(f"the Dask scheduler {value} is not on this machine; pass --allow-remote-workers "
                             "to send queries and note text to its workers")
        try:
            self.client = self._connect(connect_timeout)
            self.workers = self._checked_workers(connect_timeout)
        except BaseException:
            self.close()
            raise

    @property
    def n_workers(self) -> int:
        return len(self.workers)

    # -- connecting -------------------------------------------------------------
    def _connect(self, timeout: float):
        from distributed import Client, LocalCluster

        if self.kind == "local":
            import dask

            # Our workers' own clusters: no statistical profiler and a slow event-loop tick, so the
            # worker's loop thread seldom takes the GIL from a task (it costs most on a busy machine).
            with dask.config.set(QUIET_WORKERS):
                self.cluster = LocalCluster(n_workers=self.value, threads_per_worker=1, processes=True,
                                            host="127.0.0.1", scheduler_port=0, dashboard_address=None,
                                            worker_dashboard_address=None, silence_logs=logging.ERROR)
            return Client(self.cluster, timeout=timeout)
        try:
            return Client(self.value, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {self.value} within {timeout:.0f} s "
                                       f"({type(exc).__name__}); start it or fix --scheduler") from None

    def _checked_workers(self, timeout: float) -> list[str]:
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise SchedulerUnreachable(f"the Dask scheduler at {self.address} has no workers "
                                       f"(waited {timeout:.0f} s); start some with `dask worker {self.address}`") from None
        workers = sorted(self.client.scheduler_info()["workers"])
        if not self.allow_remote:
            remote = [w for w in workers if not address_is_local(w)]
            if remote:
                raise UsageError(f"Dask worker {remote[0]} is not on this machine; pass --allow-remote-workers "
                                 "to send queries and note text to it")
        return workers

    @property
    def address(self) -> str:
        return self.client.scheduler.address if self.client is not None else str(self.value)

    # -- running ------------------------------------------------------------------
    def run(self, ctx: "TaskContext", strategies: "list[Strategy]", shards: "list[list[Query]]",
            workspace: "Workspace") -> "list[list[ShardResult]]":
        from distributed import as_completed

        token = uuid.uuid4().hex[:12]
        # Local-only runs are pinned to the workers checked above: one joining later never sees vault text.
        where = {} if self.allow_remote else {"workers": self.workers, "allow_other_workers": False}
        everything = [q for shard in shards for q in shard]
        futures, grid = [], []
        for i, s in enumerate(strategies):
            prep = self.client.submit(prepare_task, ctx, s, everything, key=f"vaulteval-prepare-{token}-{i}",
                                      pure=False, **where)
            row = [self.client.submit(shard_task, ctx, s, shard, prep, key=f"vaulteval-shard-{token}-{i}-{j}",
                                      pure=False, **where) for j, shard in enumerate(shards)]
            futures += [prep, *row]
            grid.append(row)
        self.tasks = len(futures)
        meter = tqdm(total=len(futures), disable=not self.progress, file=sys.stderr, mininterval=PROGRESS_EVERY,
                     bar_format="vaulteval: {n}/{total} tasks done, {elapsed} elapsed, ETA {remaining}")
        try:
            for fut in as_completed(futures):
                if fut.status == "error":
                    fut.result()  # re-raises the task's own error (a VaultevalError keeps its one line)
                meter.update()
            out = [[f.result() for f in row] for row in grid]
            for s in strategies if self.on_run is not None else ():
                self.on_run(s.name)
            return out
        except VaultevalError:
            raise
        except Exception as exc:  # KilledWorker after repeated deaths, a lost scheduler, ...
            raise TaskFailed(f"the Dask run failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
        finally:
            meter.close()
            self.client.cancel(futures)

    def describe(self) -> dict[str, Any]:
        scheduler = f"local:{self.value}" if self.kind == "local" else str(self.value)
        return {"kind": "dask", "scheduler": scheduler, "workers": self.n_workers, "tasks": self.tasks}

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def __enter__(self) -> "DaskExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
