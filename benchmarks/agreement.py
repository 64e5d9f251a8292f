"""Agreement check: do a generated query set and the hand-written one rank strategies the same way?

Usage (from the repo root, with the venv):

    .venv/bin/python benchmarks/agreement.py --out /tmp/agreement [--n 200] [--seed 0]

Copies the sample vault, generates a query set from it, evaluates four
strategies on the generated set and on ``querysets/sample-vault.yaml``, ranks
them by nDCG@10 on each, and reports Kendall's tau between the two rankings
(``scipy.stats.kendalltau``), overall and for each generated kind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRATEGIES = ["bm25", "bm25:analyzer=english", "bm25:k1=0.3,b=0.1,name=bm25-flat", "bm25:target=300,overlap=0,name=bm25-small-chunks"]


def main() -> int:
    from scipy import stats

    from vaulteval.cli.sample import copy_sample
    from vaulteval.querysets.generate.core import generate_queryset
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.evaluate import evaluate

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    base = Path(args.out)
    vault = Vault(copy_sample(base / "sample-vault"))
    generated = base / "generated.yaml"
    generate_queryset(vault, generated, n=args.n, seed=args.seed)
    sets = {"hand-written": load_queryset(ROOT / "querysets" / "sample-vault.yaml", vault),
            "generated": load_queryset(generated, vault)}
    scores, counts = {}, {}
    for label, qs in sets.items():
        ev = evaluate(vault, qs, STRATEGIES, measures=["nDCG@10"], cache_dir=base / "cache")
        overall = ev.metrics[ev.metrics.measure == "nDCG@10"].set_index("run").value
        scores[label], counts[label] = overall, len(qs.positive)
        if label == "generated":
            kinds = ev.slices[(ev.slices.slice_by == "kind") & (ev.slices.measure == "nDCG@10")]
            for kind, grp in kinds.groupby("slice"):
                scores[f"generated:{kind}"] = grp.set_index("run").value
                counts[f"generated:{kind}"] = int(grp.n.iloc[0])
    names = [n.split(":")[0] if "name=" not in n else n.split("name=")[1] for n in STRATEGIES]
    names = ["bm25-english" if n == "bm25" and "english" in s else n for n, s in zip(names, STRATEGIES)]
    ref = scores["hand-written"].reindex(names)
    print("| set | " + " | ".join(names) + " | Kendall tau vs hand-written | p |")
    print("|---|" + "---|" * (len(names) + 2))
    for label, values in scores.items():
        values = values.reindex(names)
        tau = stats.kendalltau(ref.to_numpy(), values.to_numpy())
        cells = " | ".join(f"{v:.4f}" for v in values)
        print(f"| {label} (n={counts[label]}) | {cells} | {tau.statistic:.2f} | {tau.pvalue:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
