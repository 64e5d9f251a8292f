"""``vaulteval tune``: pick a retrieval strategy for the vault on its own query set, with evidence.

Usage::

    vaulteval tune --vault V --queryset Q [--test-queryset Q2] [--grid "bm25;hybrid:rrf"] [--write]
                   [--scheduler local:2|tcp://HOST:PORT]

Prints the search (tune split), the held-out confirmation (test split) and the
decision as JSON; the run directory holds the test-split evaluation and
``tune.json``. Only ``--write`` changes anything in the vault: the chosen
strategy and its index settings go into ``.vaulteval.json`` (atomically, under
the vault lock) with the run id that justified it, and when those settings
differ from the vault's index (another analyzer, k1/b or chunk sizes) the
index is provisioned again with them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaulteval.cli.common import add_scheduler_args, emit
from vaulteval.errors import EXIT_OK, UsageError

NAMES = ("tune",)


def cmd_tune(args: argparse.Namespace) -> int:
    from vaulteval.pipeline.provision import provision_tuned
    from vaulteval.pipeline.tuned import index_differs, write_tuned
    from vaulteval.querysets.queryset import load_queryset, open_queryset
    from vaulteval.vault.paths import is_inside
    from vaulteval.workbench.tune import parse_grid, tune

    vault, qs = open_queryset(args.queryset, args.vault, split=args.split)
    if is_inside(vault.root, Path(args.out)):
        raise UsageError(f"--out {args.out} is inside the vault; choose a folder outside it")
    test_qs = load_queryset(args.test_queryset, vault, split=args.test_split) if args.test_queryset else None
    grid = parse_grid(args.grid) if args.grid else None
    result = tune(vault, qs, test_queryset=test_qs, grid=grid, measure=args.measure,
                  test_fraction=args.test_fraction, seed=args.seed, out=args.out, cache_dir=args.cache,
                  run_id=args.id, scheduler=args.scheduler, allow_remote_workers=args.allow_remote_workers,
                  progress=bool(args.scheduler) or sys.stderr.isatty())
    out: dict[str, Any] = result.to_dict()
    out.pop("params", None)
    if result.decision.get("warning"):
        sys.stderr.write(f"vaulteval: warning: {result.decision['warning']}\n")
    if args.write:
        entry = write_tuned(vault, result.decision["retrieve_strategy"], run_id=result.run_dir.name,
                            evidence={"measure": args.measure, "adopted": result.decision["adopt"],
                                      "delta": result.decision.get("delta"),
                                      "p_randomization": result.decision.get("p_randomization")},
                            index=result.decision["index"])
        out["written"] = {"file": str(vault.root / ".vaulteval.json"), **entry}
        if index_differs(vault, entry["index"]):
            # The chosen analyzer, BM25 parameters or chunk sizes are the index's: rebuild it with them.
            sys.stderr.write(f"vaulteval: rebuilding the index with {entry['index']} for {entry['strategy']}\n")
            report = provision_tuned(vault, entry["index"], progress=sys.stderr)
            out["written"]["provisioned"] = True
            if report.get("embeddings_not_refreshed"):
                sys.stderr.write(f"vaulteval: warning: stored embeddings not refreshed "
                                 f"({report['embeddings_not_refreshed']}); run `vaulteval provision --embed`\n")
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
                                                  "(default: BM25 variants, field weights, dense and hybrid when embedded)")
    p.add_argument("--measure", default="nDCG@10", help="what to maximise (default: nDCG@10)")
    p.add_argument("--test-fraction", type=float, default=0.5, help="share of queries held out when splitting one set")
    p.add_argument("--seed", type=int, default=0, help="split and significance-test seed (default 0)")
    p.add_argument("--out", default="runs", help="parent folder of the run directory (default: runs)")
    p.add_argument("--id", help="run directory name")
    p.add_argument("--cache", help="evaluation cache folder (default: $VAULTEVAL_CACHE or ~/.cache/vaulteval)")
    p.add_argument("--write", action="store_true",
                   help="store the chosen strategy in the vault's .vaulteval.json (retrieve then uses it)")
    add_scheduler_args(p)
    add_vault(p)
    p.set_defaults(handler=cmd_tune)
