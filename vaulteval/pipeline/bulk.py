"""Fewer garbage collections while a writer builds large structures.

Usage::

    with bulk_work():
        ...  # provision or index build: hundreds of thousands of live catalog entries, rows and records

CPython runs a collection every 700 new container objects, and every so often a full one that walks
every live object; a build that keeps a 45,000-page catalog and its records alive while allocating
more pays for those walks over and over (about a sixth of an incremental provision of tldr). The
builds create almost no reference cycles, so collecting a hundred times less often costs no memory
worth mentioning; the thresholds are put back afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

BULK_GEN0 = 100_000  # new container objects between collections while building (CPython's default: 700)


@contextmanager
def bulk_work() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], BULK_GEN0), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
