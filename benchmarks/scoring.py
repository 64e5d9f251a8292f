"""BM25 search alone, the compiled core against the Python path: CPU time a query, cold and warm searchers.

Usage::

    .venv/bin/python benchmarks/scoring.py --vault /tmp/peers2/engines/vaulteval --queries 200

Each scorer runs in a fresh process (``VAULTEVAL_PURE_PYTHON`` is read when a
searcher is made): a cold searcher (as a CLI call makes, no numpy) and a warm
one (as a ``Retriever`` kept open makes, weights preloaded), every query
analyzed beforehand and searched once first (blocks checked, segmenters
loaded), then the best of five passes at depth 100 in ``time.process_time``,
so waiting for a core on a shared machine does not count. The queries are
``benchmarks/peers.py``'s. Both paths must give the same hits; the script
checks that.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WORKER = r"""
import json, sys, time
from vaulteval.index.reader import open_index
from vaulteval.vault.vault import Vault
queries, depth = json.load(open(sys.argv[2])), int(sys.argv[3])
out = {}
for warm in (False, True):
    index = open_index(Vault(sys.argv[1]))
    searcher = index.choose_scorer(warm=warm)
    tokens = [index.analyze(q) for q in queries]
    hits = [index.search_tokens(t, depth) for t in tokens]
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for t in tokens:
            index.search_tokens(t, depth)
        best = min(best, time.process_time() - t0)
    out["warm" if warm else "cold"] = {"us": best / len(tokens) * 1e6, "compiled": searcher._core is not None,
                                       "hits": [[list(h) for h in q] for q in hits]}
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vault", type=Path, required=True, help="a provisioned vault (peers.py's engines/vaulteval)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--depth", type=int, default=100)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from peers import HAND_QUERIES
    from vaulteval.pipeline.bench import pick_queries
    from vaulteval.vault.vault import Vault

    queries = (HAND_QUERIES + pick_queries(Vault(args.vault), args.queries))[: args.queries]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(queries, fh, ensure_ascii=False)
    qfile = Path(fh.name)
    results = {}
    for name, pure in (("compiled", ""), ("Python", "1")):
        env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               "VAULTEVAL_PURE_PYTHON": pure, "OPENBLAS_NUM_THREADS": "1"}
        proc = subprocess.run([sys.executable, "-c", WORKER, str(args.vault), str(qfile), str(args.depth)],
                              capture_output=True, text=True, env=env, check=True)
        results[name] = json.loads(proc.stdout)
    qfile.unlink()
    if not results["compiled"]["cold"]["compiled"]:
        print("# the compiled core is not built here: both rows are the Python path", file=sys.stderr)
    same = all(results["compiled"][s]["hits"] == results["Python"][s]["hits"] for s in ("cold", "warm"))
    print("| scorer | cold searcher (CLI), µs a query | warm searcher (Retriever), µs a query |")
    print("|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['cold']['us']:.0f} | {r['warm']['us']:.0f} |")
    print(f"\n{len(queries)} queries at depth {args.depth}, CPU time, best of 5 passes; hits identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
