"""``vaulteval queryset generate|pool|pregrade|from-log|merge`` and ``check --fix``: query sets for your own vault.

Usage::

    vaulteval queryset generate --vault V --out q.yaml --n 200 --seed 1 --kinds title,heading,negative
    vaulteval queryset pool --vault V q.yaml --strategy bm25 --strategy bm25:analyzer=english --depth 10 --out pool.yaml
    vaulteval queryset pregrade pool.yaml --out pool-pregraded.yaml --llm-model llama3.2
    vaulteval queryset merge q-ana.yaml q-ben.yaml --out q-judged.yaml

``register_actions`` is called by ``vaulteval.cli.eval`` for the ``queryset``
group; each handler parses, calls one library function and prints.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from typing import Any

from pathlib import Path

from vaulteval.errors import EXIT_OK, UsageError
from vaulteval.vault.paths import home_path


def _progress(enabled: bool) -> Callable[[str, int, int], None] | None:
    if not enabled:
        return None

    def report(what: str, done: int, total: int) -> None:
        sys.stderr.write(f"vaulteval: {what}: {done}/{total}\n")
        sys.stderr.flush()

    return report


def cmd_generate(args: argparse.Namespace) -> int:
    from vaulteval.cli.common import select_vault
    from vaulteval.querysets.generate.core import generate_queryset
    from vaulteval.querysets.generate.llm import LlmSettings
    from vaulteval.querysets.generate.mix import parse_mix

    vault = select_vault(args)
    llm = LlmSettings(model=args.llm_model, host=args.llm_host, allow_egress=args.allow_egress,
                      timeout=args.llm_timeout, per_note=args.llm_questions, api=args.llm_api)
    summary = generate_queryset(vault, args.out, kinds=args.kinds, n=args.n, seed=args.seed, llm=llm,
                                max_overlap=args.max_overlap, overlap_mix=parse_mix(args.overlap_mix),
                                progress=_progress(not args.quiet))
    if not summary["judges_semantic_strategies"]:
        sys.stderr.write(f"vaulteval: {summary['high_overlap_share']:.0%} of these queries share most of their words "
                         "with their page (overlap_band: high); the set cannot judge semantic strategies (rerank, "
                         "dense, hybrid): add --kinds llm, try --max-overlap 0.5, or judge real questions\n")
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_pool(args: argparse.Namespace) -> int:
    from vaulteval.querysets.queryset import open_queryset
    from vaulteval.vault.paths import is_inside
    from vaulteval.workbench.pooling import pool_queryset, write_pool

    from vaulteval.cli.common import vault_choice

    vault, qs = open_queryset(args.queryset, vault_choice(args))
    if is_inside(vault.root, home_path(args.out).resolve()):
        raise UsageError(f"--out {args.out} is inside the vault; write the pool outside it")
    pool = pool_queryset(vault, qs, args.strategy or ["bm25"], depth=args.depth, cache_dir=args.cache,
                         progress=_progress(not args.quiet))
    path = write_pool(pool, args.out)
    queries = len({p["query_id"] for p in pool["pairs"]})
    print(f"{len(pool['pairs'])} unjudged (query, page) pairs for {queries} queries at depth {args.depth}; wrote {path}")
    return EXIT_OK


def cmd_pregrade(args: argparse.Namespace) -> int:
    from vaulteval.querysets.generate.llm import LlmSettings
    from vaulteval.vault.paths import is_inside
    from vaulteval.workbench.pooling import read_pool, write_pool
    from vaulteval.workbench.pregrade import pregrade_pool

    pool = read_pool(args.pool)
    out = home_path(args.out).resolve()
    vault = pool.get("vault")
    if isinstance(vault, str) and vault and Path(vault).is_dir() and is_inside(Path(vault), out):
        raise UsageError(f"--out {args.out} is inside the vault; write the pool outside it")
    llm = LlmSettings(model=args.llm_model, host=args.llm_host, allow_egress=args.allow_egress, timeout=args.llm_timeout,
                      api=args.llm_api)
    try:
        summary = pregrade_pool(pool, llm, regrade=args.regrade, progress=_progress(not args.quiet))
    except UsageError as exc:
        done = getattr(exc, "summary", None)
        if done and done["graded"]:  # what was graded before the model stopped answering is kept
            write_pool(pool, out)
            raise UsageError(f"{exc}; the {done['graded']} pairs pre-graded so far are in {out}: run again on it "
                             "to go on") from None
        raise
    write_pool(pool, out)
    print(f"{summary['graded']} of {summary['pairs']} pairs pre-graded by {args.llm_model} ({summary['unanswered']} "
          f"replies without a grade, {summary['failed']} failed requests, {summary['kept']} pre-graded before and "
          f"kept); wrote {out}")
    return EXIT_OK


def cmd_from_log(args: argparse.Namespace) -> int:
    from vaulteval.cli.common import vault_choice
    from vaulteval.querysets.fromlog import logged_vault, pool_from_log

    vault = vault_choice(args) or logged_vault(args.log)
    summary = pool_from_log(args.log, vault, args.out, queryset_out=args.queryset_out)
    print(f"{summary['pairs']} (query, page) pairs for {summary['queries']} logged questions; wrote "
          f"{summary['pool']} and {summary['queryset']}")
    if summary["skipped_other_vault"]:
        print(f"note: skipped {summary['skipped_other_vault']} logged line(s) from another vault")
    if summary["pages_gone"]:
        print(f"note: {len(summary['pages_gone'])} logged page(s) are gone from the vault and were left out")
    return EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    from vaulteval.querysets.judging import merge_querysets

    summary = merge_querysets(args.querysets, args.out)
    print(f"merged {summary['queries']} queries into {summary['out']}")
    for line in summary["conflicts"]:
        print(f"conflict (kept the higher grade): {line}")
    return EXIT_OK


def abstention_lines(metrics: Any, strategies: dict[str, Any] | None = None) -> list[str]:
    """``eval run``'s suggested --min-score per run, from the metrics table's abstain_* rows.

    A threshold is on its own strategy's score scale, so the suggested command
    names the strategy's flags when ``strategies`` (run name -> Strategy) are given.
    """
    from vaulteval.workbench.abstention import MIN_KEPT

    rows = metrics[metrics.measure.str.startswith("abstain_")]
    out = []
    for run, grp in rows.groupby("run", sort=False):
        values = dict(zip(grp.measure, grp.value))
        score = next((v for m, v in values.items() if m.startswith("abstain_min_score")), None)
        kept = next((v for m, v in values.items() if m.startswith("abstain_recall_kept")), None)
        if score is not None and kept is not None and kept < MIN_KEPT:
            out.append(f"{run}: no useful threshold: the lowest --min-score with false positives at or below 10% "
                       f"of the negative queries ({score:.4g}) keeps only {kept:.0%} of the relevant pages found")
        elif score is not None and kept is not None:
            strategy = (strategies or {}).get(run)
            flags = _retrieve_flags(strategy) + " " if strategy is not None else ""
            out.append(f"{run}: retrieve {flags}--min-score {score:.4g} keeps {kept:.0%} of the relevant pages found "
                       "with false positives at or below 10% of the negative queries")
    return out


def _retrieve_flags(strategy: Any) -> str:
    """The ``retrieve`` flags that rank as ``strategy`` does on the vault's own index."""
    first = strategy.retrieve_text()
    own = ["--no-rerank"] if strategy.reranker is None else strategy.reranker.retrieve_flags()
    if own is None:  # a reranker retrieve has no flags for is written in the pipeline string
        return f"--strategy {shlex.quote(strategy.pipeline.text())}"
    return " ".join(([] if first == "bm25" else [f"--strategy {first}"]) + own)


