"""Tables the notebooks show: rounded, sorted, free of paths, timestamps and run ids.

Usage::

    ev = evaluate(v, qs, ["bm25", "bm25:analyzer=english"])
    metrics_wide(ev)              # run x measure, 4 decimals
    cutoff_curves(ev, max_k=20)   # run, measure, k, value  (R@k and Success@k)
    per_tag(ev, "nDCG@10")        # tag x run means, with query counts
    miss_details(ev)              # every miss: cause, query, the page's best chunk, what came instead

Every function reads an :class:`~vaulteval.workbench.evaluate.EvalRun` and returns a
DataFrame (the explore notebook's tables are in ``nbexplore``); the numbers come from ``measures``, ``compare`` and
``misses``. Outputs are deterministic so nbval can compare stored notebooks:
values are rounded to ``DIGITS`` and rows sorted. Plots live in ``nbplots``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.workbench.evaluate import EvalRun
    from vaulteval.workbench.workspace import StrategyEnv

DIGITS = 4
SNIPPET = 160


def rounded(df: "pd.DataFrame", digits: int = DIGITS) -> "pd.DataFrame":
    """Usage: ``rounded(df)``: every float column rounded (a copy)."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = out[col].round(digits)
    return out


def one_line(text: Any, limit: int = SNIPPET) -> str:
    """Usage: ``one_line(chunk_text)``: whitespace collapsed, cut at ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# ----------------------------------------------------------------- evaluate

def metrics_wide(ev: "EvalRun") -> "pd.DataFrame":
    """One row per run, one column per measure (IR measures, then pool recall), in evaluation order."""
    table = ev.metrics[~ev.metrics.measure.str.startswith("negatives_")]
    wide = table.pivot_table(index="run", columns="measure", values="value", sort=False)
    return rounded(wide.reindex([r.name for r in ev.runs]).reset_index().rename_axis(columns=None))


def comparison(ev: "EvalRun") -> "pd.DataFrame":
    """The comparison summary without the baseline rows: delta, wins/ties/losses, p-values, status."""
    summary = ev.report.to_dataframe()
    return rounded(summary[summary.status != "baseline"].reset_index(drop=True))


def cutoff_curves(ev: "EvalRun", max_k: int = 20, families: tuple[str, ...] = ("R", "Success")) -> "pd.DataFrame":
    """Mean R@k and Success@k for k = 1..max_k, per run (long: run, measure, k, value)."""
    import pandas as pd

    from vaulteval.workbench.measures import aggregate, per_query

    names = [f"{fam}@{k}" for fam in families for k in range(1, max_k + 1)]
    agg = aggregate(pd.concat([per_query(r, ev.queryset, names) for r in ev.runs], ignore_index=True))
    parts = agg.measure.str.split("@", expand=True)
    out = pd.DataFrame({"run": agg.run, "measure": parts[0], "k": parts[1].astype(int), "value": agg.value})
    return rounded(out)


def curves_wide(curves: "pd.DataFrame") -> "pd.DataFrame":
    """``cutoff_curves`` as a table: one row per k, one column per (measure, run)."""
    wide = curves.assign(col=curves.measure + "@k " + curves.run).pivot_table(
        index="k", columns="col", values="value", sort=False)
    return wide.rename_axis(columns=None).reset_index()


def measures_for(k: int, measure: str) -> list[str]:
    """Usage: ``measures_for(10, "nDCG@20")`` -> the default measures at k, plus ``measure`` if missing."""
    from vaulteval.workbench.measures import default_measures, parse_measures

    ms = default_measures(k)
    extra = str(parse_measures([measure])[0])
    return ms if extra in ms else [*ms, extra]


def per_tag(ev: "EvalRun", measure: str | None = None) -> "pd.DataFrame":
    """Mean ``measure`` per query tag (a query counts under each of its tags), one column per run, plus ``n``."""
    import pandas as pd

    measure = measure or ev.measures[0]
    pq = ev.per_query[ev.per_query.measure == measure]
    tags = pd.DataFrame([(q.query_id, t) for q in ev.queryset.positive for t in (q.tags or ("(untagged)",))],
                        columns=["query_id", "tag"])
    joined = pq.merge(tags, on="query_id")
    wide = joined.pivot_table(index="tag", columns="run", values="value", aggfunc="mean")
    wide = wide.reindex(columns=[r.name for r in ev.runs])
    wide.insert(0, "n", tags.groupby("tag").size())
    return rounded(wide.sort_index().reset_index().rename_axis(columns=None))


def negatives_table(ev: "EvalRun") -> "pd.DataFrame":
    """Each negative query per run: its text, how many pages came back, the top page and score."""
    neg = ev.negatives.copy()
    neg.insert(2, "query", [ev.queryset[q].text for q in neg.query_id])
    return rounded(neg.sort_values(["run", "query_id"]).reset_index(drop=True))


def negatives_summary(ev: "EvalRun") -> "pd.DataFrame":
    """Per run: negative queries, how many returned anything, mean and max top score."""
    from vaulteval.workbench.measures import negatives_summary as summary

    return rounded(summary(ev.negatives))


def manifest_summary(ev: "EvalRun") -> "pd.DataFrame":
    """What makes the numbers reproducible (key, value), without paths, times or versions."""
    import pandas as pd

    from vaulteval.workbench.manifest import rerank_info

    qs, fp = ev.queryset, ev.workspace.fingerprint
    rows = [("query set", f"{qs.name} ({len(qs)} queries, {qs.format})"), ("query set sha256", qs.sha256),
            ("vault", "bundled sample" if ev.vault.is_bundled else ev.vault.root.name),
            ("vault fingerprint", f"{fp.digest} ({len(fp.pages)} pages)"),
            ("parameters", ", ".join(f"{k}={v}" for k, v in ev.params.items()))]
    for run in ev.runs:
        env = run.env.describe() if run.env else {}
        cp = env.get("chunk_params") or {}
        rows.append((f"{run.name}: index", f"{env.get('source')}, analyzer {env.get('analyzer')}, "
                     f"k1={env.get('k1')}, b={env.get('b')}, target={cp.get('target')}, "
                     f"overlap={cp.get('overlap')}, {env.get('n_docs')} chunks"))
        rows.append((f"{run.name}: index fingerprint", env.get("fingerprint")))
        rows.append((f"{run.name}: depth", f"bm25_top={run.strategy.bm25_top}, top={run.strategy.top}"))
        info = rerank_info(run)
        if info:
            model = str(info.get("model") or "").rstrip("/").rsplit("/", 1)[-1]
            rows.append((f"{run.name}: embedding", f"{info['backend']} {model} digest {info.get('digest')}"))
            rows.append((f"{run.name}: rerank status", info.get("fallback") or "ok (every query reranked)"))
    return pd.DataFrame(rows, columns=["key", "value"])


def environment_summary(ev: "EvalRun") -> "pd.DataFrame":
    """Versions and the evaluation time: true but machine-dependent (show it in an NBVAL_IGNORE_OUTPUT cell)."""
    import platform
    import sys

    import pandas as pd

    from vaulteval.workbench.manifest import PACKAGES, _versions

    rows = [("python", sys.version.split()[0]), ("platform", platform.platform())]
    rows += [(name, version or "-") for name, version in _versions(PACKAGES).items()]
    rows.append(("evaluation seconds", f"{ev.seconds:.2f}"))
    return pd.DataFrame(rows, columns=["key", "value"])


# ------------------------------------------------------------------- misses

def miss_counts(ev: "EvalRun") -> "pd.DataFrame":
    """Misses per cause (rows in ``misses.CAUSES`` order, zeros kept), one column per run; no total row."""
    from vaulteval.workbench.misses import CAUSES

    counts = ev.misses.groupby(["cause", "run"]).size().unstack("run")
    counts = counts.reindex(index=list(CAUSES), columns=[r.name for r in ev.runs]).fillna(0).astype(int)
    return counts.rename_axis(index="cause", columns=None).reset_index()


def miss_details(ev: "EvalRun", run: str | None = None, snippet: int = SNIPPET, instead: int = 3) -> "pd.DataFrame":
    """Every miss of ``run`` (default: all runs): cause, query, the page's best chunk, the pages returned instead."""
    import pandas as pd

    rows = []
    for r in ev.runs:
        if run is not None and r.name != run:
            continue
        misses = ev.misses[ev.misses.run == r.name].sort_values(["query_id", "doc_id"])
        rankings = r.rankings()
        best = _BestChunk(r.env) if r.env is not None else None
        for m in misses.itertuples(index=False):
            q = ev.queryset[m.query_id]
            top = [d for d in rankings.get(m.query_id, [])[:instead]]
            rows.append({"run": r.name, "query_id": m.query_id, "query": q.text, "page": m.doc_id,
                         "grade": m.grade, "cause": m.cause, "rank": m.rank, "bm25_rank": m.bm25_rank,
                         "detail": m.detail, "best_chunk": best.snippet(q.text, m.doc_id, snippet) if best else "",
                         "returned_instead": "; ".join(_page_name(d) for d in top)})
    cols = ["run", "query_id", "query", "page", "grade", "cause", "rank", "bm25_rank", "detail", "best_chunk",
            "returned_instead"]
    return pd.DataFrame(rows, columns=cols)


