"""Parameter sweeps, tuned on some queries and reported on the others.

Usage::

    grid = Grid(k1=[0.9, 1.2, 1.5], b=[0.5, 0.75, 0.9], target=[1000, 2000])
    sw = sweep(vault, qs, grid, measure="nDCG@10", seed=0)   # scheduler="local:2": the same table, on Dask
    sw.table         # one row per setting: parameters, tune, heldout, all (means of the measure)
    sw.best          # the setting with the best mean on the tuning queries
    sw.test          # PairedTest: best vs default on the held-out queries
    print(sw.verdict)

Picking the best of N settings on the queries that score them overstates
the gain. The positive queries are split once by a fixed seed: the best
setting is chosen on the tuning part and compared with the default on the
held-out part only (paired randomization test and t-test). Indexes for
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
from typing import TYPE_CHECKING

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
    """Every setting's scores on the tuning, held-out and all positive queries; best vs default."""

    measure: str
    table: "pd.DataFrame"
    best: Strategy
    default: Strategy
    tune_ids: list[str]
    heldout_ids: list[str]
    test: "PairedTest"
    tune_test: "PairedTest"
    seed: int

    def ranked(self) -> "pd.DataFrame":
        """The table, best on the tuning queries first (ties: setting name)."""
        return self.table.sort_values(["tune", "setting"], ascending=[False, True]).reset_index(drop=True)

    def summary(self) -> "pd.DataFrame":
        """Best vs default on the tuning and the held-out queries, with the paired tests."""
        import pandas as pd

        rows = []
        for split, t, ids in (("tuning", self.tune_test, self.tune_ids), ("held-out", self.test, self.heldout_ids)):
            col = "tune" if split == "tuning" else "heldout"
            row = self.table.set_index("setting")
            rows.append({"queries": split, "n": len(ids), "best": row.loc[self.best.name, col],
                         "default": row.loc[self.default.name, col], "delta": round(t.mean_delta, 4),
                         "wins": t.wins, "ties": t.ties, "losses": t.losses,
                         "p_randomization": round(t.p_randomization, 4), "p_ttest": round(t.p_ttest, 4)})
        return pd.DataFrame(rows)

    @property
    def verdict(self) -> str:
        """A plain statement of what the held-out queries say, with the overfitting warning."""
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
                     f"({t.mean_delta:+.4f}, {t.wins}/{t.ties}/{t.losses} W/T/L, "
                     f"p = {t.p_randomization:.4f} randomization, {t.p_ttest:.4f} t-test).")
        if t.mean_delta <= 0:
            lines.append("On the held-out queries the tuned setting is no better than the default: the tuning "
                         "gain is overfitting. Keep the default.")
        elif t.p_randomization >= 0.05:
            lines.append("The held-out gain is not significant (p >= 0.05): it may be noise. Keep the default "
                         "unless more queries confirm it.")
        else:
            lines.append("The held-out gain is significant (p < 0.05); confirm it on more queries before "
                         "changing the default.")
        return "\n".join(lines)


def split_queries(qs: "QuerySet", seed: int = 0, tune_fraction: float = 0.5) -> tuple[list[str], list[str]]:
    """Usage: ``tune, heldout = split_queries(qs, seed=0)``: positive query ids, shuffled once by ``seed``."""
    import numpy as np

    if not 0 < tune_fraction < 1:
        raise UsageError(f"tune_fraction must be between 0 and 1, got {tune_fraction}")
    ids = sorted(q.query_id for q in qs.positive)
    if len(ids) < 4:
        raise UsageError(f"a held-out split needs at least 4 queries with relevant pages, got {len(ids)}")
    order = [ids[i] for i in np.random.default_rng(seed).permutation(len(ids))]
    cut = min(max(1, round(len(ids) * tune_fraction)), len(ids) - 1)
    return sorted(order[:cut]), sorted(order[cut:])


def sweep(vault: "Vault", qs: "QuerySet", grid: Grid, *, measure: str = "nDCG@10", seed: int = 0,
          tune_fraction: float = 0.5, allow_egress: bool = False,
          cache_dir: str | os.PathLike[str] | None = None, scheduler: str | None = None,
          allow_remote_workers: bool = False, progress: bool = False) -> SweepResult:
    """Run every setting of ``grid`` plus the default; choose on the tuning split, test on the held-out one.

    ``scheduler`` (``"local:2"``, ``"tcp://HOST:PORT"``) runs the settings as Dask tasks
    (``vaulteval.workbench.executor``); the table is the same as without it.
    """
    import pandas as pd

    from vaulteval.workbench.executor import run_strategies
    from vaulteval.workbench.measures import parse_measures, per_query
    from vaulteval.workbench.stats import paired_test
    from vaulteval.workbench.workspace import Workspace

    (m,) = [str(x) for x in parse_measures([measure])]
    settings = grid.strategies(allow_egress)
    default = Strategy.of(analyzer=grid.analyzer, name="default")
    tune, held = split_queries(qs, seed, tune_fraction)
    ws = Workspace(vault, cache_dir)
    scores: dict[str, pd.Series] = {}
    rows = []
    unique: dict[tuple, Strategy] = {}
    for s in [default, *settings]:
        unique.setdefault(s.key, s)
    runs = run_strategies(vault, qs, list(unique.values()), workspace=ws, scheduler=scheduler,
                          allow_remote_workers=allow_remote_workers, progress=progress)
    for s, run in zip(unique.values(), runs):
        pq = per_query(run, qs, [m]).set_index("query_id").value
        scores[s.name] = pq
        rows.append({"setting": s.name, **{p: s.value(p) for p in PARAMS}, "is_default": s is default,
                     "tune": pq[tune].mean(), "heldout": pq[held].mean(), "all": pq.mean()})
    table = pd.DataFrame(rows)
    by_name = {s.name: s for s in [default, *settings]}
    ranked = table.assign(_order=range(len(table))).sort_values(
        ["tune", "is_default", "_order"], ascending=[False, False, True], kind="stable")
    best = by_name[ranked.iloc[0].setting]
    b_scores, d_scores = scores[best.name], scores[default.name]
    test = paired_test(b_scores[held].to_numpy(), d_scores[held].to_numpy(), seed=seed)
    tune_test = paired_test(b_scores[tune].to_numpy(), d_scores[tune].to_numpy(), seed=seed)
    for col in ("tune", "heldout", "all"):
        table[col] = table[col].round(4)
    return SweepResult(m, table, best, default, tune, held, test, tune_test, seed)
