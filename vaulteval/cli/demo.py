"""``vaulteval demo``: the bundled sample vault, end to end, in a temporary folder.

Usage: ``run_demo(out=None)`` prints what it does and returns the folder it used.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

DEMO_QUERY = "how do I descale the espresso machine"


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_demo(out: str | None = None, layout: str = "wiki") -> Path:
    from vaulteval.cli.sample import copy_sample
    from vaulteval.pipeline.provision import provision
    from vaulteval.pipeline.retrieve import retrieve
    from vaulteval.vault.vault import Vault

    base = Path(out) if out else Path(tempfile.mkdtemp(prefix="vaulteval-demo-"))
    vault_dir = copy_sample(base / "sample-vault", layout=layout)
    _say(f"== sample vault copied to {vault_dir} ({layout} layout)")
    vault = Vault(vault_dir)
    report = provision(vault)
    _say(f"== provisioned: {report['prefix']['pages_seen']} pages, {report['index']['docs']} chunks, "
         f"{report['index']['terms']} terms in {report['seconds']['total']:.2f} s")
    result = retrieve(vault, DEMO_QUERY, top=3, explain=True)
    _say(f"== vaulteval retrieve --vault {vault_dir} {DEMO_QUERY!r} --top 3 --no-rerank --explain")
    _say(result.to_json())
    for extra in DEMO_STEPS:
        extra(vault, base)
    return base


DEMO_STRATEGIES = ["bm25", "bm25:analyzer=english", "rerank:st,bm25_top=20"]
DEMO_NOTEBOOKS = ["evaluate", "rerank_impact"]


def notebooks_step(vault, base: Path) -> Path | None:
    """Evaluate the sample query set on the demo vault, then execute two notebooks into the run directory.

    The same calls as ``vaulteval eval run --notebooks evaluate,rerank_impact``;
    the reranker is the offline MiniLM, and every cache stays under ``base``.
    """
    import importlib.util
    import os

    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.notebooks.support import SAMPLE_QUERYSET
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.workbench.report import interval_table, markdown_table

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # the MiniLM load bar would interleave the output
    # A plain-layout copy carries the same query set with root-relative page keys.
    qs_path = vault.root / "querysets" / "sample-vault.yaml" if not vault.notes_rel else SAMPLE_QUERYSET
    qs = load_queryset(qs_path, vault)
    cache = base / "cache"
    _say(f"== vaulteval eval run --vault {vault.root} --queryset {qs_path} "
         + " ".join(f"--strategy {s}" for s in DEMO_STRATEGIES) + f" --notebooks {','.join(DEMO_NOTEBOOKS)}")
    ev = evaluate(vault, qs, DEMO_STRATEGIES, cache_dir=cache)
    run_dir = ev.save(base / "runs", run_id="demo")
    _say(markdown_table(interval_table(ev.metrics)))
    for note in ev.report.notes:
        _say(note)
    if importlib.util.find_spec("papermill") is None:
        _say(f"== run directory: {run_dir} (notebooks skipped: install vaulteval[notebook] for papermill)")
        return run_dir
    from vaulteval.notebooks.run import run_for_eval

    context = {"vault": str(vault.root), "queryset": str(qs_path), "k": ev.k,
               "strategies": DEMO_STRATEGIES, "cache": str(cache)}
    done = run_for_eval(DEMO_NOTEBOOKS, run_dir, context)
    _say(f"== run directory: {run_dir}")
    for nb in done:
        _say(f"== executed notebook: {run_dir / nb['file']}")
    return run_dir


def generated_step(vault, base: Path) -> Path:
    """Your own vault's loop on the sample: generate a query set, evaluate two strategies, report with intervals."""
    from vaulteval.querysets.generate.core import generate_queryset
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.workbench.evaluate import evaluate

    out = base / "querysets" / "generated.yaml"
    _say(f"== vaulteval queryset generate --vault {vault.root} --out {out} --n 120 --seed 0")
    summary = generate_queryset(vault, out, n=120, seed=0)
    kinds = ", ".join(f"{k} {n}" for k, n in summary["by_kind"].items())
    _say(f"{summary['queries']} queries ({kinds}); {summary['tune']} tune / {summary['test']} test")
    strategies = ["bm25", "bm25:analyzer=english"]
    _say(f"== vaulteval eval run --vault {vault.root} --queryset {out} "
         + " ".join(f"--strategy {s}" for s in strategies) + " --measures nDCG@10 Success@10")
    ev = evaluate(vault, load_queryset(out, vault), strategies, measures=["nDCG@10", "Success@10"],
                  cache_dir=base / "cache")
    run_dir = ev.save(base / "runs", run_id="generated")
    _say((run_dir / "report.md").read_text(encoding="utf-8").split("## Candidate pool")[0].rstrip())
    _say(f"== report with 95% intervals: {run_dir / 'report.md'}; by kind, tag, script, folder: "
         f"{run_dir / 'metrics.csv'}")
    return run_dir


# Steps after retrieval: fn(vault, base_dir).
DEMO_STEPS: list = [generated_step, notebooks_step]
