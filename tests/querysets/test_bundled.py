"""Every query set bundled in querysets/ loads and validates, without the shared data.

A set with ``vault:`` (the sample vault's) is loaded against its vault. The help
vault's sets have none (the vault lives outside the repository), so each is
validated against a stand-in vault holding an empty note at every judged path:
that checks everything but the pages' content.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_bundled.py -q``
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from vaulteval.querysets.formats import read_yaml
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault

QUERYSETS = Path(__file__).resolve().parents[2] / "querysets"
BUNDLED = sorted(QUERYSETS.glob("*.yaml"))
HELP_LANGUAGES = ("en", "es", "de", "zh", "ja", "ru")


def test_the_bundled_sets_are_found() -> None:
    names = {p.name for p in BUNDLED}
    assert "sample-vault.yaml" in names
    assert {f"obsidian-help-{lang}.yaml" for lang in HELP_LANGUAGES} <= names


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_ids_are_unique_and_grades_are_0_to_2(path: Path) -> None:
    raw = read_yaml(path)
    assert raw.problems == []
    ids = Counter(e.query_id for e in raw.entries)
    assert [qid for qid, n in ids.items() if n > 1] == []
    for entry in raw.entries:
        assert isinstance(entry.text, str) and entry.text.strip(), entry.query_id
        for key, grade, _line, _path in entry.judgments:
            assert type(grade) is int and 0 <= grade <= 2, (entry.query_id, key, grade)


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_the_set_validates(path: Path, tmp_path: Path) -> None:
    raw = read_yaml(path)
    if raw.vault_root is not None:
        qs = load_queryset(path)
    else:
        qs = load_queryset(path, _stand_in_vault(tmp_path / "vault", raw))
    assert len(qs) == len(raw.entries)
    assert len(qs.positive) > 0


@pytest.mark.parametrize("lang", HELP_LANGUAGES)
def test_the_help_sets_are_large_enough(lang: str) -> None:
    raw = read_yaml(QUERYSETS / f"obsidian-help-{lang}.yaml")
    assert raw.vault_root is None  # the help vault is not in the repository
    positive = [e for e in raw.entries if any(g > 0 for _k, g, _l, _p in e.judgments)]
    assert len(positive) >= (40 if lang == "en" else 12)
    if lang == "en":
        splits = Counter(e.extra.get("split") for e in raw.entries)
        assert splits["test"] >= 30 and splits["test"] + splits["tune"] == len(raw.entries)


def _stand_in_vault(root: Path, raw) -> Vault:
    """A plain vault (notes at the root) with an empty note at every key, which must be a note path."""
    (root / ".obsidian").mkdir(parents=True)
    for entry in raw.entries:
        for key, _grade, _line, _path in entry.judgments:
            assert isinstance(key, str) and key.endswith(".md") and not key.startswith("[["), key
            note = root / key
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text(f"# {note.stem}\n", encoding="utf-8")
    return Vault(root)
