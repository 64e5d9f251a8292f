"""Benchmark: a 12-setting sweep on SciFact, serially and on a local Dask cluster; wall time and speedup.

Usage::

    .venv/bin/vaulteval import beir "$SCIFACT" --out /tmp/scifact --split test
    .venv/bin/python benchmarks/dask_sweep.py --vault /tmp/scifact --scheduler local:2

The grid is k1 in (0.9, 1.2, 1.5) x b in (0.6, 0.75) x target in (1000, 2000)
chunk characters: 12 settings, plus the default that every sweep adds. Each
run starts from its own empty evaluation cache, so both build the two chunk
variants and run every query of every setting; the Dask run also pays for
starting its cluster. The two sweep tables must be equal (the script stops
otherwise). Not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from vaulteval.querysets.queryset import open_queryset
from vaulteval.workbench.sweep import Grid, sweep

GRID = Grid(k1=[0.9, 1.2, 1.5], b=[0.6, 0.75], target=[1000, 2000])


def timed_sweep(vault, qs, scheduler: str | None, cache: Path) -> tuple[float, object]:
    started = time.perf_counter()
    result = sweep(vault, qs, GRID, measure="nDCG@10", cache_dir=cache, scheduler=scheduler, progress=bool(scheduler))
    return time.perf_counter() - started, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vault", required=True, help="a SciFact vault made by `vaulteval import beir`")
    ap.add_argument("--queryset", help="default: VAULT/querysets/scifact-test.yaml")
    ap.add_argument("--scheduler", default="local:2", help="the Dask executor to compare with (default local:2)")
    args = ap.parse_args()
    qs_path = args.queryset or str(Path(args.vault) / "querysets" / "scifact-test.yaml")
    vault, qs = open_queryset(qs_path, args.vault)
    print(f"{len(qs)} queries, {len(GRID.strategies())} settings + default; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="dask-sweep-") as tmp:
        serial_s, serial = timed_sweep(vault, qs, None, Path(tmp) / "serial")
        print(f"serial      {serial_s:7.1f} s")
        dask_s, dask = timed_sweep(vault, qs, args.scheduler, Path(tmp) / "dask")
        print(f"{args.scheduler:<11} {dask_s:7.1f} s")
    assert serial.table.equals(dask.table), "the two executors disagree"
    print(f"speedup {serial_s / dask_s:.2f}x; tables identical; best {serial.best.name} "
          f"(tuning {serial.ranked().iloc[0].tune:.4f})")


if __name__ == "__main__":
    main()
