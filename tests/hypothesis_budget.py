"""How many examples each hypothesis test draws: ``VAULTEVAL_FUZZ_EXAMPLES`` (default 20).

Usage: ``@settings(max_examples=examples())``. ``make test`` keeps the default,
which keeps property tests cheap and, with conftest's fixed-draw profile, the same on every run;
``make reliability`` sets thousands, drawn anew each run.
"""

from __future__ import annotations

import os

DEFAULT_EXAMPLES = 20


def examples() -> int:
    return int(os.environ.get("VAULTEVAL_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