def _page_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".md")


class _BestChunk:
    """The chunk of a page that scores highest for a query (BM25 with the run's index), as a snippet."""

    def __init__(self, env: "StrategyEnv"):
        self.env = env
        self.pages: dict[str, list[int]] = {}
        for i, doc in enumerate(env.index.iter_docs()):
            self.pages.setdefault(doc.page_path, []).append(i)

    def snippet(self, query: str, page: str, limit: int) -> str:
        index, checker = self.env.index, self.env.retriever.integrity()
        docs = [d for d in self.pages.get(page, []) if checker.current_record(index.doc(d)) is not None]
        if not docs:
            return ""
        scores = index.score_tokens(index.analyze(query))
        doc = max(docs, key=lambda d: (scores[d], -d))
        rec = checker.current_record(index.doc(doc)) or {}
        return f"[chunk {index.doc(doc).chunk_index}] " + one_line(rec.get("raw_text", ""), limit)


# ------------------------------------------------------------------- rerank

def rerank_pair(baseline: str, reranked: str) -> list[Any]:
    """Usage: ``rerank_pair("", "rerank:st,bm25_top=20")`` -> [Strategy "bm25", Strategy "rerank"].

    An empty ``baseline`` is the reranked strategy without its reranker: BM25
    over the same candidate pool, so the comparison isolates the reranker.
    """
    from dataclasses import replace

    from vaulteval.errors import UsageError
    from vaulteval.workbench.strategy import Strategy

    rr = Strategy.parse(reranked)
    if rr.reranker is None:
        raise UsageError(f"reranked = {reranked!r} does not rerank; write e.g. rerank:st,bm25_top=20")
    base = Strategy.parse(baseline) if baseline else replace(rr, reranker=None)
    if base.reranker is not None:
        raise UsageError(f"baseline = {baseline!r} reranks; the baseline is a bm25 strategy")
    return [base.with_name("bm25"), rr.with_name("rerank")]


