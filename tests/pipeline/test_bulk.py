"""Writers collect garbage less often while they run, and put the collector's thresholds back."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from vaulteval import Vault
from vaulteval.pipeline.bulk import BULK_GEN0, bulk_work

from pipeline_fixtures import fresh_vault  # noqa: F401


def test_thresholds_are_raised_inside_and_restored_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with bulk_work():
            assert gc.get_threshold() == (max(before[0], BULK_GEN0), *before[1:])
            raise RuntimeError("a failed build")
    assert gc.get_threshold() == before


def test_provision_runs_with_fewer_collections(fresh_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.pipeline import provision as provision_module

    seen = []
    real = provision_module.run_prefix
    monkeypatch.setattr(provision_module, "run_prefix", lambda *a, **k: seen.append(gc.get_threshold()[0]) or real(*a, **k))
    before = gc.get_threshold()
    report = provision_module.provision(Vault(fresh_vault))
    assert report["index"]["docs"] > 0 and seen and all(t >= BULK_GEN0 for t in seen)
    assert gc.get_threshold() == before
