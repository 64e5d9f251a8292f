"""tune's verdict on synthetic per-query tables: adopt only a gain the test split is sure of, on every slice."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from vaulteval.workbench.tune import decide
from vaulteval.workbench.verdict import overlap_band, verdict_line

MEASURE = "nDCG@10"


def table(default: list[float], best: list[float] | None = None, rival: list[float] | None = None) -> pd.DataFrame:
    """``evaluate``'s long per-query table for runs default/best(/rival) on queries q0..qN."""
    rows = [("default", f"q{i:03d}", MEASURE, v) for i, v in enumerate(default)]
    for name, values in (("best", best), ("rival", rival)):
        rows += [(name, f"q{i:03d}", MEASURE, v) for i, v in enumerate(values or [])]
    rows += [(run, qid, "R@100", 1.0) for run, qid, _, _ in rows]  # another measure: ignored
    return pd.DataFrame(rows, columns=["run", "query_id", "measure", "value"])


def shifted(base: list[float], deltas: list[float]) -> list[float]:
    return [b + d for b, d in zip(base, deltas)]


BASE = [0.3 + 0.4 * ((i * 7) % 10) / 10 for i in range(60)]  # spread between 0.3 and 0.66


def test_a_significant_gain_is_adopted() -> None:
    deltas = [0.1 if i % 6 else -0.05 for i in range(60)]  # 50 wins of 0.1, 10 losses of 0.05
    d = decide(table(BASE, shifted(BASE, deltas)), MEASURE, True, 0)
    assert d["verdict"] == "adopt" and d["adopt"] and d["ci95"][0] > 0
    assert d["queries_needed"] is None and d["slices"] == []


def test_a_gain_at_p_about_0_7_is_inconclusive_and_says_how_many_queries_would_decide() -> None:
    deltas = [0.225] * 20 + [-0.2] * 20  # mean +0.0125: randomization p about 0.69
    base = BASE[:40]
    d = decide(table(base, shifted(base, deltas)), MEASURE, True, 0)
    assert d["delta"] > 0 and 0.6 < d["p"] < 0.85, d["p"]
    assert d["verdict"] == "inconclusive" and not d["adopt"]
    assert d["ci95"][0] < 0 < d["ci95"][1]
    # a paired t-test needs far more than the 40 queries here to find +0.01 at this spread
    assert d["queries_needed"] > 1000
    line = verdict_line(d, "bm25:analyzer=english", "bm25")
    assert "\n" not in line and line.startswith("verdict: inconclusive")
    assert f"needs about {d['queries_needed'] - 40} more queries" in line and "→ no detectable difference" in line


def test_a_gain_that_loses_one_slice_significantly_is_inconclusive() -> None:
    deltas = [-0.2 if i < 10 else 0.15 for i in range(60)]  # overall clearly better, every alias query worse
    slices = {"kind=alias": [f"q{i:03d}" for i in range(10)], "kind=title": [f"q{i:03d}" for i in range(10, 60)]}
    d = decide(table(BASE, shifted(BASE, deltas)), MEASURE, True, 0, slices=slices)
    assert d["ci95"][0] > 0  # the overall gain alone would be adopted
    assert d["verdict"] == "inconclusive" and "kind=alias" in d["reason"]
    lost = {s["slice"]: s for s in d["slices"]}
    assert lost["kind=alias"]["loses"] and lost["kind=alias"]["p"] < 0.05 and not lost["kind=title"]["loses"]
    # without the slices the same table is adopted: the slice is what stops it
    assert decide(table(BASE, shifted(BASE, deltas)), MEASURE, True, 0)["verdict"] == "adopt"


def test_a_small_slice_cannot_veto_on_its_own() -> None:
    deltas = [-0.2 if i < 3 else 0.15 for i in range(60)]  # three losses: no randomization test can call that
    d = decide(table(BASE, shifted(BASE, deltas)), MEASURE, True, 0, slices={"kind=alias": ["q000", "q001", "q002"]})
    assert d["verdict"] == "adopt" and d["slices"][0]["p"] >= 0.05


def test_a_significant_loss_is_kept() -> None:
    deltas = [-0.1 if i % 5 else 0.02 for i in range(60)]
    d = decide(table(BASE, shifted(BASE, deltas)), MEASURE, True, 0)
    assert d["verdict"] == "keep" and d["ci95"][1] < 0 and not d["adopt"]


def test_no_better_strategy_on_the_tune_split_is_kept() -> None:
    d = decide(table(BASE), MEASURE, False, 0)
    assert d["verdict"] == "keep" and d["delta"] == 0.0 and "tune split" in d["reason"]


HIGH = {f"q{i:03d}" for i in range(45)}  # 45 of 60 test queries share most words with their target


def test_mostly_high_overlap_evidence_does_not_keep_lexical_over_semantic() -> None:
    deltas = [-0.1 if i % 5 else 0.02 for i in range(60)]  # the semantic candidate loses, on biased evidence
    d = decide(table(BASE, shifted(BASE, deltas)), MEASURE, True, 0, high_overlap=HIGH,
               semantic={"candidate": True, "default": False, "grid": True})
    assert d["verdict"] == "inconclusive" and d["overlap"]["mostly_high"] and d["overlap"]["high"] == 45
    assert d["real_questions_needed"] >= 2 and "real questions" in d["recommendation"]
    assert "share most of their words" in verdict_line(d, "rerank:st", "bm25")
    # the same loss on a set that records no overlap is a plain keep
    assert decide(table(BASE, shifted(BASE, deltas)), MEASURE, True, 0,
                  semantic={"candidate": True, "default": False, "grid": True})["verdict"] == "keep"