def fix_dangling(args: argparse.Namespace, dangling: list, vault_root: Any = None) -> int:
    """``queryset check --fix OUT``: write the repaired copy, then check it; exit 2 if anything is still wrong."""
    from vaulteval.querysets.follow import write_fixed
    from vaulteval.querysets.queryset import QuerySetInvalid, open_queryset
    from vaulteval.vault.paths import is_inside

    from vaulteval.cli.common import vault_choice
    from vaulteval.querysets.follow import UNREPAIRABLE

    out = home_path(args.fix)
    if vault_root is not None and is_inside(vault_root, out.resolve()):
        raise UsageError(f"--fix {args.fix} is inside the vault; write the repaired query set outside it")
    gone = [d for d in dangling if not d.new]
    for d in gone:
        sys.stderr.write(f"{d.path}:{d.line}: query {d.query_id!r}: {d.key} cannot be repaired: its page was "
                         "deleted\n")
    if len(gone) == len(dangling):
        sys.stderr.write(f"vaulteval: nothing written: {UNREPAIRABLE} (the lines above, in {args.queryset})\n")
        return 2
    changed = write_fixed(home_path(args.queryset), dangling, out)
    print(f"fixed {changed} judgment(s); wrote {out}")
    if gone:
        sys.stderr.write(f"vaulteval: {len(gone)} judgment(s) of deleted pages are still in {out}: {UNREPAIRABLE}\n")
        return 2
    try:
        open_queryset(out, vault_choice(args))
    except QuerySetInvalid as exc:
        sys.stderr.write(f"vaulteval: {out} still has problems: {exc}\n")
        return 2
    return EXIT_OK


def report_changed(qs: Any, vault: Any) -> None:
    """Tell which judged pages changed since they were judged (their judgments may need a second look)."""
    from vaulteval.querysets.follow import changed_since_judged

    changed = changed_since_judged(qs, vault)
    if changed:
        shown = ", ".join(f"{q}:{p}" for q, p in changed[:5]) + (f", +{len(changed) - 5} more" if len(changed) > 5 else "")
        print(f"note: {len(changed)} judged page(s) changed since they were judged: {shown}")


