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
    generate_queryset(sample, plain, n=120, seed=3)
    summary = generate_queryset(sample, mixed, n=120, seed=3, overlap_mix={"low": 0.5, "mid": 0.4, "high": 0.1})
    load_queryset(mixed, sample)
    assert summary["queries"] == 120
    before, after = _bands(plain), _bands(mixed)
    positives = sum(after.values())
    assert after["high"] < before["high"] and after["low"] > before["low"]
    assert after["high"] <= 0.1 * positives + 1  # the sample vault has low and mid candidates to spare
    header = yaml.safe_load(mixed.read_text(encoding="utf-8"))["generator"]
    assert header["overlap_mix"] == pytest.approx({"low": 0.5, "mid": 0.4, "high": 0.1})


def test_a_band_without_candidates_passes_its_quota_on(tmp_path: Path):
    sample = Vault(BUNDLED_SAMPLE)
    out = tmp_path / "q.yaml"
    # only typos and a few partial titles are low: the rest of an all-low quota is filled from mid, then high
    summary = generate_queryset(sample, out, kinds=["title"], n=60, seed=0, overlap_mix={"low": 1.0})
    plain = generate_queryset(sample, tmp_path / "plain.yaml", kinds=["title"], n=60, seed=0)
    assert summary["queries"] == plain["queries"] == 60
    got = _bands(out)
    assert got["low"] >= plain["overlap_bands"]["low"] and got["mid"] > 0 and got["high"] > 0
    assert got["high"] < plain["overlap_bands"]["high"]


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
