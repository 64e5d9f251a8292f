"""Shared pieces of the fuzz suite: the example budget, the per-target counter and the CLI oracle.

Usage (in a fuzz test)::

    @fuzz_settings()
    @given(st.text())
    def test_x(text):
        count("queries")
        code, err = cli_ok("retrieve", "--vault", root, "--no-rerank", "--", text, codes={0, 2})

``VAULTEVAL_FUZZ_EXAMPLES`` sets the examples per test (default 20, which keeps
the suite well under a minute); ``make reliability`` runs it with thousands.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from hypothesis_budget import examples
from pipeline_fixtures import run_main

# docs/exit-codes.md: every code a command may end with (130 is Ctrl-C, never expected here).
DOCUMENTED_CODES = {0, 1, 2, 3, 10, 11, 12}
FUZZED: Counter[str] = Counter()


def fuzz_settings(scale: float = 1.0):
    """Hypothesis settings for one target: the budget from the environment, no deadline (a shared CPU)."""
    return settings(max_examples=max(1, int(examples() * scale)), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.large_base_example])


def count(target: str) -> None:
    FUZZED[target] += 1


def cli_ok(*args: Any, codes: set[int] = DOCUMENTED_CODES) -> tuple[int, str, str]:
    """Run ``main(args)`` in this process; the exit code is one of ``codes`` and stderr is clean.

    Clean: no traceback, no ``internal error``, and a failure is reported in one line.
    """
    code, out, err = run_main(*args)
    assert code in codes, f"exit {code} not in {sorted(codes)} for {args!r}: {err[-500:]}"
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    if code != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        if code == 1 and not lines:
            assert out.strip(), f"exit 1 without a word for {args!r}"  # eval verify lists differences on stdout
        elif args[:2] != ("queryset", "check"):  # a check lists every problem, one per line
            assert len(lines) == 1, f"stderr is not one line for exit {code}: {err[-500:]!r}"
    return code, out, err


class Scratch:
    """A throwaway folder per example (hypothesis reruns a test body many times in one tmp_path)."""

    def __init__(self, base: Path):
        self.base = base

    def __enter__(self) -> Path:
        self.path = Path(tempfile.mkdtemp(dir=self.base))
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
