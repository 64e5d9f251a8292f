"""Agreement: does a generated query set rank strategies the way real questions do?

Usage (from the repo root, with the venv; every vault provisioned with stored
MiniLM vectors, ``vaulteval provision --vault V --embed --embedder st``):

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/agreement.py --out /tmp/agreement \\
        --set scifact /tmp/scifact /tmp/scifact/querysets/scifact-test.yaml \\
        --set help-en /tmp/help/en querysets/obsidian-help-en.yaml test \\
        --set sample /tmp/sample querysets/sample-vault.yaml \\
        --n 200 --seed 7 --languages /tmp/help --langs es,de,zh,ja,ru

Written sets (``queryset worksheet`` + ``add-written``) are compared the same way with ``--set-written LABEL
FILE``, and ``--grid tune`` compares tune's default grid for each vault instead of the list below
(docs/benchmarks.md, "Written questions against real ones").

For each ``--set LABEL VAULT REAL [SPLIT]`` it generates a set from the vault
(``queryset generate --n N --seed S``; or give one with ``--set-generated LABEL
FILE``), evaluates every strategy on the generated set
and on the real questions (only the queries with ``split: SPLIT`` when given),
and reports Kendall's tau (``scipy.stats.kendalltau``, tau-b) between the two
orders of the strategies by nDCG@10 (also over the distinct strategies: one that ranks every query of both
sets as an earlier one is left out), the generated set's pick (its best
strategy; the first in list order on a tie) with that pick's nDCG@10 on the real
questions, and the best strategy on the real questions. ``tune``'s own pick on the generated set is
reported beside it: ``tune`` run on that set over the same strategies (its hash split, seed 0) keeps the
vault's untuned default unless the search's best is significantly better on the test split; that pick's
nDCG@10 on the real questions and its gap to their best (its run is kept in ``OUT/LABEL/tune/``). Whether that tau is
measured at all (``vaulteval.workbench.agreement``): its 95% bootstrap
interval (both sets' queries resampled, ``--resamples``), the real order
against the orders of its own resamples (the ceiling: real questions do not
agree with themselves better), and the strategy pairs the real questions
separate (paired randomization test, p < 0.05) with how many of them the
generated set orders the same way. Tau per generated
slice (kind, and any other slice with at least --min-slice queries) is listed
too. ``--without rerank`` leaves the rerank strategies out (they embed every
candidate themselves in an evaluation). ``--languages DIR`` adds BM25 nDCG@10 with the default and the english
analyzer on each ``DIR/<lang>`` against ``querysets/obsidian-help-<lang>.yaml``.

``--kinds``, ``--max-overlap`` and ``--overlap-mix`` pass through to ``queryset generate``. Each set's per-query nDCG@10
(generated, with kind, variant, overlap band, overlap and bm25_rank; and real) is written to
``OUT/LABEL/per_query_generated.csv`` and ``per_query_real.csv``, so a mix of kinds can be scored without
running the strategies again. Prints Markdown tables and writes ``OUT/agreement.json``. No timings.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
MEASURE = "nDCG@10"
TARGET_TAU = 0.6  # issue 21: tau >= 0.6 and the generated pick within 0.02 nDCG@10 of the real best
TARGET_GAP = 0.02
STRATEGIES = [
    "bm25",
    "bm25:analyzer=english",
    "bm25:analyzer=english,k1=0.9,b=0.4",
    "bm25:analyzer=english,w_title=2,w_aliases=2,w_headings=1",
    "dense",
    "hybrid:rrf,analyzer=english",
    "hybrid:cc,analyzer=english,alpha=0.5",
    "hybrid:cc,analyzer=english,alpha=0.7",
    "rerank:st",
    "rerank:st,analyzer=english",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for generated sets, the evaluation cache and agreement.json")
    ap.add_argument("--set", nargs="+", action="append", default=[], metavar="ARG",
                    help="LABEL VAULT REAL_QUERYSET [SPLIT] (repeatable)")
    ap.add_argument("--set-generated", "--set-written", nargs=2, action="append", default=[],
                    metavar=("LABEL", "FILE"),
                    help="use this set (generated, or written through a worksheet) for LABEL instead of generating one")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--kinds", help="generate only these kinds (comma-separated, as queryset generate --kinds)")
    ap.add_argument("--max-overlap", type=float, help="as queryset generate --max-overlap")
    ap.add_argument("--overlap-mix", help="as queryset generate --overlap-mix")
    ap.add_argument("--grid", choices=("list", "tune"), default="list",
                    help="list: the strategies above; tune: tune's default grid for each vault (workbench.grid)")
    ap.add_argument("--without", action="append", default=[], metavar="KIND",
                    help="leave out the strategies of this kind (e.g. rerank: it embeds every candidate itself)")
    ap.add_argument("--min-slice", type=int, default=10, help="smallest generated slice to report a tau for")
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for tau's interval")
    ap.add_argument("--languages", help="folder holding one plain vault per language (the help vault)")
    ap.add_argument("--langs", default="es,de,zh,ja,ru")
    args = ap.parse_args()
    STRATEGIES[:] = [s for s in STRATEGIES if s.split(":")[0] not in args.without]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    given = dict(args.set_generated)
    report: dict = {"measure": MEASURE, "strategies": STRATEGIES, "n": args.n, "seed": args.seed,
                    "kinds": args.kinds, "max_overlap": args.max_overlap,
                    "overlap_mix": args.overlap_mix, "sets": [],
                    "languages": []}
    for item in args.set:
        if len(item) not in (3, 4):
            ap.error(f"--set takes LABEL VAULT REAL [SPLIT], got {item}")
        label, vault, real = item[:3]
        split = item[3] if len(item) == 4 else None
        report["sets"].append(agreement(label, Path(vault), Path(real), split, out, args, given.get(label)))
        (out / f"{label}.json").write_text(json.dumps(report["sets"][-1], indent=2, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
    if report["sets"]:
        print_agreement(report["sets"])
    if args.languages:
        report["languages"] = languages(Path(args.languages), args.langs.split(","), out)
        print_languages(report["languages"])
    (out / "agreement.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwritten: {out / 'agreement.json'}")
    return 0


_GENERATED: dict = {}  # (vault, generated file) -> (path, summary, set, evaluation), shared by the sets over it
_REAL: dict = {}  # (vault, real set, split) -> (set, evaluation)
_GRIDS: dict = {}  # vault -> the strategies compared on it


def grid_for(vault, args: argparse.Namespace) -> list[str]:
    """The strategies compared on ``vault``: the list above, or tune's default grid (``--grid tune``), less --without."""
    if args.grid == "tune":
        from vaulteval.workbench.grid import default_grid

        chosen = default_grid(vault, "bm25")
    else:
        chosen = list(STRATEGIES)
    return [s for s in chosen if s.split(":")[0] not in args.without]


