"""Evaluation refuses an index that does not hold the notes as they are now, unless told to measure it anyway.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_stale_eval.py -q``

One provisioned copy of the sample vault serves the module; each test works on
its own copy of it. A judged note is edited and a new note added after the
build: two stale pages, one of them judged by the query set.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vaulteval.cli.main import main
from vaulteval.cli.sample import copy_sample
from vaulteval.errors import EXIT_NOT_PROVISIONED
from vaulteval.pipeline.doctor import doctor, stale_pages
from vaulteval.pipeline.provision import provision
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault
from vaulteval.workbench.evaluate import StaleIndex, evaluate

from evalkit import QUERYSET, eval_cache, snapshot  # noqa: F401

JUDGED = "wiki/howto/Descaling.md"


@pytest.fixture(scope="module")
def provisioned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_sample(tmp_path_factory.mktemp("stale") / "v")
    provision(Vault(root))
    return root


@pytest.fixture
def vault(provisioned: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(provisioned, tmp_path / "v", symlinks=True))


def _edit(root: Path) -> None:
    """One judged note changed and one new note: two pages the index does not hold as they are."""
    page = root / JUDGED
    page.write_text(page.read_text(encoding="utf-8") + "\n\nAlso: the descaler is now vinegar-free.\n",
                    encoding="utf-8")
    (root / "wiki" / "Pantry.md").write_text("# Pantry\n\nFlour, salt, coffee beans.\n", encoding="utf-8")


def _eval(root: Path, out: Path, *extra: str) -> int:
    return main(["eval", "run", "--vault", str(root), "--queryset", str(QUERYSET), "--out", str(out),
                 "--measures", "nDCG@10", "RR", "--id", "r", *extra])


def _the_one_error_line(capsys: pytest.CaptureFixture) -> str:
    """The single line a refused command printed (on stderr, with nothing on stdout)."""
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    return lines[0]


def test_stale_pages_are_changed_deleted_and_new_pages(vault: Path) -> None:
    v = Vault(vault)
    assert stale_pages(v) == set()
    _edit(vault)
    (vault / "wiki" / "coffee" / "Grinder.md").unlink()
    assert stale_pages(Vault(vault)) == {JUDGED, "wiki/Pantry.md", "wiki/coffee/Grinder.md"}
    report = doctor(Vault(vault))  # the same checks, counted apart
    assert (report.stale_pages, report.missing_pages, report.unindexed_pages) == (1, 1, 1)


def test_a_stale_index_fails_the_evaluation_with_one_line_naming_provision(vault: Path, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    _edit(vault)
    before = snapshot(vault)
    assert _eval(vault, tmp_path / "runs") == EXIT_NOT_PROVISIONED
    line = _the_one_error_line(capsys)
    assert "2 page(s)" in line and "(1 judged by the query set)" in line and "--allow-stale" in line
    assert f"vaulteval provision --vault {vault}" in line
    assert not (tmp_path / "runs").exists() and snapshot(vault) == before
    with pytest.raises(StaleIndex) as exc:  # the API refuses alike
        evaluate(Vault(vault), load_queryset(QUERYSET, Vault(vault)), ["bm25"])
    assert exc.value.exit_code == EXIT_NOT_PROVISIONED


def test_allow_stale_runs_and_puts_the_count_in_the_headline_report_and_manifest(
        vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _edit(vault)
    assert _eval(vault, tmp_path / "runs", "--allow-stale") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("STALE INDEX: 2 page(s)") and "(1 judged by the query set)" in out[0]
    assert sum("STALE INDEX" in line for line in out) == 1
    run = tmp_path / "runs" / "r"
    assert out[0] in (run / "report.md").read_text(encoding="utf-8")
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert report["notes"][0] == out[0] and report["params"]["stale_pages"] == 2
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["vault"]["stale_pages"], manifest["vault"]["stale_judged_pages"]) == (2, 1)
    assert manifest["parameters"]["allow_stale"] is True
    # verify recomputes on the same stale index: the same count, the same numbers
    assert main(["eval", "verify", str(run)]) == 0
    assert "reproduces exactly" in capsys.readouterr().out
    provision(Vault(vault))  # now current: verify names the count that changed
    assert main(["eval", "verify", str(run)]) == 1
    assert "  vault: stale pages (the vault's index against the notes): 2 -> 0" in capsys.readouterr().out.splitlines()


def test_a_current_index_runs_and_verify_notices_a_later_edit(vault: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    assert _eval(vault, tmp_path / "runs") == 0
    out = capsys.readouterr().out
    assert "STALE" not in out
    run = tmp_path / "runs" / "r"
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["vault"]["stale_pages"], manifest["parameters"]["allow_stale"]) == (0, False)
    assert manifest["strategies"][0]["index"]["source"] == "vault"
    _edit(vault)
    assert main(["eval", "verify", str(run)]) == 1  # a difference, not exit 10
    assert "  vault: stale pages (the vault's index against the notes): 0 -> 2" in capsys.readouterr().out.splitlines()


def test_cache_builds_are_made_from_the_current_notes(vault: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    _edit(vault)
    assert _eval(vault, tmp_path / "runs", "--cache-index") == 0
    manifest = json.loads((tmp_path / "runs" / "r" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["vault"]["stale_pages"] == 0 and manifest["strategies"][0]["index"]["source"] == "cache"
    assert "STALE" not in capsys.readouterr().out


def _tune(root: Path, out: Path, *extra: str) -> int:
    return main(["tune", "--vault", str(root), "--queryset", str(QUERYSET), "--grid", "bm25;bm25:k1=0.9,b=0.4",
                 "--out", str(out), "--id", "t", *extra])


def test_tune_refuses_a_stale_index_before_any_search_unless_allowed(vault: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    _edit(vault)
    before = snapshot(vault)
    assert _tune(vault, tmp_path / "runs") == EXIT_NOT_PROVISIONED
    line = _the_one_error_line(capsys)
    assert not (tmp_path / "runs").exists()
    assert "so tune would measure old text" in line and "--allow-stale" in line and "2 page(s)" in line
    assert f"vaulteval provision --vault {vault}" in line
    assert snapshot(vault) == before
    assert _tune(vault, tmp_path / "runs", "--allow-stale") == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("vaulteval: warning: STALE INDEX: 2 page(s)")
    tuned = json.loads((tmp_path / "runs" / "t" / "tune.json").read_text(encoding="utf-8"))
    assert tuned["params"]["stale_pages"] == 2 and tuned["params"]["allow_stale"] is True
    assert tuned["decision"]["stale"].startswith("STALE INDEX")
    manifest = json.loads((tmp_path / "runs" / "t" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parameters"]["allow_stale"] is True and manifest["vault"]["stale_pages"] == 2
    assert snapshot(vault) == before


def test_tune_checks_the_notes_once_and_confirms_on_the_checked_index(vault: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import vaulteval.pipeline.doctor as doctor_module

    checks = []
    real = doctor_module.stale_pages

    def counted(*args, **kwargs):
        checks.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(doctor_module, "stale_pages", counted)
    _edit(vault)
    assert _tune(vault, tmp_path / "runs", "--allow-stale") == 0
    assert len(checks) == 1  # the search and the held-out confirmation share one check of every note
    manifest = json.loads((tmp_path / "runs" / "t" / "manifest.json").read_text(encoding="utf-8"))
    tuned = json.loads((tmp_path / "runs" / "t" / "tune.json").read_text(encoding="utf-8"))
    test_ids = set(tuned["params"]["splits"]["test_ids"])
    judged_in_test = any(JUDGED in q.relevant for q in load_queryset(QUERYSET) if q.query_id in test_ids)
    assert manifest["vault"]["stale_pages"] == 2
    assert manifest["vault"]["stale_judged_pages"] == int(judged_in_test)  # counted against the test split
