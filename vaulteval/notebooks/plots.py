"""Figures the notebooks show, drawn from ``nbviews`` tables; each returns a closed matplotlib Figure.

Usage::

    fig = plot_curves(nbviews.cutoff_curves(ev))
    fig                      # a notebook displays it once (PNG); fig.savefig("curves.png") works too
    fig.data                 # the data frame drawn, one row per plotted value, in drawing order

nbval does not compare images, so each figure carries ``.data``: the tidy
frame it was drawn from, which tests check instead of pixels.

Figures are closed before they are returned, so a notebook shows each one
exactly once, through the returned object. Every axis is labelled and every
figure titled; sizes are fixed so stored outputs do not change.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

FAMILY_LABELS = {"R": "Recall@k (share of relevant pages in the top k)",
                 "Success": "Success@k (a relevant page in the top k)"}


def _with_data(fig: "Figure", data: "pd.DataFrame") -> "Figure":
    fig.data = data.reset_index(drop=True)  # type: ignore[attr-defined]
    return fig


def _figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = (9.0, 4.5)):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=size, squeeze=False, layout="constrained")
    plt.close(fig)
    return fig, axes


def plot_curves(curves: "pd.DataFrame") -> "Figure":
    """Recall@k and Success@k against k, one line per run (input: ``nbviews.cutoff_curves``)."""
    import pandas as pd

    families = list(dict.fromkeys(curves.measure))
    fig, axes = _figure(1, len(families), (5.0 * len(families), 4.2))
    drawn = []
    for ax, fam in zip(axes[0], families):
        block = curves[curves.measure == fam]
        for run, grp in block.groupby("run", sort=False):
            ax.plot(grp.k, grp.value, marker="o", markersize=3, label=run)
            drawn.append(grp[["measure", "run", "k", "value"]])
        ax.set_title(FAMILY_LABELS.get(fam, f"{fam}@k"), fontsize=10)
        ax.set_xlabel("cutoff k (pages)")
        ax.set_ylabel(f"mean {fam}@k over queries")
        ax.set_ylim(0.0, 1.01)  # a share: from 0, so a small gap does not look large
        ax.set_xticks(sorted(set(block.k))[:: max(1, len(set(block.k)) // 10)])
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Retrieval quality by cutoff")
    return _with_data(fig, pd.concat(drawn) if drawn else curves[["measure", "run", "k", "value"]])


def plot_per_tag(table: "pd.DataFrame", measure: str) -> "Figure":
    """Horizontal grouped bars: mean ``measure`` per tag and run (input: ``nbviews.per_tag``)."""
    import numpy as np

    import pandas as pd

    runs = [c for c in table.columns if c not in ("tag", "n")]
    fig, axes = _figure(1, 1, (9.0, 1.4 + 0.22 * len(table) * max(2, len(runs))))
    ax = axes[0][0]
    y = np.arange(len(table))
    height = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        ax.barh(y + (i - (len(runs) - 1) / 2) * height, table[run], height=height, label=run)
    ax.set_yticks(y, [f"{t} (n={n})" for t, n in zip(table.tag, table.n)], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.0)
    ax.set_xlabel(f"mean {measure}")
    ax.set_ylabel("query tag")
    ax.set_title(f"{measure} by query tag")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(title="run", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    data = pd.DataFrame([(run, t, n, v) for run in runs for t, n, v in zip(table.tag, table.n, table[run])],
                        columns=["run", "tag", "n", "value"])
    return _with_data(fig, data)


def plot_miss_causes(counts: "pd.DataFrame") -> "Figure":
    """Bars of misses per cause and run (input: ``nbviews.miss_counts``, one row per cause)."""
    import numpy as np

    import pandas as pd

    table = counts
    runs = [c for c in table.columns if c != "cause"]
    fig, axes = _figure(1, 1, (9.0, 3.8))
    ax = axes[0][0]
    y = np.arange(len(table))
    height = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        ax.barh(y + (i - (len(runs) - 1) / 2) * height, table[run], height=height, label=run)
    ax.set_yticks(y, list(table.cause))
    ax.invert_yaxis()
    ax.set_xlabel("missed (query, relevant page) pairs")
    ax.set_ylabel("cause")
    ax.set_title("Why relevant pages were missed")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(title="run", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    data = pd.DataFrame([(run, c, int(v)) for run in runs for c, v in zip(table.cause, table[run])],
                        columns=["run", "cause", "missed"])
    return _with_data(fig, data)


def plot_deltas(deltas: "pd.DataFrame", measure: str, run: str) -> "Figure":
    """Per-query delta of ``measure`` (rerank minus BM25), sorted; wins green, losses red (input: ``query_deltas``)."""
    fig, axes = _figure(1, 1, (9.0, 4.0))
    ax = axes[0][0]
    colors = ["tab:green" if o == "win" else "tab:red" if o == "loss" else "lightgray" for o in deltas.outcome]
    x = range(len(deltas))
    ax.bar(x, deltas.delta, color=colors, width=1.0)
    ax.axhline(0, color="black", linewidth=0.8)
    wins, ties, losses = (int((deltas.outcome == o).sum()) for o in ("win", "tie", "loss"))
    ax.set_title(f"{run}: per-query change in {measure} ({wins} wins, {ties} ties, {losses} losses)")
    ax.set_xlabel("queries, sorted by change")
    ax.set_ylabel(f"Δ {measure} (rerank − BM25)")
    ax.set_xticks([])
    ax.grid(axis="y", alpha=0.3)
    return _with_data(fig, deltas[["query_id", "delta", "outcome"]].assign(color=colors))


def plot_heatmaps(table: "pd.DataFrame", measure: str, column: str = "tune",
                  default: tuple[float, float] | None = None) -> "Figure":
    """k1 x b heatmaps of ``column``, one panel per (target, prefix, bm25_top) (input: ``SweepResult.table``)."""
    import numpy as np
    import pandas as pd

    grid = table[~table.is_default]
    facets = list(grid.groupby(["target", "prefix", "bm25_top"], sort=True))
    cols = min(3, len(facets))
    rows = math.ceil(len(facets) / cols)
    fig, axes = _figure(rows, cols, (4.6 * cols, 3.9 * rows))
    lo, hi = float(grid[column].min()), float(grid[column].max())
    image = None
    cells = []
    for ax, ((target, prefix, top), block) in zip(axes.flat, facets):
        k1s, bs = sorted(set(block.k1)), sorted(set(block.b))
        mat = np.full((len(k1s), len(bs)), np.nan)
        for r in block.itertuples(index=False):
            mat[k1s.index(r.k1), bs.index(r.b)] = getattr(r, column)
        image = ax.imshow(mat, cmap="viridis", vmin=lo, vmax=hi if hi > lo else lo + 1e-9, origin="lower",
                          aspect="auto")
        for (i, j), v in np.ndenumerate(mat):
            mark = "*" if default is not None and (k1s[i], bs[j]) == default else ""
            cells.append((target, prefix, top, k1s[i], bs[j], v, bool(mark)))
            ax.text(j, i, f"{v:.3f}{mark}", ha="center", va="center", fontsize=8,
                    color="white" if v < (lo + hi) / 2 else "black")
        ax.set_xticks(range(len(bs)), [f"{b:g}" for b in bs])
        ax.set_yticks(range(len(k1s)), [f"{k:g}" for k in k1s])
        ax.set_xlabel("b (length normalisation)")
        ax.set_ylabel("k1 (term saturation)")
        ax.set_title(f"target {target} chars, {prefix}, bm25_top {top}", fontsize=9)
    for ax in list(axes.flat)[len(facets):]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label=f"mean {measure}")
    split = {"tune": "tuning", "heldout": "held-out"}.get(column, column)
    fig.suptitle(f"{measure} on the {split} queries (* = default k1, b)")
    data = pd.DataFrame(cells, columns=["target", "prefix", "bm25_top", "k1", "b", column, "default"])
    return _with_data(fig, data)


def plot_chunks(chunks: "pd.DataFrame") -> "Figure":
    """Two histograms: chunk sizes in characters and chunks per page (input: ``nbviews.chunk_table``)."""
    import pandas as pd

    fig, axes = _figure(1, 2, (10.0, 3.8))
    ax1, ax2 = axes[0]
    ax1.hist(chunks.chars, bins=20, color="tab:blue")
    ax1.set_xlabel("chunk size (characters)")
    ax1.set_ylabel("chunks")
    ax1.set_title("Chunk sizes")
    per_page = chunks.groupby("page").size()
    top = int(per_page.max()) if len(per_page) else 1
    counts = per_page.value_counts()
    log = len(counts) > 1 and counts.max() > 20 * counts.min()  # rare multi-chunk pages stay visible
    ax2.hist(per_page, bins=range(1, top + 2), color="tab:orange", align="left", rwidth=0.8, log=log)
    ax2.set_xlabel("chunks per page")
    ax2.set_ylabel("pages (log scale)" if log else "pages")
    ax2.set_title("Chunks per page")
    ax2.xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle("How the vault is chunked")
    sizes = pd.DataFrame({"panel": "chunk size", "key": [f"{p}#{i}" for p, i in zip(chunks.page, chunks.chunk_index)],
                          "value": chunks.chars.astype(int)})
    pages = pd.DataFrame({"panel": "chunks per page", "key": per_page.index, "value": per_page.values.astype(int)})
    return _with_data(fig, pd.concat([sizes, pages]))


def plot_top_terms(terms: "pd.DataFrame") -> "Figure":
    """Horizontal bars: the most widespread terms and how many chunks hold each (input: ``top_terms``)."""
    fig, axes = _figure(1, 1, (7.0, max(3.0, 0.28 * len(terms) + 1.0)))
    ax = axes[0][0]
    ax.barh(range(len(terms)), terms.chunks, color="tab:purple")
    ax.set_yticks(range(len(terms)), list(terms.term), fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("chunks containing the term")
    ax.set_ylabel("term (analyzed)")
    ax.set_title("Most widespread terms")
    ax.grid(axis="x", alpha=0.3)
    return _with_data(fig, terms[["term", "chunks"]])


def plot_abstention(curve: "pd.DataFrame") -> "Figure":
    """Recall kept against the false-positive rate, one line per run (input: ``ev.abstention``)."""
    fig, axes = _figure(1, 1, (6.0, 4.2))
    ax = axes[0][0]
    for run, grp in curve.groupby("run", sort=False):
        ax.step(grp.fp_rate, grp.recall_kept, where="post", label=run)
    ax.axvline(0.10, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("negative queries still answered (false-positive rate)")
    ax.set_ylabel("relevant pages in the top k kept")
    ax.set_xlim(0.0, 1.02)
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Abstention: raising the minimum score")
    return _with_data(fig, curve[["run", "fp_rate", "recall_kept"]])
