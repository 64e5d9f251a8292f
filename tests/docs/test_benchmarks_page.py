"""docs/benchmarks.md stays a results page: one section per question, its current table and command."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "docs" / "benchmarks.md"
MAX_LINES = 600  # dated logs and superseded figures go to commit messages, not this page


def test_the_benchmarks_page_stays_within_its_line_limit() -> None:
    lines = len(BENCHMARKS.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, (
        f"docs/benchmarks.md is {lines} lines, over its limit of {MAX_LINES}: keep each section's current table "
        "and command, and move superseded figures and history to commit messages")