def test_mostly_high_overlap_with_a_lexical_best_sizes_real_questions_from_the_semantic_rival() -> None:
    rival = shifted(BASE, [0.05 if i % 2 else -0.05 for i in range(60)])
    d = decide(table(BASE, rival=rival), MEASURE, False, 0, high_overlap=HIGH,
               semantic={"candidate": False, "default": False, "grid": True})
    assert d["verdict"] == "inconclusive" and d["real_questions_needed"] > 0
    lexical_only = decide(table(BASE), MEASURE, False, 0, high_overlap=HIGH,
                          semantic={"candidate": False, "default": False, "grid": False})
    assert lexical_only["verdict"] == "keep" and "share most of their words" in lexical_only["overlap"]["note"]


GAIN = [0.1 if i % 6 else -0.05 for i in range(60)]  # a clear gain: adopted on evidence that can judge it


def test_a_semantic_gain_on_mostly_high_overlap_evidence_is_inconclusive() -> None:
    # Generated sets rank hybrids among themselves by shared words too: a "clear" semantic win there is no verdict.
    d = decide(table(BASE, shifted(BASE, GAIN)), MEASURE, True, 0, high_overlap=HIGH,
               semantic={"candidate": True, "default": False, "grid": True})
    assert d["ci95"][0] > 0 and d["verdict"] == "inconclusive" and not d["adopt"]
    assert d["real_questions_needed"] >= 2 and "real questions" in d["recommendation"]
    assert "cannot judge semantic strategies" in d["reason"]
    # the same table is adopted when the evidence is not mostly high-overlap
    assert decide(table(BASE, shifted(BASE, GAIN)), MEASURE, True, 0, high_overlap=set(list(HIGH)[:30]),
                  semantic={"candidate": True, "default": False, "grid": True})["verdict"] == "adopt"


def test_a_semantic_default_is_neither_replaced_nor_kept_on_mostly_high_overlap_evidence() -> None:
    flags = {"candidate": False, "default": True, "grid": True}
    lexical_gain = decide(table(BASE, shifted(BASE, GAIN)), MEASURE, True, 0, high_overlap=HIGH, semantic=flags)
    assert lexical_gain["verdict"] == "inconclusive" and lexical_gain["real_questions_needed"] >= 2
    loss = [-0.1 if i % 5 else 0.02 for i in range(60)]
    lexical_loss = decide(table(BASE, shifted(BASE, loss)), MEASURE, True, 0, high_overlap=HIGH, semantic=flags)
    assert lexical_loss["verdict"] == "inconclusive"
    # nothing beat the semantic default on the tune split: still no confident keep; N from the default's spread
    nothing = decide(table(BASE), MEASURE, False, 0, high_overlap=HIGH, semantic={**flags, "candidate": True})
    assert nothing["verdict"] == "inconclusive" and nothing["real_questions_needed"] >= 2
    assert "real questions" in nothing["recommendation"]


def test_a_lexical_gain_on_mostly_high_overlap_evidence_with_semantic_strategies_on_the_grid_is_inconclusive() -> None:
    rival = shifted(BASE, [0.05 if i % 2 else -0.05 for i in range(60)])
    d = decide(table(BASE, shifted(BASE, GAIN), rival=rival), MEASURE, True, 0, high_overlap=HIGH,
               semantic={"candidate": False, "default": False, "grid": True})
    assert d["verdict"] == "inconclusive" and d["real_questions_needed"] >= 2
    # a grid without any semantic strategy: shared words are what every strategy matches, the adoption stands
    lexical_only = decide(table(BASE, shifted(BASE, GAIN)), MEASURE, True, 0, high_overlap=HIGH,
                          semantic={"candidate": False, "default": False, "grid": False})
    assert lexical_only["verdict"] == "adopt" and lexical_only["recommendation"] is None
    assert "share most of their words" in lexical_only["overlap"]["note"]


def test_the_real_questions_needed_grow_with_the_spread_between_the_families() -> None:
    flags = {"candidate": True, "default": False, "grid": True}
    narrow = shifted(BASE, [0.12 if i % 2 else -0.02 for i in range(60)])
    wide = shifted(BASE, [0.45 if i % 2 else -0.35 for i in range(60)])
    n_narrow = decide(table(BASE, narrow), MEASURE, True, 0, high_overlap=HIGH, semantic=flags)
    n_wide = decide(table(BASE, wide), MEASURE, True, 0, high_overlap=HIGH, semantic=flags)
    assert n_narrow["real_questions_needed"] < n_wide["real_questions_needed"]


@pytest.mark.parametrize("fields, band", [
    (None, None), ({}, None), ({"overlap": {"share": 0.9, "band": "High"}}, "high"), ({"overlap_band": "low"}, "low"),
    ({"overlap": "mid"}, "mid"), ({"overlap": 0.9}, None), ({"overlap": {"band": 3}}, None),
])
def test_the_overlap_band_is_optional_and_read_leniently(fields, band) -> None:
    assert overlap_band(SimpleNamespace(fields=fields)) == band
