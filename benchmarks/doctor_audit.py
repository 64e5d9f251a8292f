"""``doctor`` on a provisioned vault (its findability audit checks every index row), for checkouts side by side.

Usage::

    python benchmarks/doctor_audit.py --vault /tmp/measure.NuKt/hub                          # this checkout
    python benchmarks/doctor_audit.py --vault V --checkout /work/main --checkout .           # before / after

Each checkout runs ``vaulteval doctor --json`` on the vault (read only) ``--repeat`` times in a fresh process,
alternating with the other checkouts; printed per checkout: the best wall time, with that process's CPU time
(user + system) in brackets, and whether every checkout's report is the same. Load on the machine moves wall
times; compare checkouts within one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def _once(checkout: Path, vault: str) -> tuple[float, float, bytes]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "vaulteval", "doctor", "--json", "--vault", vault],
                          env=env, cwd=checkout, capture_output=True, check=False)  # -m puts the cwd first
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", required=True)
    parser.add_argument("--checkout", action="append", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    checkouts = [c.resolve() for c in args.checkout or [Path.cwd()]]
    best: dict[Path, tuple[float, float]] = {}
    reports: dict[Path, bytes] = {}
    for _ in range(args.repeat):
        for checkout in checkouts:
            wall, cpu, out = _once(checkout, args.vault)
            reports[checkout] = out
            if checkout not in best or wall < best[checkout][0]:
                best[checkout] = (wall, cpu)
    for checkout in checkouts:
        wall, cpu = best[checkout]
        print(f"{checkout}: doctor {wall:.2f} s ({cpu:.2f} s CPU)")
    print("reports identical" if len(set(reports.values())) == 1 else "REPORTS DIFFER")


if __name__ == "__main__":
    main()