def agreement(label: str, vault_dir: Path, real_path: Path, split: str | None, out: Path,
              args: argparse.Namespace, generated: str | None) -> dict:
    from scipy import stats

    from vaulteval.querysets.generate.core import generate_queryset
    from vaulteval.querysets.generate.mix import parse_mix
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.embeddings.store import store_path
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.strategy import Strategy

    vault = Vault(vault_dir)
    _GRIDS.setdefault(str(vault_dir.resolve()), grid_for(vault, args))
    lexical = all(s.split(":")[0] == "bm25" for s in _GRIDS[str(vault_dir.resolve())])
    if not lexical and not store_path(vault.meta_dir).exists():
        sys.exit(f"{vault_dir} has no stored embeddings; run: vaulteval provision --vault {vault_dir} --embed --embedder st")
    cache = out / "cache" / vault_dir.resolve().as_posix().strip("/").replace("/", "_")
    strategies = _GRIDS[str(vault_dir.resolve())]
    key = (str(vault_dir.resolve()), generated)  # two real sets over one vault share the generated set's evaluation
    if key not in _GENERATED:
        gen_path = Path(generated) if generated else out / label / "generated.yaml"
        summary = None
        if not generated:
            gen_path.parent.mkdir(parents=True, exist_ok=True)
            summary = generate_queryset(vault, gen_path, n=args.n, seed=args.seed,
                                        kinds=args.kinds.split(",") if args.kinds else None,
                                        max_overlap=args.max_overlap, overlap_mix=parse_mix(args.overlap_mix))
        gen = load_queryset(gen_path, vault)
        _GENERATED[key] = (gen_path, summary, gen, _evaluate(vault, gen, cache, strategies))
    gen_path, summary, gen, gen_ev = _GENERATED[key]
    strategies = _GRIDS[str(vault_dir.resolve())]
    real_key = (str(vault_dir.resolve()), str(real_path.resolve()), split)
    if real_key not in _REAL:
        real = load_queryset(real_path, vault)
        if split:
            real = dataclasses.replace(real, queries=[q for q in real.queries if q.split == split])
        _REAL[real_key] = (real, _evaluate(vault, real, cache, strategies))
    real, real_ev = _REAL[real_key]
    _write_per_query(out / label, gen, gen_ev, real_ev)
    names = [Strategy.parse(s).name for s in strategies]
    real_scores = _overall(real_ev).reindex(names)
    gen_scores = _overall(gen_ev).reindex(names)
    tau = stats.kendalltau(gen_scores.to_numpy(), real_scores.to_numpy())
    distinct = _distinct(names, _table(gen_ev, names), _table(real_ev, names))
    tau_distinct = stats.kendalltau(gen_scores[distinct].to_numpy(), real_scores[distinct].to_numpy())
    pick = names[int(gen_scores.to_numpy().argmax())]
    best = names[int(real_scores.to_numpy().argmax())]
    measurable = measurability(_table(gen_ev, names), _table(real_ev, names), gen_scores.to_numpy(), names,
                               args.resamples)
    slices = []
    for (by, name), grp in gen_ev.slices[gen_ev.slices.measure == MEASURE].groupby(["slice_by", "slice"]):
        n = int(grp.n.iloc[0])
        if by in ("tag", "folder") or n < args.min_slice:
            continue
        values = grp.set_index("run").value.reindex(names)
        t = stats.kendalltau(values.to_numpy(), real_scores.to_numpy())
        slices.append({"slice_by": by, "slice": name, "n": n, "tau": _num(t.statistic), "p": _num(t.pvalue),
                       "pick": names[int(values.to_numpy().argmax())]})
    tuned = tune_pick(vault, gen, real, names, real_scores, strategies, cache, out / label / "tune")
    return {"label": label, "vault": str(vault_dir), "real": str(real_path), "split": split, "strategies": strategies,
            "generated": str(gen_path), "generation": _counts(summary),
            "real_queries": len(real.positive), "generated_queries": len(gen.positive),
            "tau": _num(tau.statistic), "p": _num(tau.pvalue),
            "distinct": len(distinct), "tau_distinct": _num(tau_distinct.statistic),
            "pick": pick, "pick_real": float(real_scores[pick]), "best": best, "best_real": float(real_scores[best]),
            "tune": tuned,
            "scores": {n: {"generated": float(gen_scores[n]), "real": float(real_scores[n])} for n in names},
            "min_slice": args.min_slice, "slices": slices, **measurable}


