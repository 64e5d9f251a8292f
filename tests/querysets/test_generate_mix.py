"""queryset generate --overlap-mix: positives shared among overlap bands, shortfalls passed on, bad mixes refused.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_generate_mix.py -q``
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.errors import UsageError
from vaulteval.querysets.generate.core import generate_queryset
from vaulteval.querysets.generate.mix import band_quotas, parse_mix
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import BUNDLED_SAMPLE, Vault

from evalkit import make_vault


def test_parse_mix_normalizes_and_accepts_none():
    assert parse_mix("low=0.5,mid=0.4,high=0.1") == pytest.approx({"low": 0.5, "mid": 0.4, "high": 0.1})
    assert parse_mix("low=1, mid=1") == pytest.approx({"low": 0.5, "mid": 0.5, "high": 0.0})
    assert parse_mix("none") is None and parse_mix(None) is None


@pytest.mark.parametrize("text, message", [
    ("lowish=0.5", "BAND=SHARE"),
    ("low", "BAND=SHARE"),
    ("low=abc", "number from 0 to 1"),
    ("low=1.5", "number from 0 to 1"),
    ("low=nan", "number from 0 to 1"),
    ("low=0,mid=0", "at least one band"),
])
def test_parse_mix_refuses_what_is_no_mix(text: str, message: str):
    with pytest.raises(UsageError, match=message):
        parse_mix(text)


@pytest.mark.parametrize("n", [1, 7, 10, 199, 200])
def test_band_quotas_follow_the_shares_and_sum_to_n(n: int):
    mix = {"low": 0.5, "mid": 0.4, "high": 0.1}
    quotas = band_quotas(n, mix)
    assert sum(quotas.values()) == n
    assert all(abs(quotas[b] - n * mix[b]) < 1 for b in mix)


def _bands(path: Path) -> Counter:
    queries = yaml.safe_load(path.read_text(encoding="utf-8"))["queries"]
    return Counter(q["overlap_band"] for q in queries if q.get("overlap_band"))


def test_a_mix_moves_the_set_toward_low_overlap_and_keeps_n(tmp_path: Path):
    sample = Vault(BUNDLED_SAMPLE)
    plain, mixed = tmp_path / "plain.yaml", tmp_path / "mixed.yaml"
    generate_queryset(sample, plain, n=50, seed=3)
    summary = generate_queryset(sample, mixed, n=50, seed=3, overlap_mix={"low": 0.5, "mid": 0.4, "high": 0.1})
    load_queryset(mixed, sample)
    assert summary["queries"] == 50
    before, after = _bands(plain), _bands(mixed)
    positives = sum(after.values())
    assert after["high"] < before["high"] and after["low"] > before["low"]
    assert after["high"] <= 0.1 * positives + 1  # the sample vault has low and mid candidates to spare
    header = yaml.safe_load(mixed.read_text(encoding="utf-8"))["generator"]
    assert header["overlap_mix"] == pytest.approx({"low": 0.5, "mid": 0.4, "high": 0.1})


def test_a_band_without_candidates_passes_its_quota_on(tmp_path: Path):
    sample = Vault(BUNDLED_SAMPLE)
    out = tmp_path / "q.yaml"
    # names are their page's words: an all-low quota is filled from mid, then high
    summary = generate_queryset(sample, out, kinds=["title"], n=60, seed=0, overlap_mix={"low": 1.0})
    assert summary["queries"] == 60
    assert _bands(out)["high"] > 0


def test_a_typo_is_banded_as_the_name_it_misspells(tmp_path: Path):
    from vaulteval.querysets.generate.candidates import Candidate
    from vaulteval.querysets.generate.kinds import Context
    from vaulteval.querysets.generate.mix import split_by_band
    from vaulteval.querysets.generate.pages import read_pages

    root = make_vault(tmp_path / "v", {"Sourdough starter.md": "# Sourdough starter\n\nFeed it flour and water.\n"})
    ctx = Context(read_pages(Vault(root)))
    page = "wiki/Sourdough starter.md"
    typo = Candidate("title", "typo", "Sourdouhg starter", ((page, 2),), page, 1, "")
    other = Candidate("backlink", "sentence", "keeping the levain alive", ((page, 2),), "wiki/x.md", 1, "")
    assert ctx.lexicon.overlap(typo.text, page) < 0.8  # measured, the misspelt word is not in the page
    bands = split_by_band(ctx, [typo, other])
    assert bands["high"] == [typo] and bands["low"] == [other]


def test_mixed_generation_is_deterministic(tmp_path: Path):
    sample = Vault(BUNDLED_SAMPLE)
    mix = {"low": 0.5, "mid": 0.4, "high": 0.1}
    a, b = tmp_path / "a" / "q.yaml", tmp_path / "b" / "q.yaml"
    generate_queryset(sample, a, n=60, seed=5, overlap_mix=mix)
    generate_queryset(sample, b, n=60, seed=5, overlap_mix=mix)
    assert a.read_bytes() == b.read_bytes()


def test_cli_refuses_a_bad_mix_with_exit_2(tmp_path: Path, capsys):
    rc = main(["queryset", "generate", "--vault", str(BUNDLED_SAMPLE), "--out", str(tmp_path / "q.yaml"),
               "--overlap-mix", "low=2", "--quiet"])
    assert rc == 2
    assert "--overlap-mix" in capsys.readouterr().err
    assert not (tmp_path / "q.yaml").exists()
