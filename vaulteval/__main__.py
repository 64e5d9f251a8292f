"""Usage: ``python -m vaulteval retrieve --vault V "query"``."""

from vaulteval.cli import run

run()
