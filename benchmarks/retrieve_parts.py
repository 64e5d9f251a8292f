"""A warm retrieve taken apart: opening, the first pass, then CPU time a query for each part.

Usage::

    .venv/bin/python benchmarks/retrieve_parts.py --vault /tmp/peers2/engines/vaulteval --queries /tmp/peers2/queries.json
    .venv/bin/python benchmarks/retrieve_parts.py --vault V --queries Q --checkout /tmp/before   # another tree

One fresh process per tree: ``Retriever.open()`` (wall and CPU seconds), the first pass over the queries
(``retrieve(q, top=5)``: every analyzer, word and served chunk met for the first time), then the best of five
passes in ``time.process_time`` of a whole retrieve, the query's analysis, the BM25 search at depth 100 and
20, and the checks of the five chunks a query serves (record, note, index row, text). ``--queries`` is a JSON
list (``benchmarks/peers.py`` writes one in its work folder).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WORKER = r"""
import json, sys, time
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.vault.vault import Vault
queries = json.load(open(sys.argv[2]))
r = Retriever(Vault(sys.argv[1]))
t, c = time.perf_counter(), time.process_time()
index = r.open()
out = {"open_s": time.perf_counter() - t, "open_cpu_s": time.process_time() - c}
t, c = time.perf_counter(), time.process_time()
for q in queries:
    r.retrieve(q, top=5)
out.update(first_pass_s=time.perf_counter() - t, first_pass_cpu_s=time.process_time() - c)
tokens = [index.analyze(q) for q in queries]
served = [[index.doc(h.doc) for h in index.search_tokens(t, 5)] for t in tokens]
checker = r.integrity()
def check():
    for docs in served:
        one = checker.query()
        for doc in docs:
            one.current_record(doc)
def best(fn):
    times = []
    for _ in range(5):
        c = time.process_time()
        fn()
        times.append(time.process_time() - c)
    return min(times) / len(queries) * 1e6
out["retrieve_us"] = best(lambda: [r.retrieve(q, top=5) for q in queries])
out["analyze_us"] = best(lambda: [index.analyze(q) for q in queries])
out["search_depth100_us"] = best(lambda: [index.search_tokens(t, 100) for t in tokens])
out["search_depth20_us"] = best(lambda: [index.search_tokens(t, 20) for t in tokens])
out["check_5_chunks_us"] = best(check)
print(json.dumps(out))
"""


def measure(checkout: Path, vault: Path, queries: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    proc = subprocess.run([sys.executable, "-c", WORKER, str(vault), str(queries)], env=env, capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vault", type=Path, required=True, help="a provisioned vault (peers.py's engines/vaulteval)")
    ap.add_argument("--queries", type=Path, required=True, help="a JSON list of queries")
    ap.add_argument("--checkout", type=Path, default=REPO, help="the vaulteval tree to measure (default: this one)")
    args = ap.parse_args(argv)
    out = measure(args.checkout, args.vault, args.queries)
    print(f"{args.checkout}: open {out['open_s']:.2f} s (CPU {out['open_cpu_s']:.2f} s), first pass "
          f"{out['first_pass_s']:.3f} s (CPU {out['first_pass_cpu_s']:.3f} s); CPU µs a query: retrieve "
          f"{out['retrieve_us']:.0f}, analysis {out['analyze_us']:.0f}, search depth 100 {out['search_depth100_us']:.0f}"
          f" / depth 20 {out['search_depth20_us']:.0f}, five served chunks checked {out['check_5_chunks_us']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