def register_actions(qsub: Any, add_vault: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add generate (and the other query-set actions) under ``vaulteval queryset``."""
    from vaulteval.cli.common import int_arg
    from vaulteval.querysets.generate.core import DEFAULT_KINDS, KINDS

    from vaulteval.cli.written import register_written

    register_written(qsub, add_vault)
    g = qsub.add_parser("generate", help="build queries from the vault's titles, aliases, headings, links and scripts")
    g.add_argument("--out", required=True, help="the YAML query set to write (outside the vault)")
    g.add_argument("--kinds", action="append", metavar="K[,K]",
                   help=f"query kinds: {', '.join(KINDS)} (default: {','.join(DEFAULT_KINDS)})")
    g.add_argument("--n", type=int_arg, default=500, help="number of queries (default 500)")
    g.add_argument("--seed", type=int_arg, default=0, help="sampling seed; the same vault and seed give the same file")
    g.add_argument("--max-overlap", type=float, metavar="X",
                   help="keep only queries sharing at most this share (0-1) of their terms with their page")
    g.add_argument("--overlap-mix", metavar="MIX",
                   help="share the queries among overlap bands, e.g. low=0.5,mid=0.4,high=0.1; none: as generated")
    g.add_argument("--llm-api", choices=("ollama", "openai"), default="ollama",
                   help="how the llm kind talks to the model: Ollama's API, or an OpenAI-compatible server (llama.cpp's "
                   "server, LM Studio, vLLM) at --llm-host")
    g.add_argument("--llm-model", default="llama3.2", help="model for the llm kind (never pulled)")
    g.add_argument("--llm-host", help="the model server: Ollama's host (default: $OLLAMA_HOST or 127.0.0.1:11434), or "
                   "with --llm-api openai its base URL, e.g. http://127.0.0.1:8080/v1")
    g.add_argument("--llm-timeout", type=float, default=60.0, help="seconds per llm request")
    g.add_argument("--llm-questions", type=int_arg, default=2, choices=(1, 2),
                   help="questions the model writes per sampled note (default 2)")
    g.add_argument("--allow-egress", action="store_true", help="allow a non-local model host for llm (sends note text)")
    g.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_vault(g)
    g.set_defaults(handler=cmd_generate)

    p = qsub.add_parser("pool", help="depth-k pool of unjudged (query, page) pairs across strategies, with snippets")
    p.add_argument("queryset", help="YAML or JSONL query set")
    p.add_argument("--strategy", action="append", help="a strategy string; repeat (default: bm25)")
    p.add_argument("--depth", type=int_arg, default=10, help="pages per strategy and query (default 10)")
    p.add_argument("--out", required=True, help="pool YAML to write (outside the vault)")
    p.add_argument("--cache", help="evaluation cache folder (default: $VAULTEVAL_CACHE or ~/.cache/vaulteval)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_vault(p)
    p.set_defaults(handler=cmd_pool)

    r = qsub.add_parser("pregrade", help="LLM pre-grades for a pool's pairs: suggestions the judge notebook shows")
    r.add_argument("pool", help="a pool YAML from `queryset pool` or `queryset from-log`")
    r.add_argument("--out", required=True, help="the pool YAML to write with the pre-grades (outside the vault; "
                   "may be POOL itself)")
    r.add_argument("--llm-api", choices=("ollama", "openai"), default="ollama",
                   help="Ollama's API, or an OpenAI-compatible server (llama.cpp's server, LM Studio, vLLM) at --llm-host")
    r.add_argument("--llm-model", default="llama3.2", help="model that suggests grades (never pulled)")
    r.add_argument("--llm-host", help="the model server: Ollama's host (default: $OLLAMA_HOST or 127.0.0.1:11434), or "
                   "with --llm-api openai its base URL, e.g. http://127.0.0.1:8080/v1")
    r.add_argument("--llm-timeout", type=float, default=60.0, help="seconds per request")
    r.add_argument("--regrade", action="store_true", help="grade pairs that carry a pre-grade again")
    r.add_argument("--allow-egress", action="store_true", help="allow a non-local model host (sends queries and "
                   "note text)")
    r.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    r.set_defaults(handler=cmd_pregrade)

    f = qsub.add_parser("from-log", help="turn a `retrieve --log` or `mcp --log` file into a query set and a pool to judge")
    f.add_argument("log", help="the JSONL file `retrieve --log` or `mcp --log` appended to")
    f.add_argument("--out", required=True, help="pool YAML to write (outside the vault), as `queryset pool` writes")
    f.add_argument("--queryset-out", help="the query set of the logged questions (default: OUT's name + -queries.yaml)")
    add_vault(f)  # default: the vault the log names
    f.set_defaults(handler=cmd_from_log)

    m = qsub.add_parser("merge", help="combine YAML query sets and their judgments (the higher grade wins a conflict)")
    m.add_argument("querysets", nargs="+", help="two or more YAML query sets")
    m.add_argument("--out", required=True, help="the merged YAML query set to write")
    m.set_defaults(handler=cmd_merge)
