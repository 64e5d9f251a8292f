"""The fuzz suite prints how many inputs it fed each target (and writes them to $VAULTEVAL_FUZZ_REPORT)."""

from __future__ import annotations

import json
import os

from fuzzkit import FUZZED, examples


def pytest_terminal_summary(terminalreporter) -> None:
    if not FUZZED:
        return
    terminalreporter.section(f"inputs fuzzed per target (VAULTEVAL_FUZZ_EXAMPLES={examples()} per test)")
    for target, n in sorted(FUZZED.items()):
        terminalreporter.write_line(f"{target:<24} {n:>8,}")
    terminalreporter.write_line(f"{'total':<24} {sum(FUZZED.values()):>8,}")
    if os.environ.get("VAULTEVAL_FUZZ_REPORT"):
        with open(os.environ["VAULTEVAL_FUZZ_REPORT"], "w", encoding="utf-8") as fh:
            json.dump(dict(sorted(FUZZED.items())), fh, indent=2)
