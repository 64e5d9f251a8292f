"""The query hot path counted in CPU instructions (valgrind), so a loaded machine gives the same figures.

Usage::

    python benchmarks/instructions.py --vault /tmp/tldr-vault                      # cold CLI and in-process loop
    python benchmarks/instructions.py --vault /tmp/tldr-vault --tantivy /tmp/peers/engines/tantivy
    python benchmarks/instructions.py --vault V --checkout /path/to/other/checkout   # the same for another tree

Wall-clock times on the project's shared 2-core machine move by 2x with the
load; instructions retired do not (the interpreter starts from cached
bytecode, hash seed 0). Each figure is millions of instructions (callgrind's
``Collected``) of one fresh process:

- ``python -c pass``: the interpreter alone;
- a cold CLI ``python -m vaulteval retrieve --no-rerank --top 5`` (``--query``), as a user starts it (the
  process entry ``vaulteval.cli.run``; before 2026-12-02 08:00 this row called ``cli.main.main`` through
  ``python -c``, which skips ``runpy``'s imports, as ``benchmarks/peers.py`` still does);
- the same query through tantivy in a fresh process (``--tantivy``: an index ``peers.py`` built);
- an open warm ``Retriever`` answering ``--queries`` queries (``pick_queries``) once, then again:
  the first pass reads and verifies every candidate for the first time, the second finds each verdict
  remembered by stat signature. Reported per query, with the set-up (imports, opening) subtracted;
- with ``--json``, the same two passes turning each answer into the JSON an MCP ``search`` returns
  (``RetrievalResult.to_dict``: snippets, matched terms, lines and headings of each served chunk).

Needs valgrind on the PATH; runs several minutes (valgrind is about 50x slower than the program).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TANTIVY = ("import json, re, sys, tantivy\nindex = tantivy.Index.open(sys.argv[1]); s = index.searcher()\n"
           "words = re.findall(r'\\w+', sys.argv[2])\n"
           "print([s.doc(a)['path'][0] for _, a in s.search(index.parse_query(' '.join(words), ['body']), 5).hits])")
LOOP = ("import json, sys\nfrom vaulteval.pipeline.retrieve import Retriever\nfrom vaulteval.vault.vault import Vault\n"
        "qs = json.load(open(sys.argv[2])); r = Retriever(Vault(sys.argv[1])); r.retrieve('warm up', top=5)\n"
        "for _ in range(int(sys.argv[3])):\n    for q in qs: r.retrieve(q, top=5)\n")
# The same, each answer turned into the JSON an MCP ``search`` returns (snippets, matched terms, lines, headings).
LOOP_JSON = LOOP.replace("r.retrieve('warm up', top=5)", "json.dumps(r.retrieve('warm up', top=5).to_dict())").replace(
    "for q in qs: r.retrieve(q, top=5)", "for q in qs: json.dumps(r.retrieve(q, top=5).to_dict())")


def instructions(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Millions of instructions of one run of ``argv`` under callgrind (in ``cwd``: ``python -c`` puts the
    working folder first on the path, so it must not hold another checkout)."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          capture_output=True, text=True, env=env, cwd=cwd)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"{argv[:3]}...: exit {proc.returncode}: {proc.stderr[-1500:]}")
    return int(found.group(1)) / 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vault", required=True, type=Path, help="a provisioned vault (the tldr pages, docs/benchmarks.md)")
    ap.add_argument("--checkout", type=Path, default=REPO, help="the vaulteval tree to measure (default: this one)")
    ap.add_argument("--tantivy", type=Path, help="a tantivy index of the same pages (benchmarks/peers.py builds one)")
    ap.add_argument("--query", default="list docker containers")
    ap.add_argument("--queries", type=int, default=200, help="queries in the in-process passes")
    ap.add_argument("--json", action="store_true", help="also the passes that build each answer's served JSON")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not on the PATH")
    work = Path(tempfile.mkdtemp(prefix="vaulteval-instr-"))
    env = {**os.environ, "PYTHONPATH": str(args.checkout.resolve()), "PYTHONHASHSEED": "0",
           "PYTHONPYCACHEPREFIX": str(work / "pycache"), "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.path.insert(0, str(args.checkout.resolve()))
    from vaulteval.pipeline.bench import pick_queries
    from vaulteval.vault.vault import Vault

    qfile = work / "queries.json"
    qfile.write_text(json.dumps(pick_queries(Vault(args.vault), args.queries), ensure_ascii=False))
    py = sys.executable
    runs = {
        "bare": [py, "-c", "pass"],
        "cli": [py, "-m", "vaulteval", "retrieve", "--vault", str(args.vault), args.query, "--no-rerank", "--top", "5"],
        "setup": [py, "-c", LOOP, str(args.vault), str(qfile), "0"],
        "pass1": [py, "-c", LOOP, str(args.vault), str(qfile), "1"],
        "pass2": [py, "-c", LOOP, str(args.vault), str(qfile), "2"],
    }
    if args.json:
        runs.update({f"json-{name}": [py, "-c", LOOP_JSON, str(args.vault), str(qfile), passes]
                     for name, passes in (("setup", "0"), ("pass1", "1"), ("pass2", "2"))})
    if args.tantivy:
        runs["tantivy"] = [py, "-c", TANTIVY, str(args.tantivy), args.query]
    for name in ("cli", "setup", "json-setup", "tantivy"):  # compile and cache every module first, uncounted
        if name in runs:
            subprocess.run(runs[name], env=env, capture_output=True, check=True, cwd=work)
    got = {name: instructions(argv, env, work) for name, argv in runs.items()}
    n = args.queries
    print(f"checkout {args.checkout}, vault {args.vault}, query {args.query!r}")
    print("| measure | M instructions |\n|---|---|")
    print(f"| `python -c pass` | {got['bare']:.1f} |")
    print(f"| cold CLI `python -m vaulteval retrieve --no-rerank --top 5` (above the bare interpreter) | {got['cli']:.1f} "
          f"({got['cli'] - got['bare']:.1f}) |")
    if "tantivy" in got:
        print(f"| cold tantivy query (above the bare interpreter) | {got['tantivy']:.1f} "
              f"({got['tantivy'] - got['bare']:.1f}) |")
        print(f"| ratio vaulteval / tantivy, whole process | {got['cli'] / got['tantivy']:.2f}x |")
    print(f"| in-process, first pass over {n} new queries, per query | {(got['pass1'] - got['setup']) / n:.2f} |")
    print(f"| in-process, the same {n} queries again, per query | {(got['pass2'] - got['pass1']) / n:.2f} |")
    if args.json:
        print(f"| with the served JSON, first pass over {n} new queries, per query | "
              f"{(got['json-pass1'] - got['json-setup']) / n:.2f} |")
        print(f"| with the served JSON, the same {n} queries again, per query | "
              f"{(got['json-pass2'] - got['json-pass1']) / n:.2f} |")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
