"""Parameter sweeps, tuned on some queries and reported on the others.

Usage::

    grid = Grid(k1=[0.9, 1.2, 1.5], b=[0.5, 0.75, 0.9], target=[1000, 2000])
    sw = sweep(vault, qs, grid, measure="nDCG@10", seed=0)   # scheduler="local:2": the same table, on Dask
    sw.table         # one row per setting: parameters, tune, heldout, all (means of the measure)
    sw.best          # the setting with the best mean on the tuning queries
    sw.test          # PairedTest: best vs default on the held-out queries
    sw.decision      # tune's verdict on the held-out queries: {"verdict": "inconclusive", "ci95": ..., ...}
    print(sw.verdict)

Picking the best of N settings on the queries that score them overstates
the gain. The positive queries are split as ``tune`` splits them (the set's
own ``split`` field, else a seeded hash of each id): the best setting is
chosen on the tuning part and judged against the default on the held-out
part only, by ``tune``'s verdict (adopt, keep or inconclusive; paired
randomization test and t-test in the summary). Indexes for
other chunk sizes are built in the evaluation cache; k1 and b rescore one
index. Prefix tiers: ``synthetic`` and ``provisioned`` (the prefixes the
vault was provisioned with) are evaluated; LLM tiers send page text
off-machine, so they need ``allow_egress=True`` and a vault provisioned with
that tier (sweep it as ``provisioned``).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vaulteval.index import bm25
from vaulteval.chunks import chunking
from vaulteval.errors import UsageError
from vaulteval.workbench.strategy import PREFIXES, Strategy

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench.stats import PairedTest
    from vaulteval.vault.vault import Vault

LLM_TIERS = ("ollama", "anthropic-api", "claude-cli", "auto")
PARAMS = ("k1", "b", "target", "prefix", "bm25_top")


@dataclass(frozen=True)
class Grid:
    """The values to try for each parameter; every combination is one setting."""

    k1: list[float] = field(default_factory=lambda: [bm25.K1])
    b: list[float] = field(default_factory=lambda: [bm25.B])
    target: list[int] = field(default_factory=lambda: [chunking.TARGET_CHARS])
    prefix: list[str] = field(default_factory=lambda: ["synthetic"])
    bm25_top: list[int] = field(default_factory=lambda: [100])
    analyzer: str = "default"

    def strategies(self, allow_egress: bool = False) -> list[Strategy]:
        """Usage: ``Grid(k1=[1.2, 1.5]).strategies()`` -> one Strategy per combination, in grid order."""
        for name in PARAMS:
            if not list(getattr(self, name)):
                raise UsageError(f"the sweep grid has no value for {name}; give at least one")
        for tier in self.prefix:
            if tier in PREFIXES:
                continue
            if tier not in LLM_TIERS:
                raise UsageError(f"prefix {tier!r} is unknown; use {', '.join(PREFIXES + LLM_TIERS)}")
            if not allow_egress:
                raise UsageError(f"prefix tier {tier!r} sends page text off this machine; set allow_egress=True "
                                 "to allow it, or sweep prefix=['synthetic']")
            raise UsageError(f"the sweep does not build {tier!r} prefixes itself; provision the vault with "
                             f"`vaulteval provision --prefix-tier {tier} --allow-egress` and sweep prefix=['provisioned']")
        out = []
        for k1, b, target, prefix, top in itertools.product(self.k1, self.b, self.target, self.prefix, self.bm25_top):
            overlap = min(chunking.OVERLAP_CHARS, int(target) // 2)
            out.append(Strategy.of(analyzer=self.analyzer, k1=float(k1), b=float(b), target=int(target), overlap=overlap,
                                hard_max=max(chunking.HARD_MAX_CHARS, int(target)), prefix=prefix, bm25_top=int(top)))
        return out


@dataclass
class SweepResult:
    """Every setting's scores on the tuning, held-out and all positive queries; best vs default, with tune's verdict."""

    measure: str
    table: "pd.DataFrame"
    best: Strategy
    default: Strategy
    tune_ids: list[str]
    heldout_ids: list[str]
    test: "PairedTest"
    tune_test: "PairedTest"
    seed: int
    decision: dict[str, Any] = field(default_factory=dict)  # vaulteval.workbench.verdict.judge on the held-out part

    def ranked(self) -> "pd.DataFrame":
        """The table, best on the tuning queries first (ties: setting name)."""
        return self.table.sort_values(["tune", "setting"], ascending=[False, True]).reset_index(drop=True)

    def summary(self) -> "pd.DataFrame":
        """Best vs default on the tuning and the held-out queries; the p value and verdict are the held-out
        comparison's (``procedure``, as tune decides): on the tuning queries the best was picked, so no test there."""
        import pandas as pd

        comp = self.decision.get("comparison") or {}
        rows = []
        for split, t, ids in (("tuning", self.tune_test, self.tune_ids), ("held-out", self.test, self.heldout_ids)):
            col = "tune" if split == "tuning" else "heldout"
            row = self.table.set_index("setting")
            held = split == "held-out" and bool(comp)
            rows.append({"queries": split, "n": len(ids), "best": row.loc[self.best.name, col],
                         "default": row.loc[self.default.name, col], "delta": round(t.mean_delta, 4),
                         "wins": t.wins, "ties": t.ties, "losses": t.losses,
                         "p": round(comp["p"], 4) if held else None, "verdict": comp["verdict"] if held else None})
        return pd.DataFrame(rows)

    @property
    def verdict(self) -> str:
        """The overfitting warning, the numbers, and tune's verdict (adopt, keep or inconclusive) in words, its
        comparison in ``procedure``'s words."""
        from vaulteval.workbench.procedure import comparison_tail

        t, tt = self.test, self.tune_test
        row = self.table.set_index("setting")
        best, default = row.loc[self.best.name], row.loc[self.default.name]
        lines = [f"WARNING (overfitting): the best of {len(self.table) - 1} settings was picked on "
                 f"{len(self.tune_ids)} tuning queries (seed {self.seed}); only the {len(self.heldout_ids)} held-out "
                 "queries give an honest estimate."]
        if self.best.key == self.default.key:
            lines.append("The default setting is already the best on the tuning queries: keep it.")
            return "\n".join(lines)
        lines.append(f"best {self.best.name}: tuning {best.tune:.4f} vs default {default.tune:.4f} "
                     f"({tt.mean_delta:+.4f}); held-out {best.heldout:.4f} vs {default.heldout:.4f} "
                     f"({t.mean_delta:+.4f}, {t.wins}/{t.ties}/{t.losses} W/T/L).")
        d = self.decision
        advice = {"adopt": "Adopt it.", "keep": "Keep the default."}.get(
            d["verdict"], "Keep the default until more queries decide"
            + (f" (about {d['queries_needed']} judged queries)." if d.get("queries_needed") else "."))
        comp = d.get("comparison")
        held = f" (held out: {comparison_tail({**comp, 'measure': self.measure})})" if comp else ""
        lines.append(f"Verdict: {d['verdict']}: {d['reason']}{held}. {advice}")
        return "\n".join(lines)


