"""The tasks of an evaluation: prepare one strategy, retrieve one shard of its queries.

Usage (the executors call these; a Dask worker imports this module by name)::

    prepared = prepare_task(ctx, strategy, queries)            # index opened/built once, embeddings warmed
    result = shard_task(ctx, strategy, queries[:40], prepared)  # rows of those queries

Every task checks, before it starts, that it sees the client's vault (the
page fingerprint the manifest records) and, for a shard, the same index as
the prepare task; otherwise it fails with a message naming the worker.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import Query
    from vaulteval.workbench.runs import RunRows
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace


class WorkerMismatch(UsageError):
    """A task saw another vault or index than the client: the workers do not share its files."""


@dataclass(frozen=True)
class TaskContext:
    """What a task needs to open the vault view the client sees, and what it must find there."""

    vault_root: str
    cache_dir: str
    use_vault_index: bool
    vault_fingerprint: str
    ollama_host: str  # the client's Ollama setting: a worker embeds with the client's server
    check_vault: bool = True
    notes_dir: str | None = None  # the client's notes folder, relative to the vault ("" for the root)
    ignore_obsidian_settings: bool = False


@dataclass(frozen=True)
class Prepared:
    """A prepare task's answer: the fingerprint of the index the strategy runs on, and who opened it."""

    index_fingerprint: str
    worker: str


@dataclass
class ShardResult:
    rows: "RunRows"
    index_fingerprint: str
    worker: str


def prepare_task(ctx: TaskContext, strategy: "Strategy", queries: "list[Query]", *,
                 workspace: "Workspace | None" = None) -> Prepared:
    """Open (or build, once, under a lock) the strategy's index; warm the reranker's cache (when it keeps one)."""
    ws = workspace or _worker_workspace(ctx)
    env = ws.env(strategy)
    if strategy.reranker is not None and strategy.reranker.warms:
        warm_embeddings(env, _with_host(strategy, ctx), queries, ws.cache_dir / "embeddings.sqlite")
    return Prepared(env.fingerprint, worker_name())


def shard_task(ctx: TaskContext, strategy: "Strategy", queries: "list[Query]", prepared: Prepared, *,
               workspace: "Workspace | None" = None, progress: bool = False) -> ShardResult:
    """Retrieve one shard of the queries; refuses to run on another index than the prepare task opened."""
    from vaulteval.workbench.runs import retrieve_rows

    ws = workspace or _worker_workspace(ctx)
    env = ws.env(strategy)
    if env.fingerprint != prepared.index_fingerprint:
        raise WorkerMismatch(f"worker {worker_name()} sees another index for {strategy.name} than worker "
                             f"{prepared.worker} ({short_fp(env.fingerprint)} vs {short_fp(prepared.index_fingerprint)}); "
                             "workers must share the client's filesystem")
    rows = retrieve_rows(env, queries, _with_host(strategy, ctx), ws.cache_dir / "embeddings.sqlite",
                         progress=progress)
    return ShardResult(rows, env.fingerprint, worker_name())


def warm_embeddings(env: Any, strategy: "Strategy", queries: "list[Query]", cache_path: Path) -> None:
    """Warm the reranker on every chunk any query's pool holds, in first-seen order (one pass per strategy).

    An embedding reranker's vectors then never depend on which shard met a
    chunk first, and two workers never embed the same chunk; a failing
    backend caches nothing and each query falls back on its own, as in a
    serial run.
    """
    checker = env.retriever.integrity()
    texts: dict[str, None] = {}
    for q in queries:
        for hit in env.index.search(q.text, k=strategy.bm25_top):
            rec = checker.current_record(env.index.doc(hit.doc))
            if rec is not None:
                texts.setdefault(rec.get("contextualized_text") or rec["raw_text"], None)
    if texts:  # chunks the vault's stored embeddings hold are read from the store, not embedded again
        strategy.reranker.warm(queries[0].text, list(texts), cache_path, store=env.retriever.optional_store())


def _with_host(strategy: "Strategy", ctx: TaskContext) -> "Strategy":
    """The strategy with the client's Ollama host filled in, so a worker's own environment cannot change it."""
    return strategy if strategy.reranker is None else strategy.with_rerank_host(ctx.ollama_host)


def worker_name() -> str:
    """The Dask worker running this task (name and address), else this process."""
    dist = sys.modules.get("distributed")  # loaded on a worker; never imported here
    if dist is not None:
        try:
            w = dist.get_worker()
            return f"{w.name} ({w.address})" if str(w.name) != w.address else w.address
        except ValueError:
            pass
    return f"pid {os.getpid()}"


# One workspace per (vault, cache, fingerprint) in a worker process: indexes are opened once per worker.
_WORKSPACES: dict[tuple, "Workspace"] = {}
_DIGESTS: dict[str, tuple[tuple, str]] = {}


def _worker_workspace(ctx: TaskContext) -> "Workspace":
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.workspace import Workspace

    digest = _current_digest(ctx) if ctx.check_vault else ctx.vault_fingerprint
    if digest != ctx.vault_fingerprint:
        raise WorkerMismatch(f"worker {worker_name()} sees another vault at {ctx.vault_root} "
                             f"({short_fp(digest)} vs the client's {short_fp(ctx.vault_fingerprint)}); "
                             "workers must share the client's filesystem")
    key = (ctx.vault_root, ctx.cache_dir, ctx.use_vault_index, digest)
    ws = _WORKSPACES.get(key)
    if ws is None:
        if len(_WORKSPACES) >= 4:
            _WORKSPACES.pop(next(iter(_WORKSPACES)))
        ws = _WORKSPACES[key] = Workspace(_vault(ctx), ctx.cache_dir, use_vault_index=ctx.use_vault_index)
    return ws


def _vault(ctx: TaskContext):
    """The vault the client sees, with its notes folder (a worker cannot see the client's flags)."""
    from vaulteval.vault.vault import Vault

    return Vault(ctx.vault_root, notes_dir=ctx.notes_dir, notes_dir_change=True,
                 ignore_obsidian_settings=ctx.ignore_obsidian_settings)


def _current_digest(ctx: TaskContext) -> str:
    """The vault's page fingerprint as this process sees it; re-hashed only when a page's size or mtime moved."""
    from vaulteval.errors import VaultevalError
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.fingerprint import vault_fingerprint

    try:
        vault = _vault(ctx)
        stats = tuple((p.rel, (st := p.path.stat()).st_size, st.st_mtime_ns) for p in vault.iter_pages())
    except (OSError, VaultevalError) as exc:
        raise WorkerMismatch(f"worker {worker_name()} cannot read the vault at {ctx.vault_root} ({exc}); "
                             "workers must share the client's filesystem") from None
    known = _DIGESTS.get(ctx.vault_root)
    if known is not None and known[0] == stats:
        return known[1]
    digest = vault_fingerprint(vault).digest
    _DIGESTS[ctx.vault_root] = (stats, digest)
    return digest


def short_fp(fp: str) -> str:
    return fp[:19] + "…" if fp.startswith("sha256:") else fp
