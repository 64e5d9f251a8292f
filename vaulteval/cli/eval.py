"""Workbench subcommands: ``queryset check``, ``import beir``, ``eval run|verify|compare``.

Usage::

    vaulteval queryset check --vault V querysets/sample-vault.yaml
    vaulteval import beir /data/scifact --out /tmp/scifact --split test
    vaulteval eval run --vault V --queryset Q --strategy bm25 --strategy bm25:analyzer=english --out runs/
    vaulteval eval verify runs/<id>
    vaulteval eval compare runs/<a> runs/<b> --baseline bm25
    vaulteval eval compare querysets/baseline-run runs/<new> --measures nDCG@10 --fail-on worse   # a CI gate
    vaulteval eval run --vault V --queryset Q --strategy bm25 --strategy rerank:st --notebooks evaluate,rerank_impact
    vaulteval eval run --vault V --queryset Q --strategy bm25 --strategy bm25:k1=1.2 --scheduler local:2
    vaulteval notebooks            # the bundled notebooks and their parameters

Each handler parses arguments, calls one library function and prints; the
heavy modules (pandas, scipy, ir-measures) are imported inside handlers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaulteval.cli.common import add_scheduler_args, vault_choice
from vaulteval.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from vaulteval.vault.paths import home_path

NAMES = ("queryset", "import", "eval", "notebooks")

def cmd_queryset_check(args: argparse.Namespace) -> int:
    from vaulteval.querysets.queryset import QuerySetInvalid, open_queryset

    try:
        vault, qs = open_queryset(args.queryset, vault_choice(args), qrels=args.qrels, split=args.split)
    except QuerySetInvalid as exc:
        for problem in exc.problems:
            sys.stderr.write(f"{problem}\n")
        if args.fix and getattr(exc, "dangling", None):
            from vaulteval.cli.querysets import fix_dangling

            return fix_dangling(args, exc.dangling, exc.vault_root)
        sys.stderr.write(f"vaulteval: {len(exc.problems)} problem(s) in {args.queryset}\n")
        return EXIT_USAGE
    s = qs.summary()
    print(f"ok: {s['queries']} queries ({s['positive']} with relevant pages, {s['negative']} negative), "
          f"{s['judgments']} judgments, resolved in {vault.root}")
    from vaulteval.cli.querysets import report_changed

    report_changed(qs, vault)
    return EXIT_OK


def cmd_import_beir(args: argparse.Namespace) -> int:
    from vaulteval.querysets.beir import import_beir

    report = import_beir(args.source, args.out, split=args.split, name=args.name)
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_eval_run(args: argparse.Namespace) -> int:
    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.querysets.queryset import open_queryset
    from vaulteval.workbench.report import interval_table, markdown_table

    from vaulteval.vault.paths import is_inside

    from vaulteval.workbench.manifest import check_run_id

    if args.id is not None:
        check_run_id(args.id)  # before any work: the id becomes a folder name
    notebooks, overrides = _notebook_choice(args)
    vault, qs = open_queryset(args.queryset, vault_choice(args), qrels=args.qrels, split=args.split)
    if is_inside(vault.root, Path(args.out)):
        raise UsageError(f"--out {args.out} is inside the vault; evaluation never writes the vault, "
                         "choose a folder outside it")
    ev = evaluate(vault, qs, args.strategy or ["bm25"], measures=_measures(args.measures), k=args.k,
                  baseline=args.baseline, cache_dir=args.cache, use_vault_index=not args.cache_index,
                  progress=bool(args.scheduler) or sys.stderr.isatty(), allow_remote_ollama=args.allow_remote_ollama,
                  condensed=args.condensed, scheduler=args.scheduler, allow_remote_workers=args.allow_remote_workers,
                  allow_stale=args.allow_stale)
    path = ev.save(args.out, run_id=args.id)
    from vaulteval.workbench.headline import headline_of_dir

    # The headline first (stale index, inputs, each comparison with its verdict), read back from the run's files.
    headline = headline_of_dir(path)
    print(headline.text())
    print(markdown_table(interval_table(ev.metrics[ev.metrics.measure.isin(ev.measures)], digits=3)))
    print("(mean [95% bootstrap interval] over the queries with a relevant page)")
    shown = set(headline.warnings)
    for note in ev.report.notes:  # fallbacks are on their comparison's line; MDEs are in the headline and report.md
        if note not in shown and not note.startswith(("with ", "WARNING ")):
            print(note)
    if not headline.comparisons:
        for note in ev.report.notes:
            if note.startswith("WARNING "):
                print(note)
    from vaulteval.cli.querysets import abstention_lines

    for line in abstention_lines(ev.metrics, {r.name: r.strategy for r in ev.runs}):
        print(line)
    print(f"{len(ev.misses)} misses at k={ev.k}; {ev.seconds:.2f} s")
    if notebooks:
        from vaulteval.notebooks.run import run_for_eval

        context = {"vault": str(vault.root), "queryset": str(home_path(args.queryset).resolve()),
                   "k": args.k, "strategies": list(args.strategy or ["bm25"]),
                   "cache": str(home_path(args.cache).resolve()) if args.cache else None}
        for done in run_for_eval(notebooks, path, context, overrides):
            print(f"notebook: {path / done['file']}")
    print(path)
    return EXIT_OK


def _notebook_choice(args: argparse.Namespace) -> tuple[list[str], dict[str, Any]]:
    """The --notebooks names and --notebook-param values, checked before any evaluation starts."""
    if not args.notebooks:
        if args.notebook_param:
            raise UsageError("--notebook-param needs --notebooks NAME[,NAME...]")
        return [], {}
    from vaulteval.notebooks.run import check_overrides, parse_names

    if args.qrels:
        raise UsageError("--notebooks reads YAML, JSONL or BEIR query sets; TREC topics with --qrels are not supported")
    notebooks, overrides = parse_names(args.notebooks), _notebook_params(args.notebook_param or [])
    check_overrides(notebooks, overrides)
    return notebooks, overrides


def _notebook_params(items: list[str]) -> dict[str, Any]:
    from vaulteval.vault.bounded import Refused, load_yaml

    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip().isidentifier():
            raise UsageError(f"--notebook-param expects NAME=VALUE, got {item!r}")
        try:
            out[key.strip()] = load_yaml(value) if value.strip() else ""
        except Refused:
            out[key.strip()] = value
    return out


def cmd_notebooks(args: argparse.Namespace) -> int:
    from vaulteval.notebooks import run as nr

    if args.refresh is not None:
        for path in nr.refresh(nr.parse_names(args.refresh) if args.refresh else None):
            print(f"refreshed {path.name}")
        return EXIT_OK
    described = nr.describe()
    if args.json:
        print(json.dumps(described, indent=2, ensure_ascii=False))
        return EXIT_OK
    print(f"notebooks in {nr.NOTEBOOK_DIR} (run: vaulteval eval run ... --notebooks NAME[,NAME])")
    for nb in described:
        print(f"\n{nb['name']}: {nb['title']}")
        for name, p in nb["parameters"].items():
            print(f"  {name} = {p['default']}" + (f"  # {p['help']}" if p["help"] else ""))
    return EXIT_OK


def cmd_eval_verify(args: argparse.Namespace) -> int:
    from vaulteval.workbench.verify import verify_run

    result = verify_run(args.run, vault=args.vault, notes_dir=args.notes_dir, cache_dir=args.cache,
                        allow_remote_ollama=args.allow_remote_ollama)
    if result.ok:
        print(f"verified: {args.run} reproduces exactly")
        return EXIT_OK
    print(f"NOT reproduced: {args.run} ({len(result.diffs)} difference(s))")
    for line in result.diffs:
        print(f"  {line}")
    return EXIT_FAILED


def cmd_eval_compare(args: argparse.Namespace) -> int:
    from vaulteval.workbench.manifest import compare_run_dirs

    report = compare_run_dirs(args.runs, baseline=args.baseline, measures=_measures(args.measures), k=args.k,
                              vault=vault_choice(args))
    if args.out:
        report.save(args.out)
    print(report.to_markdown())
    if not args.fail_on:
        return EXIT_OK
    from vaulteval.workbench.compare import gate

    failed = gate(report, args.fail_on)
    for line in failed:
        print(f"gate: {line}")
    if failed:
        print(f"gate: FAILED: {len(failed)} comparison(s) {args.fail_on}, by the test above")
        return EXIT_FAILED
    print(f"gate: passed: no comparison is {args.fail_on}")
    return EXIT_OK


def _measures(value: list[str] | None) -> list[str] | None:
    if not value:
        return None
    return [m for item in value for m in item.replace(",", " ").split()]


def _remote_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-remote-ollama", action="store_true",
                   help="allow rerank strategies whose Ollama host is not this machine (sends queries and notes there)")


def _qs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--qrels", help="TREC qrels file (the query set is then a TREC topics file)")
    p.add_argument("--split", default="test", help="BEIR split to read (default: test)")


def register(sub: Any, add_vault: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add the workbench commands to ``vaulteval``'s subparsers."""
    raw = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("queryset", help="check a query set against a vault")
    qsub = p.add_subparsers(dest="queryset_cmd", metavar="ACTION", required=True, parser_class=type(p))
    c = qsub.add_parser("check", help="validate: exit 0 when valid, 2 with file:line problems")
    c.add_argument("queryset", help="YAML, JSONL, BEIR folder, or TREC topics (with --qrels)")
    c.add_argument("--fix", metavar="OUT", help="write a copy with moved or renamed pages' judgments repaired")
    _qs_args(c)
    add_vault(c)
    c.set_defaults(handler=cmd_queryset_check)
    from vaulteval.cli.querysets import register_actions

    register_actions(qsub, add_vault)

    p = sub.add_parser("import", help="turn a benchmark into a vault and a query set")
    isub = p.add_subparsers(dest="import_cmd", metavar="FORMAT", required=True, parser_class=type(p))
    b = isub.add_parser("beir", help="one note per BEIR document (wiki/<id>.md) + VAULT/querysets/<name>-<split>.yaml")
    b.add_argument("source", help="BEIR folder: corpus.jsonl(.gz), queries.jsonl, qrels/<split>.tsv")
    b.add_argument("--out", required=True, help="new vault folder (must be empty or missing)")
    b.add_argument("--split", default="test")
    b.add_argument("--name", help="vault and query set name (default: the folder name)")
    b.set_defaults(handler=cmd_import_beir)

    p = sub.add_parser("eval", help="evaluate strategies on a query set; verify and compare run directories")
    esub = p.add_subparsers(dest="eval_cmd", metavar="ACTION", required=True, parser_class=type(p))
    from vaulteval.workbench.strategydoc import strategy_help  # the grammar and keys, from the stage registry

    r = esub.add_parser("run", help="run strategies, write runs/<id>/", epilog=strategy_help(), formatter_class=raw)
    r.add_argument("--queryset", required=True, help="query set (YAML, JSONL, BEIR folder, TREC topics)")
    _qs_args(r)
    r.add_argument("--strategy", action="append", help="a strategy string; repeat to compare (default: bm25)")
    r.add_argument("--out", default="runs", help="parent folder of the run directory (default: runs)")
    r.add_argument("--id", help="run directory name (default: <UTC time>-<query set>)")
    r.add_argument("--measures", nargs="+", help="ir-measures names, e.g. nDCG@10 R@100 RR (default: nDCG, R, P, Success @k, RR, AP)")
    r.add_argument("--k", type=int, default=10, help="cutoff for the default measures and for misses (default 10)")
    r.add_argument("--baseline", help="strategy name to compare against (default: the first)")
    r.add_argument("--cache", help="evaluation cache folder (default: $VAULTEVAL_CACHE or ~/.cache/vaulteval)")
    r.add_argument("--condensed", action="store_true", help="also score condensed lists (unjudged pages removed): "
                   "metrics rows condensed:<measure>")
    r.add_argument("--cache-index", action="store_true", help="build every index in the cache, even when the vault's fits")
    r.add_argument("--allow-stale", action="store_true", help="evaluate the vault's index even when notes changed "
                   "since it was built (exit 10 otherwise); the stale page count heads the output and the report")
    r.add_argument("--notebooks", metavar="NAME[,NAME]", help="also execute these notebooks (papermill) into the "
                   "run directory, e.g. evaluate,rerank_impact; see `vaulteval notebooks`")
    r.add_argument("--notebook-param", action="append", metavar="NAME=VALUE",
                   help="a notebook parameter (YAML value), for every chosen notebook that takes it; repeatable")
    _remote_flag(r)
    add_scheduler_args(r)
    add_vault(r)
    r.set_defaults(handler=cmd_eval_run)

    v = esub.add_parser("verify", help="recompute a run directory; exit 1 with a diff if anything differs")
    v.add_argument("run", help="runs/<id>")
    v.add_argument("--cache", help="evaluation cache folder")
    _remote_flag(v)
    add_vault(v)
    v.set_defaults(handler=cmd_eval_verify)

    n = sub.add_parser("notebooks", help="list the bundled notebooks and their parameters")
    n.add_argument("--json", action="store_true", help="as JSON")
    n.add_argument("--refresh", nargs="*", metavar="NAME",
                   help="maintainers: re-execute bundled notebooks in place to store their outputs (default: all)")
    n.set_defaults(handler=cmd_notebooks)

    m = esub.add_parser("compare", help="compare the runs of run directories (one query set)")
    m.add_argument("runs", nargs="+", help="runs/<id> folders")
    m.add_argument("--baseline", help="run name to compare against (default: the first)")
    m.add_argument("--measures", nargs="+")
    m.add_argument("--k", type=int)
    m.add_argument("--out", help="also save the report (.md, .html, .json, .csv)")
    m.add_argument("--fail-on", choices=["worse"], help="exit 1 when the verdict for any compared measure is "
                   "'worse' (the paired t-test of each run against the baseline, Bonferroni across the runs): a CI gate")
    add_vault(m)
    m.set_defaults(handler=cmd_eval_compare)
