"""Which pipeline should a vault get by default? Candidates against tune's grid, on every set given.

Usage (from the repo root, with the venv; each vault provisioned with stored MiniLM vectors,
``vaulteval provision --vault V --embed --embedder st``)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/default_pipeline.py --out /tmp/defaults \\
        --set scifact /tmp/scifact /tmp/scifact/querysets/scifact-test.yaml \\
        --set help-en /tmp/help/en querysets/obsidian-help-en.yaml \\
        --set sample /tmp/sample querysets/sample-vault.yaml

For each ``--set LABEL VAULT QUERYSET`` every strategy of tune's default grid
(``vaulteval.workbench.grid.default_grid``) and every candidate default runs on
all the set's positive queries; nDCG@10 means go to ``OUT/LABEL.json`` (a set
already there is not run again). The tables printed: per set, the grid's best
strategy and each candidate's gap to it, split into the lexical part of the grid
(what a vault without vectors can run) and the whole grid (with vectors), and
each candidate's worst gap over the sets (``--docs``: the compact table of
docs/strategies.md, a lexical candidate measured against the lexical grid, a
semantic one against the whole grid). No timings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
MEASURE = "nDCG@10"
LEXICAL = ["bm25", "bm25:analyzer=auto", "bm25:analyzer=auto,w_title=1,w_aliases=1"]
SEMANTIC = ["dense", "hybrid:rrf,analyzer=auto", "hybrid:cc,analyzer=auto", "hybrid:cc,alpha=0.7,analyzer=auto",
            "hybrid:cc,alpha=0.7,analyzer=auto,w_title=1,w_aliases=1", "hybrid:cc,alpha=0.6,analyzer=auto",
            "hybrid:cc,alpha=0.7", "rerank:st,analyzer=auto", "rerank:st,analyzer=auto,bm25_top=20"]


def measure_set(label: str, vault_path: str, queryset_path: str, out: Path, cache: Path) -> dict:
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.grid import default_grid
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.tune import search_scores

    target = out / f"{label}.json"
    if target.exists():
        result = json.loads(target.read_text(encoding="utf-8"))
        # The rule may have changed since the set was measured: what it picks now, not what it picked then.
        result["default"] = chosen_default(vault_path, cache)
        if result["default"] not in result["means"]:
            raise SystemExit(f"{label}: {result['default']} was not measured; remove {target} to measure it")
        return result
    vault = Vault(vault_path)
    qs = load_queryset(queryset_path, vault)
    qs = replace(qs, queries=list(qs.positive))
    grid = default_grid(vault, "bm25")
    semantic = SEMANTIC if vault.meta_dir.joinpath("embeddings", "vectors.vtv").is_file() else []
    texts = list(dict.fromkeys(Strategy.parse(s).text() for s in [*grid, *LEXICAL, *semantic]))
    strategies = [Strategy.parse(s) for s in texts]
    scores = search_scores(vault, qs, strategies, MEASURE, cache_dir=cache)
    means = {t: round(sum(s.values()) / len(s), 4) for t, s in zip(texts, scores)}
    result = {"label": label, "vault": vault_path, "queryset": queryset_path, "queries": len(scores[0]),
              "grid": [Strategy.parse(s).text() for s in grid], "means": means,
              "default": chosen_default(vault_path, cache)}
    target.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


def chosen_default(vault_path: str, cache: Path) -> str:
    """The strategy ``default_pipeline`` picks for this vault provisioned as ``provision`` now does (an ``auto``
    index): its rule applied to the ``auto`` build in the evaluation cache."""
    from vaulteval.pipeline.spec import WITH_VECTORS, has_vectors, model_reads_vault
    from vaulteval.embeddings.config import RerankConfig, resolve
    from vaulteval.embeddings.store import open_store
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace

    vault = Vault(vault_path)
    lexical_default = Strategy.parse("bm25:analyzer=auto").text()
    if not has_vectors(vault):
        return lexical_default
    env = Workspace(vault, cache).env(Strategy.parse(lexical_default))
    store = open_store(vault.meta_dir)
    model = str(resolve(RerankConfig(backend=store.backend, model=store.model)).model)
    if not model_reads_vault(env.vault, model):
        return lexical_default
    return Strategy.parse(f"{WITH_VECTORS},analyzer=auto").text()


def lexical(text: str) -> bool:
    return text.startswith("bm25")


def tables(results: list[dict]) -> str:
    from vaulteval.workbench.strategy import Strategy

    lines = []
    for part, keep, candidates in (("without vectors (lexical grid)", lexical, LEXICAL),
                                   ("with vectors (whole grid)", lambda t: True, [*LEXICAL, *SEMANTIC])):
        lines += [f"\n### {part}\n", "| set | queries | grid best | " + " | ".join(f"`{c}`" for c in candidates) + " |",
                  "|---|---|---|" + "---|" * len(candidates)]
        worst = dict.fromkeys(candidates, 0.0)
        for r in results:
            grid = {t: r["means"][t] for t in r["grid"] if keep(t)}
            best = max(grid, key=grid.get)
            cells = []
            for c in candidates:
                value = r["means"].get(Strategy.parse(c).text())
                if value is None:  # a semantic candidate on a vault without vectors
                    cells.append("—")
                    continue
                worst[c] = min(worst[c], value - grid[best])
                cells.append(f"{value:.3f} ({value - grid[best]:+.3f})")
            lines.append(f"| {r['label']} | {r['queries']} | `{best}` {grid[best]:.3f} | " + " | ".join(cells) + " |")
        lines.append("| **worst gap** | | | " + " | ".join(f"**{worst[c]:+.3f}**" for c in candidates) + " |")
    return "\n".join(lines)


DOCS = [("bm25", "seed analyzer"), ("bm25:analyzer=auto", "default, no vectors"), ("dense", None),
        ("hybrid:cc,analyzer=auto", "default, vectors"), ("hybrid:cc,alpha=0.7,analyzer=auto", None),
        ("rerank:st,analyzer=auto", None), ("rerank:st,analyzer=auto,bm25_top=20", None)]


def docs_table(results: list[dict]) -> str:
    """The compact table of docs/strategies.md: each candidate's nDCG@10 and its gap to the grid's best."""
    from vaulteval.workbench.strategy import Strategy

    head = ["set", "queries", "lexical grid best", "whole grid best", "**the default** (what it picks)"] + [
        f"`{c}`" + (f" ({why})" if why else "") for c, why in DOCS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    worst = {c: 0.0 for c, _ in DOCS}
    worst_default = 0.0
    for r in results:
        lexical_grid = {t: r["means"][t] for t in r["grid"] if lexical(t)}
        whole = {t: r["means"][t] for t in r["grid"]}
        lex_best, best = max(lexical_grid, key=lexical_grid.get), max(whole, key=whole.get)
        cells = []
        for c, _ in DOCS:
            value = r["means"].get(Strategy.parse(c).text())
            if value is None:  # a semantic candidate on a vault without vectors
                cells.append("—")
                continue
            ref = lexical_grid[lex_best] if lexical(c) else whole[best]
            worst[c] = min(worst[c], value - ref)
            cells.append(f"{value:.3f} ({value - ref:+.3f})")
        chosen = r["means"][r["default"]]
        worst_default = min(worst_default, chosen - whole[best])
        default_cell = f"**{chosen:.3f} ({chosen - whole[best]:+.3f})** `{r['default']}`"
        lines.append(f"| {r['label']} | {r['queries']} | `{lex_best}` {lexical_grid[lex_best]:.3f} | "
                     f"`{best}` {whole[best]:.3f} | {default_cell} | " + " | ".join(cells) + " |")
    lines.append(f"| **worst gap** | | | | **{worst_default:+.3f}** | "
                 + " | ".join(f"**{worst[c]:+.3f}**" for c, _ in DOCS) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", nargs=3, action="append", metavar=("LABEL", "VAULT", "QUERYSET"), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cache", type=Path, help="evaluation cache (default: OUT/cache)")
    ap.add_argument("--docs", action="store_true", help="print docs/strategies.md's compact table instead")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for label, vault, queryset in args.set:
        print(f"measuring {label}", file=sys.stderr, flush=True)
        results.append(measure_set(label, vault, queryset, args.out, args.cache or args.out / "cache"))
    print(docs_table(results) if args.docs else tables(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
