"""CLI `retrieve --no-rerank` timed beside bare Python and Python + numpy starts (and another checkout), interleaved.

Usage::

    .venv/bin/python benchmarks/cli_ab.py --vault /tmp/tldr-vault --rounds 15
    .venv/bin/python benchmarks/cli_ab.py --vault /tmp/tldr-vault --other /tmp/main-src /tmp/tldr-main
    .venv/bin/python benchmarks/cli_ab.py --vault /tmp/tldr-vault --other /tmp/main-src /tmp/tldr-main --in-process 3

Every round runs each variant once, so all of them see the same machine load;
the table gives p50 / p95 / min per variant and the load average. ``--other
SRC VAULT`` adds a second source tree (for instance an export of main) with
its own provisioned copy of the vault, since index formats may differ.
``--in-process N`` instead times 1,000 queries in one process (the loop of
``vaulteval bench``), alternating the trees N times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["extract a tar archive", "list docker containers", "git rebase interactive", "convert image png to jpg",
           "show disk usage of a folder", "ssh port forwarding", "compress a file with gzip", "find files by name"]


# Runs inside each tree: the same 1,000 queries as `vaulteval bench`, one Retriever, integrity checks included.
_IN_PROCESS = """
import sys, time
import vaulteval.pipeline.bench as bench
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.vault.vault import Vault
pick = getattr(bench, "pick_queries", None) or bench._pick_queries
vault = Vault(sys.argv[1]); queries = pick(vault, 1000); r = Retriever(vault); r.retrieve(queries[0], top=5)
t0 = time.perf_counter()
for q in queries:
    r.retrieve(q, top=5)
print(time.perf_counter() - t0)
"""


def in_process(trees: list[tuple[str, str, str]], rounds: int) -> int:
    times: dict[str, list[float]] = {name: [] for name, _src, _vault in trees}
    for _ in range(rounds):
        for name, src, vault in trees:
            proc = subprocess.run([sys.executable, "-c", _IN_PROCESS, vault], env=dict(os.environ, PYTHONPATH=src),
                                  capture_output=True, text=True, cwd="/")
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed: {proc.stderr.strip()[-500:]}")
            times[name].append(float(proc.stdout.split()[-1]))
    print(f"load average {os.getloadavg()[0]:.2f}, 1,000 in-process queries, {rounds} alternating runs")
    for name, ts in times.items():
        print(f"| {name} | {' / '.join(f'{t:.2f} s' for t in ts)} |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vault", required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--other", nargs=2, metavar=("SRC", "VAULT"), help="another source tree and its vault")
    ap.add_argument("--in-process", type=int, metavar="N", help="time 1,000 in-process queries N times instead")
    args = ap.parse_args()
    if args.in_process:
        trees = ([("other", *args.other)] if args.other else []) + [("this checkout", str(REPO), args.vault)]
        return in_process(trees, args.in_process)
    variants: dict[str, tuple[str | None, list[str]]] = {"bare python": (None, ["-c", "pass"]),
                                                         "python + numpy": (None, ["-c", "import numpy"])}
    if args.other:
        variants["other"] = (args.other[0], ["-m", "vaulteval", "retrieve", "--vault", args.other[1]])
    variants["this checkout"] = (str(REPO), ["-m", "vaulteval", "retrieve", "--vault", args.vault])
    times: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(args.rounds):
        for name, (src, cmd) in variants.items():
            env = dict(os.environ, PYTHONPATH=src) if src else dict(os.environ)
            full = [sys.executable, *cmd] + ([QUERIES[r % len(QUERIES)], "--no-rerank"] if src else [])
            t0 = time.perf_counter()
            proc = subprocess.run(full, env=env, capture_output=True, cwd="/")  # cwd: never import a tree by accident
            times[name].append(time.perf_counter() - t0)
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed: {proc.stderr.decode(errors='replace').strip()}")
    print(f"load average {os.getloadavg()[0]:.2f}, {args.rounds} rounds\n| variant | p50 | p95 | min |\n|---|---|---|---|")
    for name, ts in times.items():
        ts.sort()
        print(f"| {name} | {statistics.median(ts):.3f} s | {ts[round(0.95 * (len(ts) - 1))]:.3f} s | {ts[0]:.3f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
