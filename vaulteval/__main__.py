"""``python -m vaulteval``: the same process entry as the ``vaulteval`` command (``cli.run``).

Usage: ``python -m vaulteval retrieve --vault V "query"``.
"""

from vaulteval.cli import run

run()
