"""Real vaults as they are (issue 23 items 1, 2, 4, 5, 9): a vault without ``.obsidian/`` named once with
``--notes-dir .``, a comment-only note, a heading with inline code, bare note names, symlinked notes, and a
query set judging a deleted note. Every test also checks that no byte outside ``.vault-meta/`` changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pipeline_fixtures import run_main
from vaulteval import Vault
from vaulteval.errors import UsageError
from vaulteval.vault.notesrecord import RECORD_REL

CODE_HEADING = "Kommo node parámetro `with` requiere ARRAY no string"


def tree_hash(root: Path) -> str:
    """One digest of every name, link target and byte under ``root`` outside ``.vault-meta/``."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not (dirpath == str(root) and d == ".vault-meta"))
        for name in sorted(dirnames + filenames):
            full = Path(dirpath) / name
            digest.update(str(full.relative_to(root)).encode() + b"\0")
            if full.is_symlink():
                digest.update(b"link:" + os.readlink(full).encode())
            elif full.is_file():
                digest.update(full.read_bytes())
    return digest.hexdigest()


def hub_like(root: Path) -> Path:
    """A vault with no ``.obsidian/`` and no ``wiki/``: like the community hub, it needs ``--notes-dir .``."""
    notes = {
        "T - TODO.md": "%%\nTODO: write the plugin list\n%%\n",
        "Obsidian Core Plugins.md": "# Core plugins\n\nDaily notes, graph view and the quick switcher.\n",
        "02 - Community/Obsidian Core Plugins.md": "Longer path, same name: the vault root's note wins.\n",
        "a/n8n.md": f"# n8n\n\n### {CODE_HEADING}\n\nPass an array, never a string.\n",
        "baking/Country loaf.md": "---\naddress: c-000106\n---\nCountry loaf with a levain and a long proof.\n",
        "x/Twin.md": "twin one\n", "y/Twin.md": "twin two\n",
    }
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    many = "\n\n".join(f"## Section {i}\n\ntext {i}" for i in range(60))
    (root / "Long.md").write_text(many + "\n", encoding="utf-8")
    (root / "alias.md").symlink_to("baking/Country loaf.md")  # a symlink to another note of the vault
    (root.parent / "secret.md").write_text("outside the vault\n", encoding="utf-8")
    (root / "outside.md").symlink_to(root.parent / "secret.md")  # a symlink that leads out
    return root


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = hub_like(tmp_path_factory.mktemp("hub") / "vault")
    before = tree_hash(root)
    code, out, err = run_main("provision", "--vault", root, "--notes-dir", ".")
    assert code == 0, err
    assert tree_hash(root) == before
    return root, before


def test_provision_records_the_notes_folder_and_every_command_uses_it(hub: tuple[Path, str], tmp_path: Path) -> None:
    root, before = hub
    assert json.loads((root / RECORD_REL).read_text())["notes_dir"] == "."
    assert Vault(root).notes_rel == "" and Vault(root).notes_origin == "record"  # the notebooks' entry point
    code, out, err = run_main("doctor", "--vault", root)
    assert code == 0 and out.startswith("retrieve: verified"), out + err
    hits = json.loads(run_main("retrieve", "--vault", root, "levain proof", "--no-rerank")[1])["candidates"]
    assert [h["page_path"] for h in hits] == ["baking/Country loaf.md"]
    for args in (("read", "a/n8n.md"), ("search", "levain"), ("ledgers",)):
        code, out, err = run_main(*args, "--vault", root)
        assert code == 0, (args, err)
    qs = tmp_path / "qs.yaml"
    qs.write_text(json.dumps({"vault": str(root), "queries": [
        {"id": "q1", "query": "levain proof", "relevant": {"baking/Country loaf.md": 1}},
        {"id": "q2", "query": "quick switcher graph", "relevant": {"Obsidian Core Plugins.md": 1}}]}),
        encoding="utf-8")  # JSON is YAML
    code, out, err = run_main("queryset", "check", qs)
    assert code == 0 and out.startswith("ok: 2 queries"), err
    code, out, err = run_main("eval", "run", "--queryset", qs, "--strategy", "bm25", "--out", tmp_path / "runs",
                              "--id", "r")
    assert code == 0, err
    assert tree_hash(root) == before