def tune_pick(vault, gen, real, names: list[str], real_scores, strategies: list[str], cache: Path,
              out: Path) -> dict:
    """What ``tune`` itself adopts from the generated (or written) set over the same grid: its untuned default
    unless the search's best is significantly better on the set's test split (``workbench.tune``), and that
    pick's score on the real questions (evaluated there when the default is not a grid entry by name)."""
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.tune import tune

    result = tune(vault, gen, grid=strategies, measure=MEASURE, cache_dir=cache, out=out, run_id="tune")
    decision = result.decision
    chosen = Strategy.parse(decision["chosen"])
    if chosen.name in names:
        on_real = float(real_scores[chosen.name])
    else:
        on_real = float(_overall(_evaluate(vault, real, cache, [decision["chosen"]])).iloc[0])
    return {"chosen": decision["chosen"], "verdict": decision["verdict"], "baseline": decision["baseline"],
            "best": decision["best"], "delta": _num(decision["delta"]), "p": _num(decision["p"]),
            "n_test": decision["n_test"], "chosen_real": on_real}


def measurability(gen, real, gen_means, names: list[str], resamples: int) -> dict:
    """Whether the tau is measured at all: its bootstrap interval, the real order's agreement with its own resamples,
    and the pairs of strategies the real questions separate (p < 0.05) with how many the generated set orders alike."""
    from vaulteval.workbench.agreement import pair_agreement, self_tau, separated_pairs, tau_interval

    low, high = tau_interval(gen, real, seed=0, n_resamples=resamples)
    median, s_low, s_high = self_tau(real, seed=0, n_resamples=resamples)
    pairs = separated_pairs(real, seed=0)
    agree, total = pair_agreement(gen_means, pairs)
    return {"tau_ci95": [_num(low), _num(high)], "self_tau": [_num(median), _num(s_low), _num(s_high)],
            "separated_pairs": [[names[i], names[j], round(d, 4)] for i, j, d in pairs],
            "pairs_agreeing": agree, "pairs_separated": total}


