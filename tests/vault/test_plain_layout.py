"""A plain Obsidian vault (notes at the root, .obsidian/, an excluded folder, .trash/, attachments) works as it is.

The vault is the sample's plain layout (``vaulteval sample DEST --layout plain``):
it provisions, retrieves, evaluates and verifies; excluded, trashed and
non-Markdown files never appear; retrieve and eval leave every byte as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline_fixtures import run_cli, run_json, run_main, snapshot
from vaulteval import Vault
from vaulteval.cli.sample import PLAIN_EXTRAS, copy_sample
from vaulteval.errors import PathEscape, VaultSelectionError
from vaulteval.vault.layout import IgnoreRules

# Words that exist only in files that must never be indexed.
NEVER = {"zanzibarite": "Archive/", "quokkaberry": "Templates/ draft (regex filter)",
         "marmalite": ".trash/", "vellichor": "attachments/receipt.txt"}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_sample(tmp_path_factory.mktemp("plain") / "vault", layout="plain")
    code, out, err = run_main("provision", "--vault", root)
    assert code == 0, err
    return root


def test_notes_are_the_root_and_paths_stay_vault_relative(plain: Path) -> None:
    vault = Vault(plain)
    assert vault.notes_rel == "" and vault.notes_dir == plain
    rels = [p.rel for p in vault.iter_pages()]
    assert "howto/Descaling.md" in rels and len(rels) == 53  # the sample's notes, nothing else
    assert not any(r.startswith((".", "Archive/", "Templates/", "attachments/", "querysets/")) for r in rels)


@pytest.mark.parametrize("word", sorted(NEVER))
def test_excluded_trashed_and_attachment_words_are_never_found(plain: Path, word: str) -> None:
    result = run_json("retrieve", "--vault", plain, word, "--no-rerank", "--top", "10")
    assert result["candidates"] == [], f"{word} from {NEVER[word]} was indexed"


def test_retrieve_finds_notes_at_the_root(plain: Path) -> None:
    result = run_json("retrieve", "--vault", plain, "how do I descale the espresso machine", "--no-rerank")
    assert "howto/Descaling.md" in [c["page_path"] for c in result["candidates"]]


def test_eval_run_and_verify_leave_the_tree_byte_identical(plain: Path, tmp_path: Path) -> None:
    before = snapshot(plain)
    result = run_json("retrieve", "--vault", plain, "sourdough starter", "--no-rerank")
    assert result["candidates"]
    qs = plain / "querysets" / "sample-vault.yaml"
    proc = run_cli("eval", "run", "--vault", plain, "--queryset", qs, "--strategy", "bm25",
                   "--out", tmp_path / "runs", "--id", "plain", timeout=300)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "runs" / "plain" / "manifest.json").read_text())
    assert manifest["vault"]["notes_dir"] == "" and manifest["vault"]["pages"] == 53
    proc = run_cli("eval", "verify", tmp_path / "runs" / "plain", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert snapshot(plain) == before


def test_notes_dir_flag_and_config(tmp_path: Path) -> None:
    root = tmp_path / "v"
    (root / "Notes" / "sub").mkdir(parents=True)
    (root / "Notes" / "sub" / "Okapi.md").write_text("Okapi forest notes.", encoding="utf-8")
    (root / "Loose.md").write_text("Not in the notes folder.", encoding="utf-8")
    with pytest.raises(VaultSelectionError, match="--notes-dir"):
        Vault(root)
    assert [p.rel for p in Vault(root, notes_dir="Notes").iter_pages()] == ["Notes/sub/Okapi.md"]
    (root / ".vaulteval.json").write_text('{"notes_dir": "Notes"}', encoding="utf-8")
    vault = Vault(root)
    assert vault.notes_rel == "Notes" and vault.page_path("Notes/sub/Okapi.md").is_file()
    with pytest.raises(PathEscape):
        vault.page_path("Loose.md")
    code, out, err = run_main("provision", "--vault", root)
    assert code == 0, err
    hits = run_json("retrieve", "--vault", root, "okapi", "--no-rerank")["candidates"]
    assert [h["page_path"] for h in hits] == ["Notes/sub/Okapi.md"]
    assert run_main("doctor", "--vault", root, "--notes-dir", "../x")[0] == 2
    assert run_main("doctor", "--vault", root, "--notes-dir", "Missing")[0] == 2


def test_a_symlink_out_of_the_notes_or_into_a_hidden_folder_is_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret", encoding="utf-8")
    root = tmp_path / "v"
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "workspace.md").write_text("hidden", encoding="utf-8")
    (root / "Real.md").write_text("real", encoding="utf-8")
    (root / "Escape.md").symlink_to(outside)
    (root / "Hidden.md").symlink_to(root / ".obsidian" / "workspace.md")
    assert [p.rel for p in Vault(root).iter_pages()] == ["Real.md"]


def test_obsidian_exclusions_apply_to_a_wiki_vault_too(tmp_path: Path) -> None:
    root = tmp_path / "v"
    for rel in ("wiki/keep.md", "wiki/drafts/skip.md", "wiki/.trash/gone.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x", encoding="utf-8")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["wiki/drafts/"]}', encoding="utf-8")
    vault = Vault(root)
    assert vault.notes_rel == "wiki" and [p.rel for p in vault.iter_pages()] == ["wiki/keep.md"]


@pytest.mark.parametrize("filters, path, excluded", [
    (["Archive/"], "Archive/a.md", True),
    (["Archive/"], "Archive.md", False),
    (["Archive"], "Archive.md", True),          # a plain entry is a path prefix, as in Obsidian
    (["Daily/2020"], "Daily/2021/x.md", False),
    (["/\\.excalidraw\\.md$/"], "Drawings/a.excalidraw.md", True),
    (["", "  "], "x.md", False),                # empty entries are skipped, as Obsidian does
    (["/(?<year>20\\d\\d)/"], "Daily/2021/x.md", True),  # JavaScript's named groups work
])
def test_obsidian_ignore_filters(filters: list, path: str, excluded: bool) -> None:
    assert IgnoreRules.parse(filters).excluded(path) is excluded


@pytest.mark.parametrize("filters", [["/[unclosed/"], [42], [None], ["x" * 501], ["a"] * 1001])
def test_a_filter_that_cannot_be_honoured_is_refused_not_dropped(filters: list) -> None:
    with pytest.raises(ValueError):
        IgnoreRules.parse(filters)


def test_the_plain_sample_holds_what_a_real_vault_holds(plain: Path) -> None:
    for rel in PLAIN_EXTRAS:
        assert (plain / rel).is_file()
    assert (plain / "attachments" / "descaler.png").is_file()