def test_tune_takes_the_notes_folder_as_every_command_does(tmp_path: Path) -> None:
    root = hub_like(tmp_path / "vault")
    qs = tmp_path / "qs.yaml"
    qs.write_text(json.dumps({"queries": [{"id": f"q{i}", "query": f"levain proof {i}",
                                           "relevant": {"baking/Country loaf.md": 1}} for i in range(4)]}),
                  encoding="utf-8")
    # Never provisioned: the flag alone must reach the query set (it exited 2 before).
    code, out, err = run_main("tune", "--vault", root, "--notes-dir", ".", "--queryset", qs, "--grid", "bm25",
                              "--out", tmp_path / "runs")
    assert code == 0, err


def test_a_flag_that_disagrees_with_the_record_names_both(hub: tuple[Path, str]) -> None:
    root, before = hub
    code, out, err = run_main("doctor", "--vault", root, "--notes-dir", "baking")
    assert code == 2 and err.count("\n") == 1
    assert "'baking'" in err and "'.'" in err and RECORD_REL in err and "--rebuild" in err
    code, _, err = run_main("doctor", "--vault", root, "--notes-dir", ".")  # agreeing is fine
    assert code == 0, err
    with pytest.raises(UsageError):
        Vault(root, notes_dir="a")
    assert tree_hash(root) == before


def test_provision_rebuild_moves_the_record(tmp_path: Path) -> None:
    root = hub_like(tmp_path / "vault")
    assert run_main("provision", "--vault", root, "--notes-dir", ".")[0] == 0
    code, _, err = run_main("provision", "--vault", root, "--notes-dir", "baking")
    assert code == 2 and "disagrees" in err
    code, _, err = run_main("provision", "--vault", root, "--notes-dir", "baking", "--rebuild")
    assert code == 0, err
    assert Vault(root).notes_rel == "baking"


@pytest.mark.parametrize("record", [b"{", b'{"schema": "other", "notes_dir": "."}', b'{"schema": '
                                    b'"vaulteval.notes-folder.v1", "notes_dir": "../out"}'])
def test_a_bad_record_is_one_usage_error_with_the_fix(tmp_path: Path, record: bytes) -> None:
    root = hub_like(tmp_path / "vault")
    (root / RECORD_REL).parent.mkdir(parents=True)
    (root / RECORD_REL).write_bytes(record)
    code, _, err = run_main("doctor", "--vault", root)
    assert code == 2 and err.count("\n") == 1 and "--notes-dir DIR --rebuild" in err


def test_fix_hints_carry_the_notes_folder_and_work_when_followed(tmp_path: Path) -> None:
    root = hub_like(tmp_path / "vault")
    code, out, _ = run_main("doctor", "--vault", root, "--notes-dir", ".")
    assert code == 1
    fix = next(line for line in out.splitlines() if line.strip().startswith("fix: "))
    args = fix.split("fix: vaulteval ", 1)[1].split()
    assert "--notes-dir" in args
    assert run_main(*[a.strip("'") for a in args])[0] == 0
    assert run_main("doctor", "--vault", root)[0] == 0


def test_a_comment_only_note_is_empty_not_missing(hub: tuple[Path, str]) -> None:
    root, _ = hub
    code, out, _ = run_main("doctor", "--vault", root, "--json")
    report = json.loads(out)
    assert report["state"] == "verified" and report["unindexed_pages"] == 0
    assert "T - TODO.md" in report["empty_pages"]
    assert "empty: 1 note(s)" in run_main("doctor", "--vault", root)[1]


