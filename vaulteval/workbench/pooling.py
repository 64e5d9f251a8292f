"""TREC-style depth-k pooling: the pages several strategies return, for a person to judge.

Usage::

    pool = pool_queryset(vault, queryset, ["bm25", "bm25:analyzer=english"], depth=10)
    write_pool(pool, "pool.yaml")          # then notebooks/judge.ipynb, then queryset merge
    pool = read_pool("pool.yaml")          # checked: a malformed file is one UsageError line

Every (query, page) pair in any strategy's top ``depth`` that the query set
does not judge yet (at any grade) is listed once, with the strategies that
returned it, its best rank and the page's best-scoring chunk as a snippet.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.vault.paths import home_path

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.vault.vault import Vault

SNIPPET_CHARS = 600
MAX_POOL_BYTES = 64 << 20
_FIX = "write it again with `vaulteval queryset pool` or `vaulteval queryset from-log`"


def pool_queryset(vault: "Vault", queryset: "QuerySet", strategies: list[str], *, depth: int = 10,
                  cache_dir: str | os.PathLike[str] | None = None, progress=None) -> dict[str, Any]:
    """The pool as a plain mapping: header fields and ``pairs`` (sorted by query, then best rank, then page)."""
    from vaulteval.workbench.runs import run_query
    from vaulteval.workbench.api import parse_strategies
    from vaulteval.workbench.workspace import Workspace

    if not 1 <= depth <= 1000:
        raise UsageError(f"--depth must be from 1 to 1000, got {depth}")
    parsed = parse_strategies(strategies or ["bm25"], vault=vault)
    ws = Workspace(vault, cache_dir)
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for number, strategy in enumerate(parsed, 1):
        env = ws.env(strategy)
        # As `eval run` runs it (first stage, reranker, depths); a run's top pages do not depend on `top`.
        as_run = strategy if strategy.top >= depth else replace(strategy, top=depth)
        for q in queryset:
            res = run_query(env, q, as_run, ws.cache_dir / "embeddings.sqlite")
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
    """Write the pool as YAML (keys in a fixed order, Unicode as is), through a temporary file renamed over ``out``."""
    from vaulteval.querysets.generate.writer import dump_yaml
    from vaulteval.vault.atomic import write_output

    target = home_path(out)
    write_output(target, dump_yaml(pool))
    return target


def read_pool(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A pool file as ``write_pool`` writes it, checked pair by pair (a pair is named by its place and query id).

    Raises UsageError, one line, for a file that is missing, not a regular file, larger than
    ``MAX_POOL_BYTES``, not UTF-8 YAML, or whose ``pairs`` are not what the judge notebook reads.
    """
    from vaulteval.vault.bounded import Refused, load_yaml
    from vaulteval.vault.metadir import read_capped

    where = home_path(path)
    try:
        pool = load_yaml(read_capped(where, MAX_POOL_BYTES).decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read pool {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"pool {where} is not UTF-8 text; {_FIX}") from None
    except Refused as exc:
        raise UsageError(f"pool {where}, line {exc.line or 1}: {exc.problem}; {_FIX}") from None
    problem = pool_problem(pool)
    if problem:
        raise UsageError(f"pool {where}: {problem}; {_FIX}")
    return pool


_PAIR_FIELDS = (("query_id", str), ("query", str), ("page", str), ("snippet", str))


def pool_problem(pool: Any) -> str | None:
    """What keeps ``pool`` from being judged, or None."""
    if not isinstance(pool, dict) or not isinstance(pool.get("pairs"), list):
        return "expected a mapping with a 'pairs:' list"
    strategies = pool.get("strategies")
    if not isinstance(strategies, list) or not all(isinstance(one, str) for one in strategies) \
            or type(pool.get("depth")) is not int:
        return "expected 'strategies:' (a list of names) and 'depth:' (a number), as the pool commands write them"
    seen = set()
    for number, pair in enumerate(pool["pairs"], 1):
        if not isinstance(pair, dict):
            return f"pair {number} is not a mapping"
        name = f"pair {number} ({pair.get('query_id')!r})"
        if isinstance(pair.get("query_id"), int) and not isinstance(pair["query_id"], bool):
            pair["query_id"] = str(pair["query_id"])  # YAML reads an id such as 12 as a number
        for field, kind in _PAIR_FIELDS:
            if not isinstance(pair.get(field), kind):
                return f"{name} has no text '{field}'"
        strategies = pair.get("strategies", [])
        if type(pair.get("best_rank", 1)) is not int or not isinstance(strategies, list) \
                or not all(isinstance(one, str) for one in strategies):
            return f"{name}: 'best_rank' must be a number and 'strategies' a list of names"
        grade = pair.get("llm_grade")
        if grade is not None and (type(grade) is not int or grade not in (0, 1, 2)):
            return f"{name}: 'llm_grade' must be 0, 1 or 2"
        if (pair["query_id"], pair["page"]) in seen:
            return f"{name} lists page {pair['page']!r} a second time for that query"
        seen.add((pair["query_id"], pair["page"]))
    return None