class RerankStatus(NamedTuple):
    """Whether the reranker ran; ``message`` says so plainly either way."""

    available: bool
    partial: bool
    message: str


def rerank_status(ev: "EvalRun", run: str) -> RerankStatus:
    """Usage: ``st = rerank_status(ev, "rerank"); print(st.message)``."""
    r = ev.run(run)
    if not r.reranked:
        return RerankStatus(False, False, f"{run} is not a reranked strategy")
    if r.fully_fell_back:
        return RerankStatus(False, False, f"RERANKER UNAVAILABLE for {run}: {r.fallback}. Every query kept its BM25 "
                            "order, so there is no rerank impact to measure; the tables below are left out "
                            "rather than shown as zeros.")
    reranked = len(r.reranked_queries)
    if r.fallback:
        return RerankStatus(True, True, f"WARNING {run}: {r.fallback}; {reranked} queries were reranked, the "
                            "others kept their BM25 order.")
    return RerankStatus(True, False, f"{run}: reranked every query with a candidate pool ({reranked}).")


def rerank_summary(ev: "EvalRun", run: str) -> "pd.DataFrame":
    """The run's rows of the comparison: value vs baseline, delta, W/T/L, p-values, significance."""
    summary = ev.report.to_dataframe()
    return rounded(summary[summary.run == run].reset_index(drop=True))


def query_deltas(ev: "EvalRun", run: str, measure: str) -> "pd.DataFrame":
    """Per query: baseline and reranked ``measure`` and the delta, sorted by delta then query id."""
    pq = ev.report.per_query
    d = pq[(pq.run == run) & (pq.measure == measure)].copy()
    d.insert(2, "query", [ev.queryset[q].text for q in d.query_id])
    d["outcome"] = ["win" if x > 1e-12 else "loss" if x < -1e-12 else "tie" for x in d.delta]
    return rounded(d.sort_values(["delta", "query_id"]).reset_index(drop=True))


def rescued_lost(ev: "EvalRun", run: str) -> "pd.DataFrame":
    """Relevant pages the reranker brought into the top k (rescued) or pushed out of it (lost)."""
    import pandas as pd

    from vaulteval.workbench.compare import rescued_and_lost

    r = ev.run(run)
    rescued, lost = rescued_and_lost(r, ev.queryset, ev.k, r.bm25_rankings())
    rows = [(kind, q, ev.queryset[q].text, d, ev.queryset[q].relevant[d])
            for kind, pairs in (("rescued", rescued), ("lost", lost)) for q, d in pairs]
    return pd.DataFrame(rows, columns=["change", "query_id", "query", "page", "grade"])