def _distinct(names: list[str], gen, real) -> list[str]:
    """The strategies left when one that ranks every query of both sets exactly as an earlier one is dropped
    (identical by construction, e.g. a hybrid reranked by the store's own model is ``dense``)."""
    import numpy as np

    kept: list[int] = []
    for j in range(len(names)):
        if not any(np.array_equal(gen[:, i], gen[:, j]) and np.array_equal(real[:, i], real[:, j]) for i in kept):
            kept.append(j)
    return [names[j] for j in kept]


def _table(ev, names: list[str]):
    """queries x strategies (nDCG@10), columns in ``names`` order."""
    per = ev.per_query[ev.per_query.measure == MEASURE]
    return per.pivot(index="query_id", columns="run", values="value")[names].to_numpy()


def languages(root: Path, langs: list[str], out: Path) -> list[dict]:
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.vault.vault import Vault

    rows = []
    for lang in langs:
        vault = Vault(root / lang)
        qs = load_queryset(ROOT / "querysets" / f"obsidian-help-{lang}.yaml", vault)
        scores = _overall(_evaluate(vault, qs, out / "cache" / f"lang-{lang}",
                                    strategies=["bm25", "bm25:analyzer=english"]))
        rows.append({"lang": lang, "queries": len(qs.positive), "default": float(scores["bm25"]),
                     "english": float(scores["bm25-english"])})
    return rows


def _evaluate(vault, qs, cache: Path, strategies: list[str] = STRATEGIES):
    from vaulteval.workbench.evaluate import evaluate

    return evaluate(vault, qs, strategies, measures=[MEASURE], cache_dir=cache)


def _write_per_query(folder: Path, gen, gen_ev, real_ev) -> None:
    """nDCG@10 per query and strategy (generated with kind and overlap band; real), for analyses of kind mixes."""
    from vaulteval.workbench.verdict import overlap_band

    folder.mkdir(parents=True, exist_ok=True)
    fields = {q.query_id: q.fields or {} for q in gen.positive}
    table = gen_ev.per_query[gen_ev.per_query.measure == MEASURE][["run", "query_id", "value"]].copy()
    table["kind"] = [fields.get(str(q), {}).get("kind", "") for q in table.query_id]
    table["variant"] = [fields.get(str(q), {}).get("variant", "") for q in table.query_id]
    table["band"] = [overlap_band(SimpleNamespace(fields=fields.get(str(q)))) or "" for q in table.query_id]
    table["overlap"] = [fields.get(str(q), {}).get("overlap") for q in table.query_id]
    table["bm25_rank"] = [fields.get(str(q), {}).get("bm25_rank") for q in table.query_id]
    table.to_csv(folder / "per_query_generated.csv", index=False)
    real_ev.per_query[real_ev.per_query.measure == MEASURE][["run", "query_id", "value"]].to_csv(
        folder / "per_query_real.csv", index=False)


