"""Usage: ``python -m vaulteval retrieve --vault V "query"``."""

from .cli import main

raise SystemExit(main())