def test_read_keeps_inline_code_in_headings_and_follows_the_link(hub: tuple[Path, str]) -> None:
    root, _ = hub
    view = json.loads(run_main("read", "--vault", root, "a/n8n.md", "--json")[1])
    assert CODE_HEADING in [h["text"] for h in view["headings"]]
    code, out, err = run_main("read", "--vault", root, f"[[n8n#{CODE_HEADING}]]", "--json")
    assert code == 0, err
    assert json.loads(out)["text"].startswith(f"### {CODE_HEADING}")


def test_read_resolves_a_bare_name_shortest_path_first(hub: tuple[Path, str]) -> None:
    root, _ = hub
    code, out, err = run_main("read", "--vault", root, "Obsidian Core Plugins", "--json")
    assert code == 0, err
    assert json.loads(out)["page_path"] == "Obsidian Core Plugins.md"
    code, out, err = run_main("read", "--vault", root, "Twin")
    assert code == 2 and err.count("\n") == 1 and "x/Twin.md" in err and "y/Twin.md" in err


def test_a_missing_heading_lists_them_all_or_says_how_many_more(hub: tuple[Path, str]) -> None:
    root, _ = hub
    code, _, err = run_main("read", "--vault", root, "Long#nope")
    assert code == 3 and err.count("\n") == 1
    assert "Section 49" in err and "and 10 more" in err
    code, _, err = run_main("read", "--vault", root, "n8n#nope")
    assert code == 3 and CODE_HEADING in err and "more" not in err


def test_a_symlinked_note_is_its_target_indexed_once(hub: tuple[Path, str]) -> None:
    root, before = hub
    pages = [p.rel for p in Vault(root).iter_pages()]
    assert "baking/Country loaf.md" in pages and "alias.md" not in pages and "outside.md" not in pages
    hits = json.loads(run_main("retrieve", "--vault", root, "levain", "--no-rerank", "--top", "10")[1])["candidates"]
    assert [h["page_path"] for h in hits] == ["baking/Country loaf.md"]
    view = json.loads(run_main("read", "--vault", root, "alias.md", "--json")[1])
    assert view["page_path"] == "baking/Country loaf.md"
    assert tree_hash(root) == before


def test_a_symlink_that_leads_outside_stays_refused(hub: tuple[Path, str]) -> None:
    root, before = hub
    code, out, err = run_main("read", "--vault", root, "outside.md")
    assert code == 2 and "secret" not in out and err.count("\n") == 1
    assert json.loads(run_main("search", "--vault", root, "outside the vault", "--json")[1])["matches"] == []
    assert tree_hash(root) == before


@pytest.mark.parametrize("page, says", [("alias.md", "baking/Country loaf.md"), ("outside.md", "outside")])
def test_prefix_of_a_symlink_is_one_usage_line(hub: tuple[Path, str], page: str, says: str) -> None:
    root, before = hub
    code, _, err = run_main("prefix", "--vault", root, page)
    assert code == 2 and err.count("\n") == 1 and says in err
    assert tree_hash(root) == before


def test_check_fix_on_a_deleted_page_says_it_cannot_be_repaired(tmp_path: Path) -> None:
    root = hub_like(tmp_path / "vault")
    assert run_main("provision", "--vault", root, "--notes-dir", ".")[0] == 0
    qs = tmp_path / "qs.yaml"
    judged = {"sha256": "sha256:" + hashlib.sha256((root / "x/Twin.md").read_bytes()).hexdigest(), "judge": "me"}
    qs.write_text(json.dumps({"vault": str(root), "queries": [
        {"id": "q1", "query": "twin", "relevant": {"x/Twin.md": 1}, "judged": {"x/Twin.md": judged}}]}),
        encoding="utf-8")  # JSON is YAML
    (root / "x" / "Twin.md").unlink()
    (root / "y" / "Twin.md").unlink()
    out_file = tmp_path / "fixed.yaml"
    code, out, err = run_main("queryset", "check", qs, "--fix", out_file)
    assert code == 2 and "fixed 0" not in out and not out_file.exists()
    assert "cannot be repaired" in err and "delete the judgment" in err and "--fix OUT" not in err
