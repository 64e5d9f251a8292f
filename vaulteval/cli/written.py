"""``vaulteval queryset worksheet`` and ``queryset add-written``: questions written from sampled notes.

Usage::

    vaulteval queryset worksheet --vault V --n 60 --out ws.yaml --seed 7
    vaulteval queryset add-written ws.yaml --out written.yaml
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from vaulteval.errors import EXIT_OK


def cmd_worksheet(args: argparse.Namespace) -> int:
    from vaulteval.cli.common import select_vault
    from vaulteval.querysets.written.worksheet import make_worksheet

    summary = make_worksheet(select_vault(args), args.out, n=args.n, seed=args.seed)
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_add_written(args: argparse.Namespace) -> int:
    from vaulteval.cli.common import vault_choice
    from vaulteval.querysets.written.add import add_written

    summary = add_written(args.worksheet, args.out, vault=vault_choice(args), writer=args.writer)
    for line in summary.pop("flagged_lines"):
        print(f"flagged: {line}")
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return EXIT_OK


def register_written(qsub: Any, add_vault: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add worksheet and add-written under ``vaulteval queryset``."""
    from vaulteval.cli.common import int_arg

    w = qsub.add_parser("worksheet", help="sample notes for a writer to ask questions about (agent or person)")
    w.add_argument("--out", required=True, help="the worksheet YAML to write (outside the vault)")
    w.add_argument("--n", type=int_arg, default=60, help="notes to sample (default 60)")
    w.add_argument("--seed", type=int_arg, default=0, help="sampling seed; the same vault and seed give the same file")
    add_vault(w)
    w.set_defaults(handler=cmd_worksheet)

    a = qsub.add_parser("add-written", help="check a filled-in worksheet's questions and write them as a query set")
    a.add_argument("worksheet", help="a worksheet from `queryset worksheet` with its questions written in")
    a.add_argument("--out", required=True, help="the YAML query set to write (outside the vault)")
    a.add_argument("--writer", help="who wrote the questions: agent, person or model:<name> (default: the "
                   "worksheet's writer:)")
    add_vault(a)
    a.set_defaults(handler=cmd_add_written)