def pool_ceiling(ev: "EvalRun", base: str, depths: list[int]) -> "pd.DataFrame":
    """Recall of the BM25 candidate pool at each depth: what any reranker over it could reach at best."""
    from dataclasses import replace

    import pandas as pd

    from vaulteval.workbench.measures import pool_recall
    from vaulteval.workbench.runs import run_strategy

    strategy = ev.run(base).strategy
    rows = []
    for depth in sorted(set(int(d) for d in depths)):
        s = replace(strategy, bm25_top=depth, name=f"bm25_top-{depth}")
        r = run_strategy(ev.vault, ev.queryset, s, workspace=ev.workspace)
        rows.append((depth, pool_recall(r, ev.queryset)))
    return rounded(pd.DataFrame(rows, columns=["bm25_top", "pool_recall"]))


def latency(ev: "EvalRun") -> "pd.DataFrame":
    """Per-query latency (ms) per run, with the mean rerank time (machine-dependent: NBVAL_IGNORE_OUTPUT)."""
    return rounded(ev.report["latency"], 1)


# ------------------------------------------------------- small-set statistics

def metrics_intervals(ev: "EvalRun") -> "pd.DataFrame":
    """Each mean with its 95% bootstrap interval, ``0.6654 [0.5579, 0.7744]``, one row per run."""
    from vaulteval.workbench.report import interval_table

    ir = ev.metrics[ev.metrics.measure.isin(ev.measures)]
    return interval_table(ir)


SMALL_SLICE = 5  # fewer queries than this carry no useful 95% interval


def slices_wide(ev: "EvalRun", measure: str | None = None) -> "pd.DataFrame":
    """The first measure (or ``measure``) per slice, from metrics.csv's slice rows: slice_by/slice/n, one
    ``value [low, high]`` column per run; a slice of fewer than SMALL_SLICE queries shows its value alone."""
    measure = measure or ev.measures[0]
    long = ev.metrics_long()
    rows = long[(long.measure == measure) & (long.slice_by != "all")]
    if rows.empty:
        return rows
    cells = rows.assign(cell=[f"{v:.3f}" if n < SMALL_SLICE else f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
                              for v, lo, hi, n in zip(rows.value, rows.ci_low, rows.ci_high, rows.n)])
    wide = cells.pivot_table(index=["slice_by", "slice", "n"], columns="run", values="cell", aggfunc="first",
                             sort=False)
    return wide.reset_index().rename_axis(columns=None).astype({"n": int})


def abstention_summary(ev: "EvalRun") -> "pd.DataFrame":
    """Per run: the lowest --min-score (on that run's own score scale) holding false positives at or below 10%,
    the recall it keeps, and the advice: that threshold, or "no useful threshold" when it keeps under half."""
    import pandas as pd

    from vaulteval.workbench.abstention import MIN_KEPT, suggest, useful

    rows = []
    for r in ev.runs:
        curve = ev.abstention[ev.abstention.run == r.name]
        best = suggest(curve) if len(curve) else None
        ranked_by = r.strategy.first.ranked_by if r.strategy is not None else "bm25"
        scale = ("cosine" if r.reranked and not r.fully_fell_back else
                 {"fused": "fused score", "dense": "cosine"}.get(ranked_by, "BM25 score"))
        advice = ("no negative queries to set it by" if best is None and curve.empty else
                  "no threshold holds false positives at 10%" if best is None else
                  f"--min-score {best[0]:.4g}" if useful(best) else
                  f"no useful threshold (keeps under {MIN_KEPT:.0%} of the answers)")
        rows.append({"run": r.name, "score": scale, "min_score": best[0] if best else None,
                     "recall_kept": best[1] if best else None, "fp_rate": best[2] if best else None,
                     "advice": advice})
    return pd.DataFrame(rows, columns=["run", "score", "min_score", "recall_kept", "fp_rate", "advice"])


def cold_warm_latency(vault: Any, queryset: Any, strategy: Any, n: int = 10) -> "pd.DataFrame":
    """Mean latency per query (ms) of ``strategy`` on ``n`` queries: cold (a new, empty embedding cache: what a
    first query pays) then warm (the same queries again). Machine-dependent: show it in an NBVAL_IGNORE_OUTPUT cell."""
    import tempfile

    import pandas as pd

    from vaulteval.workbench.runs import run_strategy
    from vaulteval.workbench.tune import subset
    from vaulteval.workbench.workspace import Workspace

    sample = subset(queryset, [q.query_id for q in queryset.positive][:n], "latency")
    rows = []
    with tempfile.TemporaryDirectory(prefix="vaulteval-latency-") as cache:
        ws = Workspace(vault, cache)
        for label in ("cold (empty embedding cache)", "warm (embeddings cached)"):
            q = run_strategy(vault, sample, strategy, workspace=ws).queries
            rows.append({"measured": label, "queries": len(q), "latency_ms": float(q.latency_ms.mean()),
                         "rerank_ms": float(q.rerank_ms.mean())})
    return rounded(pd.DataFrame(rows), 1)
