"""What the notebooks show: inputs, tables, plots and the sweep, on constructed vaults and the sample.

Usage: ``.venv/bin/python -m pytest tests/notebooks/test_views.py -q``

The reranker is a loopback fake Ollama whose scripted embeddings favour
chunks that mention "giraffe" (see evalkit.scripted_embed).
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

import pytest

from vaulteval.notebooks import explore as nbexplore
from vaulteval.notebooks import plots as nbplots
from vaulteval.notebooks import views as nbviews
from vaulteval.errors import UsageError
from vaulteval.workbench.evaluate import evaluate
from vaulteval.workbench.misses import CAUSES
from vaulteval.notebooks.support import SAMPLE_QUERYSET, describe_inputs, prepare, resolve_inputs
from vaulteval.querysets.queryset import load_queryset
from vaulteval.workbench.strategy import Strategy
from vaulteval.workbench.sweep import Grid, sweep
from vaulteval.vault.vault import Vault
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import retrieve

from evalkit import eval_cache, make_vault, scripted_embed, write_yaml  # noqa: F401
from ollama_server import FakeOllama

PAGES = {
    "animals/zebra.md": "Zebra herd on the plain. Zebra stripes confuse flies.",
    "animals/giraffe.md": "Giraffe and zebra under an acacia tree, the giraffe eating leaves.",
    "animals/okapi.md": "The okapi is a forest giraffe relative with zebra-like legs.",
    "trips/savanna.md": "Road trip to the savanna: we saw one zebra and many birds.",
    "cooking/bread.md": "Country loaf with a long cold proof.",
    "empty.md": "",
}
QUERIES = [
    {"id": "q1", "query": "zebra stripes", "relevant": {"wiki/animals/zebra.md": 2}, "tags": ["animals"]},
    {"id": "q2", "query": "tall animal eating leaves", "relevant": {"wiki/animals/giraffe.md": 2,
                                                                   "wiki/animals/okapi.md": 1}, "tags": ["animals", "paraphrase"]},
    {"id": "q3", "query": "zebra on a road trip", "relevant": {"wiki/trips/savanna.md": 1}},
    {"id": "q4", "query": "sourdough loaf", "relevant": {"wiki/cooking/bread.md": 2, "wiki/empty.md": 1}, "tags": ["food"]},
    {"id": "q5", "query": "zebra", "relevant": {"wiki/animals/okapi.md": 1}, "tags": ["animals"]},
    {"id": "q6", "query": "zebra", "relevant": {"wiki/animals/giraffe.md": 1}},
    {"id": "n1", "query": "tax return deadline", "relevant": {}, "tags": ["negative"]},
]


@pytest.fixture
def small(tmp_path: Path):
    root = make_vault(tmp_path / "v", PAGES)
    provision(Vault(root))
    qs = load_queryset(write_yaml(tmp_path / "qs.yaml", QUERIES, vault="v"))
    return Vault(root), qs


@pytest.fixture
def ev(small):
    vault, qs = small
    return evaluate(vault, qs, ["bm25:bm25_top=3", "bm25:analyzer=english,bm25_top=3"], k=2)


@pytest.fixture(scope="module")
def server():
    fake = FakeOllama(scripted_embed, models=("nomic-embed-text-v2-moe:latest",))
    yield fake
    fake.stop()


# -------------------------------------------------------------------- inputs

def test_sample_means_the_data_inside_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # not the repository: as after a pip install
    v, qs = resolve_inputs("sample", "sample")
    assert v.is_bundled and qs.path == SAMPLE_QUERYSET and len(qs) == 74
    line = describe_inputs(v, qs)
    assert "74 queries" in line and "bundled sample vault: 53 pages" in line and "/" not in line


def test_a_query_set_of_another_vault_asks_for_that_vault(small, tmp_path: Path) -> None:
    vault, _ = small
    with pytest.raises(UsageError, match=r"judges another vault: pass it too \(-p vault PATH\)"):
        resolve_inputs("sample", str(tmp_path / "qs.yaml"))
    v, qs = resolve_inputs(str(vault.root), str(tmp_path / "qs.yaml"))
    assert v.root == vault.root and len(qs) == len(QUERIES)
    with pytest.raises(UsageError, match="vault must be a folder path"):
        resolve_inputs("", "sample")


def test_a_symlinked_query_set_finds_its_vault_from_the_real_file(small, tmp_path: Path) -> None:
    vault, _ = small
    real = tmp_path / "data" / "sets"
    real.mkdir(parents=True)
    write_yaml(real / "qs.yaml", QUERIES, vault="../../v")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "qs.yaml").symlink_to(real / "qs.yaml")
    assert load_queryset(tmp_path / "elsewhere" / "qs.yaml").vault_root == vault.root


def test_prepare_points_the_cache_and_quiets_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VAULTEVAL_CACHE", "HF_HUB_DISABLE_PROGRESS_BARS", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    log = logging.getLogger("vaulteval")
    before = list(log.handlers)
    try:
        prepare(str(tmp_path / "c"))
        assert os.environ["VAULTEVAL_CACHE"] == str((tmp_path / "c").resolve())
        assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and os.environ["HF_HUB_OFFLINE"] == "1"
    finally:
        log.handlers[:] = before


# -------------------------------------------------------------------- tables

def test_metrics_and_comparison_are_rounded_and_in_run_order(ev) -> None:
    wide = nbviews.metrics_wide(ev)
    assert list(wide.run) == ["bm25-bm25_top=3", "bm25-english-bm25_top=3"]
    assert {"nDCG@2", "R@2", "pool_recall@3"} <= set(wide.columns)
    values = wide.drop(columns="run").to_numpy().ravel()
    assert all(v == round(v, 4) for v in values if not math.isnan(v))
    comp = nbviews.comparison(ev)
    assert set(comp.run) == {"bm25-english-bm25_top=3"} and len(comp) == len(ev.measures)


def test_cutoff_curves_rise_with_k_and_recall_stays_below_success(ev) -> None:
    curves = nbviews.cutoff_curves(ev, max_k=5)
    assert sorted(set(curves.k)) == [1, 2, 3, 4, 5] and set(curves.measure) == {"R", "Success"}
    for (_, _), grp in curves.groupby(["run", "measure"]):
        assert list(grp.sort_values("k").value) == sorted(grp.value)
    wide = nbviews.curves_wide(curves)
    for run in ("bm25-bm25_top=3", "bm25-english-bm25_top=3"):
        assert (wide[f"R@k {run}"] <= wide[f"Success@k {run}"]).all()


def test_per_tag_means_count_each_query_under_each_tag(ev) -> None:
    tags = nbviews.per_tag(ev, "R@2")
    assert list(tags.tag) == ["(untagged)", "animals", "food", "paraphrase"]  # negatives are reported apart
    assert dict(zip(tags.tag, tags.n)) == {"(untagged)": 2, "animals": 3, "food": 1, "paraphrase": 1}
    pq = ev.per_query[(ev.per_query.measure == "R@2") & (ev.per_query.run == "bm25-bm25_top=3")]
    expected = pq[pq.query_id.isin(["q1", "q2", "q5"])].value.mean()
    assert tags.set_index("tag").loc["animals", "bm25-bm25_top=3"] == round(expected, 4)


def test_negatives_and_manifest_summary_hold_no_paths(ev, small) -> None:
    neg = nbviews.negatives_table(ev)
    assert list(neg.query_id) == ["n1", "n1"] and neg["query"].iloc[0] == "tax return deadline"
    manifest = nbviews.manifest_summary(ev)
    text = manifest.to_string()
    assert str(small[0].root) not in text and str(ev.workspace.cache_dir) not in text
    assert ev.queryset.sha256 in text and "index fingerprint" in text


def test_miss_tables_give_cause_best_chunk_and_what_came_instead(ev) -> None:
    counts = nbviews.miss_counts(ev)
    assert list(counts.cause) == list(CAUSES)  # causes only: a total row would be counted as one
    for run in (r.name for r in ev.runs):
        assert counts[run].sum() == (ev.misses.run == run).sum()
    details = nbviews.miss_details(ev, run="bm25-bm25_top=3", snippet=40)
    assert len(details) == (ev.misses.run == "bm25-bm25_top=3").sum() > 0
    empty = details[details.page == "wiki/empty.md"].iloc[0]
    assert empty.cause == "not-indexed" and empty.best_chunk == ""
    okapi = details[(details.query_id == "q5")].iloc[0]
    assert okapi.best_chunk.startswith("[chunk 0] The okapi") and len(okapi.best_chunk) <= len("[chunk 0] ") + 40
    assert okapi.returned_instead.split("; ")[0] in {"zebra", "giraffe", "savanna"}


# -------------------------------------------------------------------- rerank

def test_rerank_pair_compares_over_the_same_pool() -> None:
    base, rr = nbviews.rerank_pair("", "rerank:st,bm25_top=20")
    assert (base.name, rr.name) == ("bm25", "rerank") and base.reranker is None and base.bm25_top == rr.bm25_top == 20
    assert nbviews.rerank_pair("bm25:analyzer=english", "rerank:st")[0].index.analyzer == "english"
    with pytest.raises(UsageError, match="does not rerank"):
        nbviews.rerank_pair("", "bm25")


def test_reranker_views_with_a_working_reranker(small, server) -> None:
    vault, qs = small
    runs = nbviews.rerank_pair("", f"rerank:ollama,host={server.url},bm25_top=4")
    ev = evaluate(vault, qs, runs, k=1)
    status = nbviews.rerank_status(ev, "rerank")
    assert status.available and not status.partial and "reranked every query" in status.message
    deltas = nbviews.query_deltas(ev, "rerank", "nDCG@1")
    assert list(deltas.delta) == sorted(deltas.delta) and set(deltas.outcome) <= {"win", "tie", "loss"}
    changes = nbviews.rescued_lost(ev, "rerank")
    assert ("rescued", "q6", "wiki/animals/giraffe.md") in set(zip(changes.change, changes.query_id, changes.page))
    ceiling = nbviews.pool_ceiling(ev, "bm25", [1, 4, 2])
    assert list(ceiling.bm25_top) == [1, 2, 4] and list(ceiling.pool_recall) == sorted(ceiling.pool_recall)


def test_an_unavailable_reranker_is_said_plainly(small, monkeypatch: pytest.MonkeyPatch) -> None:
    vault, qs = small
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens on the discard port
    ev = evaluate(vault, qs, nbviews.rerank_pair("", "rerank:ollama,bm25_top=4,timeout=1"), k=2)
    status = nbviews.rerank_status(ev, "rerank")
    assert not status.available and status.message.startswith("RERANKER UNAVAILABLE for rerank: fallback:")
    summary = nbviews.rerank_summary(ev, "rerank")
    assert summary.delta.isna().all() and summary.status.str.startswith("fallback").all()


# ------------------------------------------------------------------- explore

def test_explore_views_on_a_provisioned_vault(small) -> None:
    vault, qs = small
    env = nbexplore.explore_env(vault)
    assert env.source == "vault"
    pages = [p.rel for p in vault.iter_pages()]
    chunks = nbexplore.chunk_table(env)
    folders = nbexplore.folders(pages, chunks).set_index("folder")
    assert folders.loc["total", "pages"] == 6 and folders.loc["total", "pages_without_chunks"] == 1
    assert folders.loc["animals", "chunks"] == 3
    stale = nbexplore.staleness(vault, env).set_index("check")
    assert list(stale.columns) == ["vault (.vault-meta)"] and stale.loc["state"].iloc[0] == "verified"
    terms = nbexplore.top_terms(env.index, 3)
    assert terms.term.iloc[0] == "zebra" and list(terms.chunks) == sorted(terms.chunks, reverse=True)
    table = nbexplore.retrieval_table(retrieve(vault, "zebra stripes", top=2))
    assert list(table.columns) == ["rank", "page", "chunk", "bm25_score", "snippet"] and table.page.iloc[0] == "wiki/animals/zebra.md"
    cover = nbexplore.judged_coverage(pages, qs).set_index("key").value
    assert cover["pages judged relevant by some query"] == 6 and cover["negative queries"] == 1


def test_explore_on_the_bundled_sample_uses_the_cache() -> None:
    v, _ = resolve_inputs("sample", "sample")
    env = nbexplore.explore_env(v, "english")
    assert env.source == "cache" and env.index.analyzer_name == "english"
    overview = nbexplore.index_overview(env).set_index("key").value
    assert overview["source"].startswith("evaluation cache") and "path" not in overview.index
    assert not (v.root / ".vault-meta").exists()


def test_explore_auto_is_the_language_analyzer_not_the_vaults_own(small) -> None:
    vault, _ = small
    own = nbexplore.explore_env(vault)
    assert own.source == "vault" and own.index.analyzer_name == "default"
    env = nbexplore.explore_env(vault, "auto")
    assert env.source == "cache" and env.index.analyzer_name == "auto"


# --------------------------------------------------------------------- sweep

def test_sweep_splits_as_tune_does_fixed_by_the_seed_and_disjoint(small) -> None:
    from vaulteval.workbench.tune import tune_test_split

    vault, qs = small
    sw = sweep(vault, qs, Grid(k1=[0.5, 1.5]), measure="R@2", seed=3)
    tune_ids, test_ids, _ = tune_test_split(qs, 0.5, 3)
    assert (sw.tune_ids, sw.heldout_ids) == (tune_ids, test_ids)
    assert sorted(tune_ids + test_ids) == sorted(q.query_id for q in qs.positive) and not set(tune_ids) & set(test_ids)
    with pytest.raises(UsageError, match="tune_fraction"):
        sweep(vault, qs, Grid(), tune_fraction=1.0)


def test_llm_prefix_tiers_need_egress_and_a_provisioned_vault() -> None:
    with pytest.raises(UsageError, match="allow_egress=True"):
        Grid(prefix=["anthropic-api"]).strategies()
    with pytest.raises(UsageError, match="prefix=\\['provisioned'\\]"):
        Grid(prefix=["ollama"]).strategies(allow_egress=True)
    with pytest.raises(UsageError, match="unknown"):
        Grid(prefix=["bogus"]).strategies()
    assert len(Grid(k1=[1.2, 1.5], b=[0.5], target=[800, 2000]).strategies()) == 4


def test_sweep_chooses_on_tuning_queries_and_reports_held_out(small) -> None:
    vault, qs = small
    sw = sweep(vault, qs, Grid(k1=[0.5, 1.5], b=[0.3, 0.75], target=[2000]), measure="R@2", seed=0)
    assert len(sw.table) == 5 and sw.table.is_default.sum() == 1
    assert sw.table.set_index("setting").loc[sw.best.name, "tune"] == sw.table.tune.max()
    assert sw.test.n == len(sw.heldout_ids) and sw.tune_test.n == len(sw.tune_ids)
    # On this tiny set every setting ties on the tuning queries: the default stays.
    assert sw.best.key == sw.default.key
    assert sw.verdict.splitlines()[1:] == ["The default setting is already the best on the tuning queries: keep it."]
    assert list(sw.summary().queries) == ["tuning", "held-out"]
    assert list(sw.ranked().tune) == sorted(sw.table.tune, reverse=True)


@pytest.mark.parametrize("verdict,reason,needed,conclusion", [
    ("keep", "the default is as good or better on the test split", None, "Keep the default."),
    ("inconclusive", "the 95% CI of the difference includes 0", 420,
     "Keep the default until more queries decide (about 420 judged queries)."),
    ("adopt", "the 95% CI of the gain lies above 0 and no slice loses", None, "Adopt it."),
])
def test_sweep_verdict_is_tunes_verdict_in_words(verdict: str, reason: str, needed, conclusion: str) -> None:
    import pandas as pd

    from vaulteval.workbench.stats import PairedTest
    from vaulteval.workbench.sweep import SweepResult

    best, default = Strategy.parse("bm25:k1=0.9,name=k1=0.9"), Strategy(name="default")
    table = pd.DataFrame([{"setting": "default", "tune": 0.5, "heldout": 0.6, "is_default": True},
                          {"setting": "k1=0.9", "tune": 0.7, "heldout": 0.68, "is_default": False}])
    decision = {"verdict": verdict, "reason": reason, "ci95": [-0.01, 0.17], "queries_needed": needed,
                "comparison": {"delta": 0.08, "delta_ci_low": -0.01, "delta_ci_high": 0.17, "p": 0.5, "comparisons": 1,
                               "verdict": "no detectable difference", "mde": 0.3, "more_queries": 40}}
    result = SweepResult("R@2", table, best, default, ["q1", "q2", "q3"], ["q4", "q5"],
                         PairedTest(2, 0.08, 1, 0, 1, 0.5, 0.5), PairedTest(3, 0.2, 2, 1, 0, 0.25, 0.3), seed=7,
                         decision=decision)
    lines = result.verdict.splitlines()
    assert lines[0] == ("WARNING (overfitting): the best of 1 settings was picked on 3 tuning queries (seed 7); "
                        "only the 2 held-out queries give an honest estimate.")
    assert lines[1] == ("best k1=0.9: tuning 0.7000 vs default 0.5000 (+0.2000); held-out 0.6800 vs "
                        "0.6000 (+0.0800, 1/0/1 W/T/L).")
    assert lines[2] == (f"Verdict: {verdict}: {reason} (held out: R@2: Δ +0.080 [-0.010, +0.170] 95%, p 0.500 → no "
                        "detectable difference (the set detects 0.300 or more; needs about 40 more queries)). "
                        f"{conclusion}") and len(lines) == 3


# --------------------------------------------------------------------- plots

def _labelled(fig) -> bool:
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    titled = bool(fig._suptitle and fig._suptitle.get_text()) or all(ax.get_title() for ax in axes)
    return titled and all(ax.get_xlabel() and ax.get_ylabel() for ax in axes)


def test_every_plot_is_titled_and_labelled(ev, small) -> None:
    vault, qs = small
    figs = [nbplots.plot_curves(nbviews.cutoff_curves(ev, 5)),
            nbplots.plot_per_tag(nbviews.per_tag(ev), ev.measures[0]),
            nbplots.plot_miss_causes(nbviews.miss_counts(ev))]
    deltas = nbviews.query_deltas(ev, "bm25-english-bm25_top=3", "nDCG@2")
    figs.append(nbplots.plot_deltas(deltas, "nDCG@2", "bm25-english"))
    sw = sweep(vault, qs, Grid(k1=[1.2, 1.5], b=[0.5, 0.75], target=[1000, 2000]), measure="R@2")
    figs.append(nbplots.plot_heatmaps(sw.table, sw.measure, "tune", default=(1.5, 0.75)))
    env = nbexplore.explore_env(vault)
    figs.append(nbplots.plot_chunks(nbexplore.chunk_table(env)))
    figs.append(nbplots.plot_top_terms(nbexplore.top_terms(env.index, 5)))
    for fig in figs:
        assert _labelled(fig), fig
    heat = figs[4]
    assert len([ax for ax in heat.axes if ax.get_visible()]) == 3  # two panels and the colour bar
