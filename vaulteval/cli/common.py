"""What every command group shares: the parser class, ``--vault``, JSON output.

Usage: ``from vaulteval.cli.common import emit, select_vault``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from vaulteval.errors import EXIT_USAGE


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2) instead of a usage dump."""

    def error(self, message: str):  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def emit(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def select_vault(args: argparse.Namespace):
    """The vault named by ``--vault``, the environment or a marker file."""
    from vaulteval.vault.vault import Vault

    return Vault.select(getattr(args, "vault", None))


def add_vault(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vault", metavar="PATH", help="the vault (default: $VAULTEVAL_VAULT or the nearest marker file)")


def int_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid whole number: {text!r}") from None
