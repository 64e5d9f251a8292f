"""``vaulteval tune``: pick a retrieval strategy for the vault on its own query set, with evidence.

Usage::

    vaulteval tune --vault V --queryset Q [--test-queryset Q2] [--grid "bm25;hybrid:rrf"] [--write [--force]]
                   [--scheduler local:2|tcp://HOST:PORT] [--allow-stale]

Prints the search (tune split), the held-out confirmation (test split) and the
decision as JSON, and the verdict (adopt, keep or inconclusive) as one line on
stderr; the run directory holds the test-split evaluation and ``tune.json``.
Only ``--write`` changes anything in the vault, and only on ``adopt`` (or
with ``--force``): the pipeline (first stage, reranker or none, depth) and its
index settings go into ``.vaulteval.json`` (atomically, under the vault lock)
with the run id that justified it, and when those settings differ from the
vault's index (another analyzer, k1/b or chunk sizes) the index is provisioned
again with them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaulteval.cli.common import add_scheduler_args, emit, vault_choice
from vaulteval.errors import EXIT_OK, UsageError

NAMES = ("tune",)


def cmd_tune(args: argparse.Namespace) -> int:
    from vaulteval.pipeline.provision import provision_tuned
    from vaulteval.pipeline.tuned import index_differs, write_tuned
    from vaulteval.querysets.queryset import load_queryset, open_queryset
    from vaulteval.vault.paths import is_inside
    from vaulteval.workbench.grid import parse_grid
    from vaulteval.workbench.tune import tune
    from vaulteval.workbench.evidence import evidence_line
    from vaulteval.workbench.verdict import verdict_line

    if args.force and not args.write:
        raise UsageError("--force only changes what --write does; add --write")
    vault, qs = open_queryset(args.queryset, vault_choice(args), split=args.split)
    if is_inside(vault.root, Path(args.out)):
        raise UsageError(f"--out {args.out} is inside the vault; choose a folder outside it")
    test_qs = load_queryset(args.test_queryset, vault, split=args.test_split) if args.test_queryset else None
    grid = parse_grid(args.grid) if args.grid else None
    result = tune(vault, qs, test_queryset=test_qs, grid=grid, measure=args.measure,
                  test_fraction=args.test_fraction, seed=args.seed, out=args.out, cache_dir=args.cache,
                  run_id=args.id, scheduler=args.scheduler, allow_remote_workers=args.allow_remote_workers,
                  progress=bool(args.scheduler) or sys.stderr.isatty(), allow_stale=args.allow_stale,
                  baseline=args.baseline)
    out: dict[str, Any] = result.to_dict()
    out.pop("params", None)
    decision = result.decision
    if decision.get("stale"):
        sys.stderr.write(f"vaulteval: warning: {decision['stale']}\n")
    sys.stderr.write(f"vaulteval: baseline: {result.baseline} ({decision['baseline_source']})\n")
    sys.stderr.write(f"vaulteval: {verdict_line(decision, result.best, result.baseline)}\n")
    sys.stderr.write(f"vaulteval: {evidence_line(decision['evidence'], decision.get('regression'))}\n")
    if decision.get("warning"):
        sys.stderr.write(f"vaulteval: warning: {decision['warning']}\n")
    if args.write and decision["verdict"] != "adopt" and not args.force:
        sys.stderr.write(f"vaulteval: not written: the verdict is {decision['verdict']}, not adopt "
                         "(--force writes the best strategy anyway)\n")
    elif args.write:
        # adopt writes the chosen (= best) pipeline; --force writes the best one whatever the verdict.
        pipeline, index = decision["best_retrieve"], decision["best_index"]
        entry = write_tuned(vault, pipeline["strategy"], run_id=result.run_dir.name,
                            evidence={"measure": args.measure, "verdict": decision["verdict"],
                                      "forced": decision["verdict"] != "adopt", "delta": decision.get("delta"),
                                      "ci95": decision.get("ci95"),
                                      "p": decision.get("p")},
                            index=index, rerank=pipeline["rerank"], bm25_top=pipeline["bm25_top"])
        out["written"] = {"file": str(vault.root / ".vaulteval.json"), **entry}
        if index_differs(vault, entry["index"]):
            # The chosen analyzer, BM25 parameters or chunk sizes are the index's: rebuild it with them.
            sys.stderr.write(f"vaulteval: rebuilding the index with {entry['index']} for {entry['strategy']}\n")
            report = provision_tuned(vault, entry["index"], progress=sys.stderr)
            out["written"]["provisioned"] = True
            if report.get("embeddings_not_refreshed"):
                from vaulteval.pipeline.provision import embed_refresh_command

                sys.stderr.write(f"vaulteval: warning: stored embeddings not refreshed "
                                 f"({report['embeddings_not_refreshed']}); run `{embed_refresh_command(vault)}`\n")
    emit(out)
    return EXIT_OK


def register(sub: Any, add_vault: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``tune`` to ``vaulteval``'s subparsers."""
    p = sub.add_parser("tune", help="search strategies on a tune split, confirm on a test split, optionally --write")
    p.add_argument("--queryset", required=True, help="query set; its queries are split into tune and test halves "
                                                     "unless --test-queryset is given")
    p.add_argument("--split", default="test", help="BEIR split of --queryset (default: test)")
    p.add_argument("--test-queryset", help="a separate held-out query set (then --queryset is all tune split)")
    p.add_argument("--test-split", default="test", help="BEIR split of --test-queryset (default: test)")
    p.add_argument("--grid", metavar="SPEC", help="strategies separated by ';', or @FILE with one per line "
                                                  "(default: every analyzer, BM25 variants and field weights; with "
                                                  "stored embeddings also dense, hybrid and the store's reranker)")
    p.add_argument("--baseline", default="default", metavar="default|tuned|STRATEGY",
                   help="what the best strategy must beat: default (the untuned default pipeline, the default), "
                        "tuned (the pipeline .vaulteval.json holds) or a strategy string")
    p.add_argument("--measure", default="nDCG@10", help="what to maximise (default: nDCG@10)")
    p.add_argument("--test-fraction", type=float, default=0.5, help="share of queries held out when splitting one set")
    p.add_argument("--seed", type=int, default=0, help="split and significance-test seed (default 0)")
    p.add_argument("--out", default="runs", help="parent folder of the run directory (default: runs)")
    p.add_argument("--id", help="run directory name")
    p.add_argument("--cache", help="evaluation cache folder (default: $VAULTEVAL_CACHE or ~/.cache/vaulteval)")
    p.add_argument("--write", action="store_true",
                   help="on an adopt verdict, store the pipeline in the vault's .vaulteval.json (retrieve then "
                        "runs exactly it)")
    p.add_argument("--force", action="store_true",
                   help="with --write: store the best strategy even when the verdict is keep or inconclusive")
    p.add_argument("--allow-stale", action="store_true",
                   help="tune on the vault's index even when notes changed since it was built (exit 10 otherwise)")
    add_scheduler_args(p)
    add_vault(p)
    p.set_defaults(handler=cmd_tune)
