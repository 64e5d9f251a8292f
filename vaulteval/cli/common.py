"""What every command group shares: the parser class, ``--vault``, JSON output.

Usage: ``from vaulteval.cli.common import emit, select_vault``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.errors import EXIT_USAGE


def _columns() -> int:
    """The terminal width as shutil.get_terminal_size finds it, without importing shutil (and bz2, lzma)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, **kwargs: Any):
        kwargs.setdefault("width", _columns() - 2)
        super().__init__(prog, **kwargs)


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2) instead of a usage dump."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def emit(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def select_vault(args: argparse.Namespace, *, notes_dir_change: bool = False):
    """The vault named by ``--vault``, the environment or a marker file (``notes_dir_change``: provision
    --rebuild may move the recorded notes folder)."""
    from vaulteval.vault.vault import Vault

    return Vault.select(getattr(args, "vault", None), notes_dir=getattr(args, "notes_dir", None),
                        notes_dir_change=notes_dir_change,
                        ignore_obsidian_settings=getattr(args, "ignore_obsidian_settings", False))


def vault_choice(args: argparse.Namespace):
    """For commands that may also find the vault elsewhere (a query set, a run): a Vault when the
    user named one or its notes folder, else None."""
    if getattr(args, "vault", None) or getattr(args, "notes_dir", None) is not None \
            or getattr(args, "ignore_obsidian_settings", False):
        return select_vault(args)
    return None


def add_vault(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vault", metavar="PATH", help="the vault (default: $VAULTEVAL_VAULT or the nearest marker file)")
    p.add_argument("--notes-dir", metavar="DIR", dest="notes_dir",
                   help="the folder holding the notes, relative to the vault (default: the folder provision "
                        "--notes-dir recorded, else \"notes_dir\" in .vaulteval.json, else wiki/ when it exists, "
                        "else the vault root when .obsidian/ exists)")
    p.add_argument("--ignore-obsidian-settings", action="store_true",
                   help="go on when .obsidian/app.json cannot be read or its excluded-files filters cannot be "
                        "applied (then nothing is excluded); without it such a vault is refused")


def int_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid whole number: {text!r}") from None


def add_scheduler_args(p: argparse.ArgumentParser) -> None:
    """``--scheduler`` and ``--allow-remote-workers``, as ``eval run`` and ``tune`` take them."""
    p.add_argument("--scheduler", metavar="local[:N]|tcp://HOST:PORT",
                   help="run the strategies as Dask tasks: local:N starts N worker processes on this machine, "
                        "tcp://HOST:PORT uses a running scheduler (needs vaulteval[dask]; workers must see the "
                        "same files); the results are the same as without it")
    p.add_argument("--allow-remote-workers", action="store_true",
                   help="allow a scheduler or workers that are not on this machine (sends queries and note text there)")
