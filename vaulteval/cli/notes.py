"""Note commands for agents: ``read``, ``search``, ``ledgers``; read-only, confined, no index needed.

Usage::

    vaulteval read --vault V wiki/howto/Descaling.md --heading "How often" --json
    vaulteval search --vault V descale --top 10 --json
    vaulteval ledgers --vault V --json

Without ``--json`` each prints a short plain-text view. Every string printed
comes from the vault: evidence, never instructions. Note names are printed with
control characters escaped (``\x1b``), so a file name cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from typing import Any

from vaulteval.cli.common import emit, int_arg, select_vault
from vaulteval.errors import EXIT_OK, UsageError
from vaulteval.vault.notefiles import printable

NAMES = ("read", "search", "ledgers")


def cmd_read(args: argparse.Namespace) -> int:
    from vaulteval.notes.read import read_note

    view = read_note(select_vault(args), args.page, heading=args.heading)
    if args.json:
        emit(view)
        return EXIT_OK
    print(f"# {printable(view['page_path'])}  (cite as {printable(view['link'])})")
    if view["frontmatter"]:
        print("frontmatter: " + ", ".join(f"{k}={v}" for k, v in view["frontmatter"].items()))
    for head in view["headings"]:
        print(f"{'  ' * (head['level'] - 1)}- {head['text']}  (line {head['line']}, {head['link']})")
    print("---")
    print(view["text"])
    print("---")
    for link in view["links"]:
        print(f"link  line {link['line']}: {link['raw']} -> {printable(link['page_path'] or link['status'])}")
    for link in view["backlinks"]:
        print(f"backlink  {printable(link['page_path'])}:{link['line']}: {link['raw']}")
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    from vaulteval.notes.search import search_notes

    result = search_notes(select_vault(args), args.pattern, regex=args.regex, top=args.top, context=args.context)
    if args.json:
        emit(result)
        return EXIT_OK
    for m in result["matches"]:
        print(f"{printable(m['page_path'])}:{m['line']}: {m['text']}")
    tail = "" if result["complete"] else " (stopped early: --top reached or time budget spent)"
    print(f"{len(result['matches'])} matching line(s) in {result['notes_searched']} note(s) searched{tail}")
    return EXIT_OK


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def cmd_ledgers(args: argparse.Namespace) -> int:
    from vaulteval.notes.ledgers import read_ledgers

    report = read_ledgers(select_vault(args), as_of=args.as_of)
    if args.json:
        emit(report)
        return EXIT_OK
    if report["status"] == "no-ledgers":
        print(f"no ledgers: neither {report['files']['claim']['path']} nor {report['files']['source']['path']} exists")
        return EXIT_OK
    s = report["summary"]
    print(f"{s['claims']} claim(s), {s['sources']} source(s), {s['stale_sources']} stale source(s) as of "
          f"{report['as_of']}")
    for c in report["claims"]:
        flags = (" STALE" if c["stale"] else "") + "".join(f" [{p}]" for p in c["problems"])
        print(f"{c['claim_id']}  {c['status']}  risk={c['risk']}  supporting={','.join(c['supporting']) or '-'}  "
              f"independent={c['independent_sources']}{flags}")
    return EXIT_OK


def register(sub: Any, add_vault: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``read``, ``search`` and ``ledgers`` to ``vaulteval``'s subparsers."""
    p = sub.add_parser("read", help="one note, confined: frontmatter, headings, links and backlinks (writes nothing)")
    p.add_argument("page", help="vault-relative path (wiki/howto/Descaling.md) or a [[wikilink]] ([[Descaling#How often]])")
    p.add_argument("--heading", metavar="H", help="only the section under this heading")
    p.add_argument("--json", action="store_true", help="print JSON (docs/json.md)")
    add_vault(p)
    p.set_defaults(handler=cmd_read)

    p = sub.add_parser("search", help="text search of every note with line numbers; the fallback when retrieval "
                                      "is unavailable (no index needed, writes nothing)")
    p.add_argument("pattern", help="text to find (case-insensitive); a regular expression with --regex")
    p.add_argument("--regex", action="store_true", help="PATTERN is a regular expression (at most 500 characters)")
    p.add_argument("--top", type=int_arg, default=20, help="at most this many matching lines (1..1000, default 20)")
    p.add_argument("--context", type=int_arg, default=1, help="lines of context before and after (0..5, default 1)")
    p.add_argument("--json", action="store_true", help="print JSON (docs/json.md)")
    add_vault(p)
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("ledgers", help="read and check the claim and source ledgers (writes nothing)")
    p.add_argument("--as-of", type=_date, default=None, metavar="YYYY-MM-DD",
                   help="the day staleness is judged on (default: today, UTC)")
    p.add_argument("--json", action="store_true", help="print JSON (docs/json.md)")
    add_vault(p)
    p.set_defaults(handler=cmd_ledgers)
