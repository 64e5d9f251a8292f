"""The data behind every notebook plot: what is drawn equals ``fig.data``, and ``fig.data`` is right.

Usage: ``.venv/bin/python -m pytest tests/notebooks/test_plots.py -q``

nbval does not compare images, so each figure's numbers are checked here: once
against the figure's own artists (lines, bars, heatmap cells, histograms), and
once against values worked out in the test from the runs, the misses, the
chunk records and the analyzer, without the view functions.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from vaulteval.notebooks import explore as nbexplore
from vaulteval.notebooks import plots as nbplots
from vaulteval.notebooks import views as nbviews
from vaulteval.workbench.sweep import Grid, sweep

from pipeline_fixtures import chunk_records
from test_views import ev, small  # noqa: F401  (the evaluated toy vault)

RERANKED = "bm25-english-bm25_top=3"


def _widths(ax) -> list[float]:
    return [p.get_width() for p in ax.patches]


def test_curves(ev) -> None:  # noqa: F811
    fig = nbplots.plot_curves(nbviews.cutoff_curves(ev, 5))
    d = fig.data
    lines = [line for ax in fig.axes for line in ax.get_lines()]
    blocks = list(d.groupby(["measure", "run"], sort=False))
    assert len(lines) == len(blocks) == 2 * len(ev.runs)
    for line, ((_fam, run), grp) in zip(lines, blocks):
        assert line.get_label() == run
        assert list(line.get_xdata()) == list(grp.k) and np.allclose(line.get_ydata(), grp.value)
    # Recall@k and Success@k by hand, from each run's ranked pages.
    for run in ev.runs:
        ranks = run.rankings()
        for k in range(1, 6):
            recall, success = [], []
            for q in ev.queryset.positive:
                relevant = {p for p, g in q.relevant.items() if g > 0}
                found = relevant & set(ranks.get(q.query_id, [])[:k])
                recall.append(len(found) / len(relevant))
                success.append(float(bool(found)))
            row = d[(d.run == run.name) & (d.k == k)].set_index("measure").value
            assert row["R"] == pytest.approx(np.mean(recall), abs=1e-4), (run.name, k)
            assert row["Success"] == pytest.approx(np.mean(success), abs=1e-4), (run.name, k)


def test_per_tag(ev) -> None:  # noqa: F811
    measure = ev.measures[0]
    fig = nbplots.plot_per_tag(nbviews.per_tag(ev), measure)
    d = fig.data
    assert np.allclose(_widths(fig.axes[0]), d.value, equal_nan=True)
    pq = ev.per_query[ev.per_query.measure == measure].set_index(["run", "query_id"]).value
    for row in d.itertuples():
        ids = [q.query_id for q in ev.queryset.positive if row.tag in (q.tags or ("(untagged)",))]
        assert row.n == len(ids) > 0
        assert row.value == pytest.approx(np.mean([pq[(row.run, i)] for i in ids]), abs=1e-4)
    assert set(d.tag) == {"animals", "paraphrase", "food", "(untagged)"}  # negatives have no bar


def test_miss_causes(ev) -> None:  # noqa: F811
    fig = nbplots.plot_miss_causes(nbviews.miss_counts(ev))
    d = fig.data
    assert _widths(fig.axes[0]) == list(d.missed)
    by_hand = Counter(zip(ev.misses.run, ev.misses.cause))
    assert {(r.run, r.cause): r.missed for r in d.itertuples() if r.missed} == dict(by_hand)
    assert d.missed.sum() == len(ev.misses) > 0


def test_deltas(ev) -> None:  # noqa: F811
    measure = "nDCG@2"
    fig = nbplots.plot_deltas(nbviews.query_deltas(ev, RERANKED, measure), measure, "english")
    d = fig.data
    ax = fig.axes[0]
    assert [p.get_height() for p in ax.patches] == list(d.delta)
    assert list(d.delta) == sorted(d.delta)
    pq = ev.per_query[ev.per_query.measure == measure].set_index(["run", "query_id"]).value
    base = ev.runs[0].name
    for row in d.itertuples():
        delta = pq[(RERANKED, row.query_id)] - pq[(base, row.query_id)]
        assert row.delta == pytest.approx(delta, abs=1e-4)
        assert row.outcome == ("win" if delta > 1e-9 else "loss" if delta < -1e-9 else "tie")
        assert row.color == {"win": "tab:green", "loss": "tab:red", "tie": "lightgray"}[row.outcome]
    counts = Counter(d.outcome)
    assert f"({counts['win']} wins, {counts['tie']} ties, {counts['loss']} losses)" in ax.get_title()
    assert len(d) == len(ev.queryset.positive)


def test_heatmaps(small) -> None:  # noqa: F811
    vault, qs = small
    sw = sweep(vault, qs, Grid(k1=[0.6, 1.5], b=[0.3, 0.75], target=[1000, 2000]), measure="R@2")
    fig = nbplots.plot_heatmaps(sw.table, sw.measure, "tune", default=(1.5, 0.75))
    d = fig.data
    assert len(d) == 8 and d.default.sum() == 2  # two panels of 2 x 2 cells, the default marked in each
    table = sw.table[~sw.table.is_default]
    for row in d.itertuples():
        want = table[(table.target == row.target) & (table.k1 == row.k1) & (table.b == row.b)].tune
        assert len(want) == 1 and row.tune == pytest.approx(float(want.iloc[0]))
        assert row.default == ((row.k1, row.b) == (1.5, 0.75))
    panels = [ax for ax in fig.axes if ax.images]
    for ax, (_key, block) in zip(panels, d.groupby(["target", "prefix", "bm25_top"], sort=True)):
        drawn = np.asarray(ax.images[0].get_array())
        assert np.allclose(np.sort(drawn.ravel()), np.sort(block.tune.to_numpy()))


def test_chunks_and_top_terms(small) -> None:  # noqa: F811
    vault, _ = small
    env = nbexplore.explore_env(vault)
    fig = nbplots.plot_chunks(nbexplore.chunk_table(env))
    d = fig.data
    records = chunk_records(vault.root)
    sizes = d[d.panel == "chunk size"]
    assert sorted(sizes.value) == sorted(len(r["raw_text"]) for r in records)
    per_page = d[d.panel == "chunks per page"].set_index("key").value.to_dict()
    assert per_page == dict(Counter(r["page_path"] for r in records))
    ax1, ax2 = fig.axes[:2]
    assert sum(p.get_height() for p in ax1.patches) == len(records)
    assert sum(p.get_height() for p in ax2.patches) == len(per_page)

    fig = nbplots.plot_top_terms(nbexplore.top_terms(env.index, 5))
    d = fig.data
    assert _widths(fig.axes[0]) == list(d.chunks)
    # Document frequency by hand: chunk records whose analyzed text holds the term.
    analyzed = [set(env.index.analyze(r["contextualized_text"])) for r in records]
    df = Counter(t for terms in analyzed for t in terms)
    assert list(d.chunks) == [df[t] for t in d.term]
    assert list(d.chunks) == sorted(df.values(), reverse=True)[:5]


def test_abstention(ev) -> None:  # noqa: F811
    fig = nbplots.plot_abstention(ev.abstention)
    d = fig.data
    lines = [line for line in fig.axes[0].get_lines() if line.get_label() in set(d.run)]
    assert [line.get_label() for line in lines] == list(dict.fromkeys(d.run))
    for line in lines:
        block = d[d.run == line.get_label()]
        assert np.allclose(line.get_xdata(), block.fp_rate) and np.allclose(line.get_ydata(), block.recall_kept)
        raw = ev.abstention[ev.abstention.run == line.get_label()]
        assert np.allclose(block.fp_rate, raw.fp_rate) and np.allclose(block.recall_kept, raw.recall_kept)
        assert ((0 <= block.fp_rate) & (block.fp_rate <= 1) & (0 <= block.recall_kept) & (block.recall_kept <= 1)).all()
