"""TREC-style depth-k pooling: the pages several strategies return, for a person to judge.

Usage::

    pool = pool_queryset(vault, queryset, ["bm25", "bm25:analyzer=english"], depth=10)
    write_pool(pool, "pool.yaml")          # then notebooks/judge.ipynb, then queryset merge

Every (query, page) pair in any strategy's top ``depth`` that the query set
does not judge yet (at any grade) is listed once, with the strategies that
returned it, its best rank and the page's best-scoring chunk as a snippet.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.vault.vault import Vault

SNIPPET_CHARS = 600


def pool_queryset(vault: "Vault", queryset: "QuerySet", strategies: list[str], *, depth: int = 10,
                  cache_dir: str | os.PathLike[str] | None = None, progress=None) -> dict[str, Any]:
    """The pool as a plain mapping: header fields and ``pairs`` (sorted by query, then best rank, then page)."""
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace

    if not 1 <= depth <= 1000:
        raise UsageError(f"--depth must be from 1 to 1000, got {depth}")
    parsed = [Strategy.parse(s) for s in strategies or ["bm25"]]
    ws = Workspace(vault, cache_dir)
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for number, strategy in enumerate(parsed, 1):
        env = ws.env(strategy)
        for q in queryset:
            res = env.retriever.retrieve(q.text, top=depth, bm25_top=max(strategy.bm25_top, depth),
                                         rerank=strategy.rerank, embed_cache=ws.cache_dir / "embeddings.sqlite")
            for rank, cand in enumerate(res.candidates[:depth], 1):
                if cand.page_path in q.relevant:
                    continue
                entry = pairs.setdefault((q.query_id, cand.page_path), {
                    "query_id": q.query_id, "query": q.text, "page": cand.page_path, "best_rank": rank,
                    "strategies": [], "snippet": " ".join(cand.snippet.split())[:SNIPPET_CHARS]})
                if strategy.name not in entry["strategies"]:
                    entry["strategies"].append(strategy.name)
                if rank < entry["best_rank"]:
                    entry["best_rank"], entry["snippet"] = rank, " ".join(cand.snippet.split())[:SNIPPET_CHARS]
        if progress is not None:
            progress(f"pooled {strategy.name}", number, len(parsed))
    order = {q.query_id: i for i, q in enumerate(queryset)}
    listed = sorted(pairs.values(), key=lambda p: (order[p["query_id"]], p["best_rank"], p["page"]))
    return {"queryset": str(Path(queryset.path).resolve()), "queryset_sha256": queryset.sha256,
            "vault": str(vault.root), "depth": depth, "strategies": [s.name for s in parsed],
            "strategy_specs": list(strategies or ["bm25"]), "pairs": listed}


def write_pool(pool: dict[str, Any], out: str | os.PathLike[str]) -> Path:
    """Write the pool as YAML (keys in a fixed order, Unicode as is)."""
    from vaulteval.querysets.generate.writer import dump_yaml

    target = Path(out).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump_yaml(pool), encoding="utf-8")
    return target