def _overall(ev):
    return ev.metrics[ev.metrics.measure == MEASURE].set_index("run").value


def _counts(summary: dict | None) -> dict | None:
    if summary is None:
        return None
    return {k: v for k, v in summary.items() if isinstance(v, (int, float, str, dict, list)) and k != "out"}


def _num(x: float) -> float | None:
    return None if x != x else round(float(x), 4)  # NaN (a constant ranking) becomes null


def _fmt(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def print_agreement(sets: list[dict]) -> None:
    counts = sorted({len(s["strategies"]) for s in sets})
    print(f"\n### Agreement ({MEASURE}, {'/'.join(map(str, counts))} strategies)\n")
    print("| data set | real queries | generated queries | Kendall tau (p) | tau, distinct strategies | tau 95% CI "
          "| real vs its resamples "
          "| separated pairs ordered alike | generated pick | pick on real | best on real | gap "
          "| tune's pick (verdict) | on real | its gap | target |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in sets:
        gap = s["best_real"] - s["pick_real"]
        ci, own, t = s["tau_ci95"], s["self_tau"], s["tune"]
        print(f"| {s['label']} | {s['real_queries']} | {s['generated_queries']} | {_fmt(s['tau'])} ({_fmt(s['p'])}) "
              f"| {_fmt(s['tau_distinct'])} ({s['distinct']}) "
              f"| [{_fmt(ci[0])}, {_fmt(ci[1])}] | {_fmt(own[0])} [{_fmt(own[1])}, {_fmt(own[2])}] "
              f"| {s['pairs_agreeing']} of {s['pairs_separated']} "
              f"| `{s['pick']}` | {s['pick_real']:.3f} | `{s['best']}` {s['best_real']:.3f} | {gap:.3f} "
              f"| `{t['chosen']}` ({t['verdict']}) | {t['chosen_real']:.3f} | {s['best_real'] - t['chosen_real']:.3f} "
              f"| {target(s)} |")
    print(f"\ntarget: tau >= {TARGET_TAU} and the pick within {TARGET_GAP} of the real best; a tau whose 95% CI "
          f"holds {TARGET_TAU} is undecided by these questions")
    for s in sets:
        print(f"\n#### {s['label']}: {MEASURE} per strategy\n")
        print("| strategy | generated | real |")
        print("|---|---|---|")
        for name, v in s["scores"].items():
            print(f"| `{name}` | {v['generated']:.3f} | {v['real']:.3f} |")
        if s["slices"]:
            print(f"\nTau of each generated slice against the real order (slices of {s['min_slice']}+ queries):\n")
            print("| slice | n | tau (p) | its pick |")
            print("|---|---|---|---|")
            for x in s["slices"]:
                print(f"| {x['slice_by']}={x['slice']} | {x['n']} | {_fmt(x['tau'])} ({_fmt(x['p'])}) | `{x['pick']}` |")


def target(s: dict) -> str:
    """Issue 21's target for one set: met or not, and whether tau's interval can tell."""
    gap_ok = s["best_real"] - s["pick_real"] <= TARGET_GAP + 1e-9
    tau = s["tau"] if s["tau"] is not None else float("-inf")
    low, high = s.get("tau_ci95") or (None, None)
    if low is not None and high is not None and low < TARGET_TAU <= high:
        measured = "tau undecided"
    elif high is not None and high < TARGET_TAU:
        measured = "tau below"
    else:
        measured = "tau at or above" if tau >= TARGET_TAU else "tau below"
    met = gap_ok and tau >= TARGET_TAU
    return f"{'met' if met else 'not met'} ({measured}; pick {'within' if gap_ok else 'outside'} {TARGET_GAP})"


def print_languages(rows: list[dict]) -> None:
    print(f"\n### BM25 {MEASURE} per language, hand-written sets\n")
    print("| language | queries | `bm25` (default analyzer) | `bm25:analyzer=english` |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['lang']} | {r['queries']} | {r['default']:.3f} | {r['english']:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
