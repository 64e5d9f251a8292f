"""Usage: ``python -m vaulteval retrieve --vault V "query"``."""

from vaulteval.cli.main import main

raise SystemExit(main())
