"""What ``analyzer=auto`` costs on the tldr vault (40 languages, 38k pages): provisioning time against
``default``'s, and CLI query latency, with the languages each query was analyzed in.

Usage::

    mkdir -p /tmp/tldr && tar -xzf "$TLDR" -C /tmp/tldr
    .venv/bin/python benchmarks/languages_cost.py --tldr-dir /tmp/tldr --work /tmp/lang-cost [--queries 20]

Both vaults are fresh copies of the pages (``wiki/``) provisioned from scratch by the CLI in a
fresh process, one after the other. Queries are ``vaulteval bench``'s (a random page's title and
first words, so in that page's language), each in a fresh ``vaulteval retrieve`` process.
Targets (issue 25): auto's provision at most 2x default's; CLI p50 at most 0.15 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def provision(root: Path, analyzer: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the provisioning process): on a shared machine the CPU time is the fair one."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "vaulteval", "provision", "--vault", str(root), "--analyzer", analyzer],
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"provision --analyzer {analyzer} failed: {proc.stderr.strip()[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(time.perf_counter() - t0, 1), round(cpu, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tldr-dir", required=True, help="the unpacked tldr archive (its pages*/ folders)")
    ap.add_argument("--work", required=True, help="a scratch folder for the two vaults")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--skip-default", action="store_true", help="time only auto (default measured before)")
    args = ap.parse_args()
    from vaulteval.pipeline.bench import cli_latency, pick_queries
    from vaulteval.vault.vault import Vault

    work = Path(args.work)
    times = {}
    for analyzer in (["auto"] if args.skip_default else ["default", "auto"]):
        root = work / analyzer
        shutil.rmtree(root, ignore_errors=True)
        (root / ".obsidian").mkdir(parents=True)
        shutil.copytree(Path(args.tldr_dir), root / "wiki", ignore=shutil.ignore_patterns("LICENSE*"))
        times[analyzer] = provision(root, analyzer)
    auto = work / "auto"
    from vaulteval.pipeline.retrieve import Retriever

    index = Retriever(Vault(auto)).index()
    queries = pick_queries(Vault(auto), args.queries)
    latency = cli_latency(auto, queries)
    analyze = index._analyzer.languages  # the QueryAnalyzer: which languages each query is analyzed in
    per_query = []
    for q in queries:
        analyze(q)
        per_query.append((q[:40], "+".join(analyze.last)))
    report = {"provision_wall_cpu_s": times,
              "cpu_ratio": round(times["auto"][1] / times["default"][1], 2) if "default" in times else None,
              "languages": len(index.header.get("languages", {})), "n_docs": index.n_docs, **latency,
              "queries": per_query}
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
