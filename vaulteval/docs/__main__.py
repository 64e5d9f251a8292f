"""Rewrite every generated part of ``docs/`` from the code: ``python -m vaulteval.docs [--check] [DOCS_DIR]``.

DOCS_DIR defaults to the ``docs/`` folder of the source checkout this package is in.
``--check`` writes nothing: it lists the parts that are out of date and exits 1 if any are.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vaulteval.docs.parts import COMMAND, rewrite, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="?", type=Path, default=Path(__file__).resolve().parents[2] / "docs",
                        help="the docs folder (default: the source checkout's docs/)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a part is out of date")
    args = parser.parse_args(argv)
    if not args.docs.is_dir():
        sys.stderr.write(f"{COMMAND}: error: {args.docs} is not a folder; name the checkout's docs/ folder\n")
        return 2
    try:
        if args.check:
            out_of_date = stale(args.docs)
            for line in out_of_date:
                print(f"out of date: {line}")
            return 1 if out_of_date else 0
        changed = rewrite(args.docs)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{COMMAND}: error: {exc}\n")
        return 2
    print("rewritten: " + ", ".join(changed) if changed else "every generated part is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
