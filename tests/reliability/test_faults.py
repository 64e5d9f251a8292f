"""Crash consistency and concurrency: the fast configuration runs in ``make test``, the full one in
``make reliability`` (``VAULTEVAL_RELIABILITY=full``: 50 kill points, 60 s of concurrent load).

Usage: ``VAULTEVAL_RELIABILITY=full .venv/bin/python -m pytest tests/reliability/test_faults.py -q -s``
(``-s`` shows the figures docs/benchmarks.md quotes under "Reliability and fuzzing").
"""

from __future__ import annotations

import json
from pathlib import Path

from faults import FULL, concurrency_suite, crash_points, crash_suite


def _show(name: str, stats: dict) -> None:
    print(f"\n{name}: {json.dumps(stats, sort_keys=True)}")


def test_crash_points_cover_every_phase() -> None:
    points = crash_points(50)
    assert len(points) == len(set(points)) == 50
    names = {p.split("#")[0] for _, p in points}
    assert {"locked", "chunk-written", "segment-written", "catalog-staged", "catalog-written", "build-started",
            "index-serialised", "index-published"} <= names
    assert {c for c, _ in points} == {"provision", "index"}


def test_killed_provisioning_never_serves_a_mixed_index(tmp_path: Path) -> None:
    """SIGKILL at named points: retrieve serves a complete, consistent index or exits 10; the next
    provision completes; notes and everything outside the vault are byte-identical."""
    stats = crash_suite(tmp_path, 50 if FULL else 7)
    _show("crash", stats)
    assert stats["failures"] == [] and stats["survived"] == stats["points"]
    assert stats["bytes_notes"] == 0 and stats["bytes_outside"] == 0
    assert set(stats["retrieve_exits"]) <= {"0", 0}  # the previous generation stays in service


def test_concurrent_retrieves_never_serve_a_changed_page(tmp_path: Path) -> None:
    """Four looping readers and one editor that rewrites a page and provisions, for 8 s (60 s in full):
    readers never see a missing index (no exit 10) and never old text served as current."""
    stats = concurrency_suite(tmp_path, 60 if FULL else 8)
    _show("concurrency", stats)
    assert set(stats["exits"]) == {0}, stats["errors"]
    assert stats["stale_served"] == 0
    assert stats["queries"] >= 4 and stats["edits"] >= 1 and stats["worker_exits"] == [0] * 5
    assert stats["exits"].get(0, 0) > 0, "no query was ever served"
    assert stats["churn_hits"] > 0, "the readers never saw the pages being edited"
    assert stats["bytes_notes"] == 0 and stats["bytes_outside"] == 0
