"""A test-only hook: stop at a named point so a fault test can kill the process there.

Usage: ``pause_point("chunk-written")``. Inert unless ``VAULTEVAL_TEST_PAUSE_AT``
names the point (``NAME`` or ``NAME#N`` for its N-th occurrence, 1-based); then
the process writes the name to ``$VAULTEVAL_TEST_PAUSE_FILE`` (if set) and
sleeps until it is killed, or until ``$VAULTEVAL_TEST_RESUME_FILE`` (if set)
exists, so a race test can change the vault mid-run and let it go on.
"""

from __future__ import annotations

import os
import time

_SEEN: dict[str, int] = {}


def pause_point(name: str) -> None:
    target = os.environ.get("VAULTEVAL_TEST_PAUSE_AT")
    if not target:
        return
    point, _, nth = target.partition("#")
    if point != name:
        return
    _SEEN[name] = _SEEN.get(name, 0) + 1
    if _SEEN[name] != (int(nth) if nth else 1):
        return
    flag = os.environ.get("VAULTEVAL_TEST_PAUSE_FILE")
    if flag:
        with open(flag, "w", encoding="utf-8") as fh:
            fh.write(target)
    resume = os.environ.get("VAULTEVAL_TEST_RESUME_FILE")
    while not (resume and os.path.exists(resume)):
        time.sleep(0.05 if resume else 60)