def sweep(vault: "Vault", qs: "QuerySet", grid: Grid, *, measure: str = "nDCG@10", seed: int = 0,
          tune_fraction: float = 0.5, allow_egress: bool = False,
          cache_dir: str | os.PathLike[str] | None = None, scheduler: str | None = None,
          allow_remote_workers: bool = False, progress: bool = False) -> SweepResult:
    """Run every setting of ``grid`` plus the default; choose on the tuning split, judge on the held-out one.

    The core is ``tune``'s: its split (the set's ``split`` field, else a seeded hash of each id), its
    per-query scoring (``search_scores``, on the workbench executor: ``scheduler`` ``"local:2"`` or
    ``"tcp://HOST:PORT"`` gives the same table) and its verdict on the held-out queries.
    """
    import pandas as pd

    from vaulteval.workbench.executor import make_executor
    from vaulteval.workbench.measures import parse_measures
    from vaulteval.workbench.stats import paired_test
    from vaulteval.workbench.tune import search_scores, subset, tune_test_split, verdict_slices
    from vaulteval.workbench.verdict import Evidence, judge

    (m,) = [str(x) for x in parse_measures([measure])]
    settings = grid.strategies(allow_egress)
    default = Strategy.of(analyzer=grid.analyzer, name="default")
    if not 0 < tune_fraction < 1:
        raise UsageError(f"tune_fraction must be between 0 and 1, got {tune_fraction}")
    tune, held, _ = tune_test_split(qs, 1 - tune_fraction, seed)
    if not tune or not held:
        raise UsageError(f"a held-out split needs tuning and held-out queries with relevant pages, got "
                         f"{len(tune)} and {len(held)}; judge more queries or change the seed")
    unique: dict[tuple, Strategy] = {}
    for s in [default, *settings]:
        unique.setdefault(s.key, s)
    with make_executor(scheduler, allow_remote_workers=allow_remote_workers, progress=progress) as ex:
        per_query = search_scores(vault, qs, list(unique.values()), m, cache_dir=cache_dir, executor=ex)
    scores = {s.name: pd.Series(values) for s, values in zip(unique.values(), per_query)}
    rows = [{"setting": s.name, **{p: s.value(p) for p in PARAMS}, "is_default": s is default,
             "tune": scores[s.name][tune].mean(), "heldout": scores[s.name][held].mean(), "all": scores[s.name].mean()}
            for s in unique.values()]
    table = pd.DataFrame(rows)
    by_name = {s.name: s for s in [default, *settings]}
    ranked = table.assign(_order=range(len(table))).sort_values(
        ["tune", "is_default", "_order"], ascending=[False, False, True], kind="stable")
    best = by_name[ranked.iloc[0].setting]
    b_scores, d_scores = scores[best.name], scores[default.name]
    test = paired_test(b_scores[held].to_numpy(), d_scores[held].to_numpy(), seed=seed)
    tune_test = paired_test(b_scores[tune].to_numpy(), d_scores[tune].to_numpy(), seed=seed)
    slices, high = verdict_slices(subset(qs, held, "heldout"))
    evidence = Evidence(default=d_scores[held].to_dict(),
                        candidate=None if best.key == default.key else b_scores[held].to_dict(),
                        slices=slices, high_overlap=high)
    decision = judge(evidence, seed=seed, measure=m)
    for col in ("tune", "heldout", "all"):
        table[col] = table[col].round(4)
    return SweepResult(m, table, best, default, tune, held, test, tune_test, seed, decision)
