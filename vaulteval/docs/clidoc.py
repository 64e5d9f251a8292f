"""The command reference of docs/cli.md, written from the CLI's argparse parsers.

Usage::

    print(command_reference())        # every command's usage, arguments, defaults and help, as Markdown
    python -m vaulteval.docs          # rewrites it (and every other generated part) in place

Everything comes from ``vaulteval.cli.main.build_parser()``, formatted at a fixed
width (``WIDTH``), so the terminal the generator runs in changes nothing.
"""

from __future__ import annotations

import argparse
import re

from vaulteval.cli.common import Formatter, Parser, add_vault
from vaulteval.cli.main import build_parser

WIDTH = 100  # the usage lines' wrap width, whatever the terminal is


def _formatter(prog: str) -> Formatter:
    return Formatter(prog, width=WIDTH)


def _escape(text: str) -> str:
    """Help text as Markdown that renders as written (no emphasis, no HTML tags; backticks stay code)."""
    return re.sub(r"([\\*<])", r"\\\1", " ".join(text.split()))


def _sentence(text: str) -> str:
    text = _escape(text)
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")


def _vault_options() -> set[tuple[tuple[str, ...], str]]:
    """The options ``add_vault`` gives a command, as (option strings, help): listed once, not per command."""
    probe = Parser(prog="probe")
    add_vault(probe)
    return {(tuple(a.option_strings), a.help) for a in probe._actions if a.option_strings != ["-h", "--help"]}


def _default(action: argparse.Action) -> str | None:
    """The default as the parser holds it, or None when there is nothing worth saying."""
    value = action.default
    if value is None or value is argparse.SUPPRESS or action.nargs == 0 or value == []:
        return None
    if isinstance(value, (list, tuple)):
        value = " ".join(map(str, value))
    return f"`{value}`"


def _invocation(action: argparse.Action, formatter: Formatter) -> str:
    """``-o, --out DIR``: the option strings, then the value's form once (as argparse 3.13 writes it)."""
    if not action.option_strings:
        return formatter._metavar_formatter(action, action.dest)(1)[0]
    names = ", ".join(action.option_strings)
    return names if action.nargs == 0 else f"{names} {formatter._format_args(action, action.dest.upper())}"


def _argument(action: argparse.Action, formatter: Formatter) -> str:
    invocation = _invocation(action, formatter)
    help_text = formatter._expand_help(action) if action.help else ""
    line = f"- `{invocation}`"
    default = _default(action)
    if default and "default" not in (help_text or "").lower():
        line += f" (default: {default})"
    return line + (f": {_escape(help_text)}" if help_text else "")


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _section(path: list[str], summary: str, parser: argparse.ArgumentParser,
             shared: set[tuple[tuple[str, ...], str]]) -> list[str]:
    parser.formatter_class = _formatter
    formatter = _formatter(parser.prog)
    usage = parser.format_usage().strip()
    out = [f"### `{' '.join(path)}`", ""]
    if summary:
        out += [_sentence(summary), ""]
    out += ["```text", usage, "```", ""]
    if parser.description:
        out += [_escape(parser.description), ""]
    arguments = [a for a in parser._actions
                 if a.help is not argparse.SUPPRESS and not isinstance(a, (argparse._HelpAction,
                                                                             argparse._SubParsersAction))]
    own = [a for a in arguments if (tuple(a.option_strings), a.help) not in shared]
    out += [_argument(a, formatter) for a in own]
    if len(own) < len(arguments):
        out.append("- the vault options: " + ", ".join(f"`{a.option_strings[-1]}`" for a in arguments if a not in own))
    if arguments:
        out.append("")
    children = _subcommands(parser)
    if children:
        out += ["Subcommands: " + ", ".join(f"`{name}`" for name, _, _ in children) + ".", ""]
    if parser.epilog:
        out += ["```text", parser.epilog.strip(), "```", ""]
    for name, help_text, sub in children:
        out += _section([*path, name], help_text, sub, shared)
    return out


def vault_options() -> list[str]:
    """The vault options, once: how every command that works on a vault finds it."""
    probe = Parser(prog="probe")
    add_vault(probe)
    formatter = _formatter("probe")
    return [_argument(a, formatter) for a in probe._actions if a.option_strings != ["-h", "--help"]]


def command_reference() -> str:
    """Every command and subcommand of ``vaulteval``: usage line, arguments with defaults and help."""
    lines = ["Every command that works on a vault takes the vault options ([Vault selection](#vault-selection)):",
             "", *vault_options(), ""]
    return "\n".join(lines + _section(["vaulteval"], "", build_parser(), _vault_options())).strip()
