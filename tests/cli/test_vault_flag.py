"""The README and docs/cli.md say exactly which commands take ``--vault``; the parser decides.

Usage: ``.venv/bin/python -m pytest tests/cli/test_vault_flag.py -q``
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from vaulteval.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for action in subs:
        for name, child in action.choices.items():
            yield from _leaves(child, path + (name,))


def _takes_vault() -> tuple[set[str], set[str], set[str]]:
    """(commands with --vault, their subcommands without it, commands without it anywhere)."""
    leaves: dict[str, dict[str, bool]] = {}
    for path, parser in _leaves(build_parser()):
        has = any("--vault" in a.option_strings for a in parser._actions)
        leaves.setdefault(path[0], {})[" ".join(path)] = has
    with_vault = {c for c, subs in leaves.items() if any(subs.values())}
    exceptions = {name for c in with_vault for name, has in leaves[c].items() if not has}
    return with_vault, exceptions, set(leaves) - with_vault


def _claims(text: str) -> tuple[set[str], set[str], set[str]]:
    flat = " ".join(text.split())
    m = re.search(r"Every command that works on a vault \((.*?)\) takes `--vault PATH`(.*?); (.*?) make a new vault",
                  flat)
    assert m, "the sentence naming which commands take --vault is missing"
    return (set(re.findall(r"`([a-z]+)`", m.group(1))), set(re.findall(r"`([a-z ]+)`", m.group(2))),
            set(re.findall(r"`([a-z]+)`", m.group(3))))


def test_readme_names_exactly_the_commands_that_take_vault() -> None:
    assert _claims((REPO / "README.md").read_text(encoding="utf-8")) == _takes_vault()
    assert "Every command takes `--vault" not in (REPO / "README.md").read_text(encoding="utf-8")


def test_cli_doc_names_exactly_the_commands_that_take_vault() -> None:
    assert _claims((REPO / "docs" / "cli.md").read_text(encoding="utf-8")) == _takes_vault()
