"""Judgments that follow the vault: renamed, moved and deleted pages are found, named, fixed and refused.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_follow.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.querysets.follow import DanglingJudgments
from vaulteval.querysets.generate.core import generate_queryset
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault

from evalkit import make_vault

PAGES = {
    "coffee/Grinder.md": "---\naddress: grinder-01\n---\n# Grinder\n\nThe burrs are 54 mm flat burrs.\n",
    "coffee/Water recipe.md": "# Water recipe\n\nThird wave water, one sachet per four litres.\n",
    "garden/Monstera.md": "# Monstera\n\nRepot in spring with chunky bark.\n",
    "garden/Fungus gnats.md": "# Fungus gnats\n\nYellow sticky traps and bottom watering.\n",
}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Vault, Path]:
    vault = Vault(make_vault(tmp_path / "v", PAGES))
    out = tmp_path / "sets" / "q.yaml"
    generate_queryset(vault, out, kinds=["title"], n=40, seed=0)
    return vault, out


def _move(vault: Vault, old: str, new: str, text: str | None = None) -> None:
    src, dst = vault.root / old, vault.root / new
    dst.parent.mkdir(parents=True, exist_ok=True)
    src.rename(dst)
    if text is not None:
        dst.write_text(text, encoding="utf-8")


def test_moved_pages_are_found_by_address_content_and_link(setup) -> None:
    vault, out = setup
    _move(vault, "wiki/coffee/Grinder.md", "wiki/gear/Burr mill.md",
          "---\naddress: grinder-01\n---\n# Burr mill\n\nEdited after the move.\n")       # address
    _move(vault, "wiki/coffee/Water recipe.md", "wiki/coffee/Brew water.md")           # same bytes
    _move(vault, "wiki/garden/Monstera.md", "wiki/plants/Monstera.md",
          "# Monstera\n\nEdited too.\n")                                                # same name: link
    (vault.root / "wiki/garden/Fungus gnats.md").unlink()                               # gone
    with pytest.raises(DanglingJudgments) as caught:
        load_queryset(out, vault)
    found = {d.key: (d.new, d.how) for d in caught.value.dangling}
    assert found["wiki/coffee/Grinder.md"] == ("wiki/gear/Burr mill.md", "address")
    assert found["wiki/coffee/Water recipe.md"] == ("wiki/coffee/Brew water.md", "content")
    assert found["wiki/garden/Monstera.md"] == ("wiki/plants/Monstera.md", "link")
    assert found["wiki/garden/Fungus gnats.md"] == (None, "gone")


def test_check_names_the_judgment_fix_repairs_it_and_eval_refuses_the_unfixed_set(setup, tmp_path, capsys) -> None:
    vault, out = setup
    _move(vault, "wiki/coffee/Water recipe.md", "wiki/drinks/Water recipe.md")
    assert main(["queryset", "check", str(out), "--vault", str(vault.root)]) == 2
    err = capsys.readouterr().err
    assert "'title-" in err and "wiki/coffee/Water recipe.md is dangling; moved to wiki/drinks/Water recipe.md" in err

    assert main(["queryset", "check", str(out), "--vault", str(vault.root), "--fix", str(vault.root / "q.yaml")]) == 2
    assert "inside the vault" in capsys.readouterr().err and not (vault.root / "q.yaml").exists()
    fixed = tmp_path / "fixed" / "q.yaml"
    assert main(["queryset", "check", str(out), "--vault", str(vault.root), "--fix", str(fixed)]) == 0
    assert "fixed" in capsys.readouterr().out
    repaired = yaml.safe_load(fixed.read_text(encoding="utf-8"))
    keys = {k for q in repaired["queries"] for k in q["relevant"]}
    assert "wiki/drinks/Water recipe.md" in keys and "wiki/coffee/Water recipe.md" not in keys
    assert len(load_queryset(fixed)) == len(load_queryset(fixed, vault))  # its vault: still resolves

    rc = main(["eval", "run", "--vault", str(vault.root), "--queryset", str(out), "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "dangling judgment" in err[0] and "wiki/coffee/Water recipe.md -> wiki/drinks/Water recipe.md" in err[0]
    assert not (tmp_path / "runs").exists()


def test_check_notes_pages_edited_since_they_were_judged(setup, capsys) -> None:
    vault, out = setup
    (vault.root / "wiki/garden/Monstera.md").write_text("# Monstera\n\nNow in a bigger pot.\n", encoding="utf-8")
    assert main(["queryset", "check", str(out), "--vault", str(vault.root)]) == 0
    assert "changed since they were judged" in capsys.readouterr().out
