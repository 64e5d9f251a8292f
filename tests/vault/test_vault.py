"""Vault selection order, refusals (no vault, the product folder, the bundled sample), one-line errors.

Usage: ``.venv/bin/python -m pytest tests/vault/test_vault.py -q``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vaulteval
from vaulteval.vault.vault import BUNDLED_SAMPLE, MARKERS

from pipeline_fixtures import assert_one_line_error, cli_env, run_cli, snapshot, write_note

REPO_ROOT = Path(vaulteval.__file__).resolve().parents[1]


def _vault(root: Path, marker: str | None = None) -> Path:
    write_note(root, "wiki/note.md", f"# {root.name}\n\nA note in {root.name}.\n")
    if marker:
        (root / marker).write_text("{}\n")
    return root.resolve()


def _selected(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Path:
    """Which vault ``doctor --json`` ran on (doctor works on unprovisioned vaults: exit 1, JSON out)."""
    proc = run_cli("doctor", "--json", *args, env=env if env is not None else cli_env(), cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return Path(json.loads(proc.stdout)["vault"])


def test_selection_order(tmp_path: Path) -> None:
    flag = _vault(tmp_path / "flag")
    env_new = _vault(tmp_path / "env-new")
    env_old = _vault(tmp_path / "env-old")
    marked = _vault(tmp_path / "marked", ".vaulteval.json")
    (marked / "wiki" / "sub").mkdir()
    cwd = marked / "wiki" / "sub"
    both = {"VAULTEVAL_VAULT": str(env_new), "CLAUDE_OBSIDIAN_VAULT": str(env_old)}

    assert _selected("--vault", str(flag), env=cli_env(**both), cwd=cwd) == flag
    assert _selected(env=cli_env(**both), cwd=cwd) == env_new
    assert _selected(env=cli_env(CLAUDE_OBSIDIAN_VAULT=str(env_old)), cwd=cwd) == env_old
    assert _selected(cwd=cwd) == marked
    assert _selected(env=cli_env(VAULTEVAL_VAULT=""), cwd=cwd) == marked  # an empty variable is unset


def test_marker_files(tmp_path: Path) -> None:
    legacy = _vault(tmp_path / "legacy", ".claude-obsidian.json")
    assert _selected(cwd=legacy / "wiki") == legacy
    outer = _vault(tmp_path / "outer", ".vaulteval.json")
    inner = _vault(outer / "projects" / "inner", ".vaulteval.json")
    assert _selected(cwd=inner / "wiki") == inner, "the nearest marker wins"
    assert _selected(cwd=outer / "projects") == outer


def _no_marker_above(path: Path) -> bool:
    return not any((p / m).is_file() for p in (path, *path.parents) for m in MARKERS)


@pytest.mark.parametrize(
    "args",
    [["retrieve", "espresso", "--no-rerank"], ["doctor"], ["provision"], ["index", "build"], ["prefix", "--all"]],
    ids=["retrieve", "doctor", "provision", "index-build", "prefix"],
)
def test_no_vault_is_a_usage_error(tmp_path: Path, args: list[str]) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    if not _no_marker_above(nowhere):
        pytest.skip("a marker file above the temporary folder selects a vault")
    before = snapshot(tmp_path)
    line = assert_one_line_error(run_cli(*args, cwd=nowhere), 2)
    assert "--vault" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("how", ["flag", "env", "package-dir", "cwd", "cwd-package"])
def test_product_folder_is_refused(how: str) -> None:
    if how == "flag":
        proc = run_cli("doctor", "--vault", REPO_ROOT)
    elif how == "env":
        proc = run_cli("doctor", env=cli_env(VAULTEVAL_VAULT=str(REPO_ROOT)))
    elif how == "package-dir":
        proc = run_cli("doctor", "--vault", REPO_ROOT / "vaulteval")
    elif how == "cwd":
        proc = run_cli("doctor", cwd=REPO_ROOT)
    else:
        proc = run_cli("doctor", cwd=REPO_ROOT / "vaulteval" / "index")
    line = assert_one_line_error(proc, 2)
    # Refused because it is the product folder, not because no vault was found.
    assert "vaulteval's own folder, not a vault" in line, line


def test_provision_in_product_folder_writes_nothing() -> None:
    proc = run_cli("provision", "--vault", REPO_ROOT)
    line = assert_one_line_error(proc, 2)
    assert "not a vault" in line
    assert not (REPO_ROOT / ".vault-meta").exists()


def test_bundled_sample_is_never_written() -> None:
    before = snapshot(BUNDLED_SAMPLE)
    assert not (BUNDLED_SAMPLE / ".vault-meta").exists()
    for args in (["provision"], ["prefix", "--all"], ["index", "build"], ["prefix", "wiki/hot.md"]):
        assert_one_line_error(run_cli(*args, "--vault", BUNDLED_SAMPLE), 2)
    # Selected through its marker file, from inside it.
    assert_one_line_error(run_cli("provision", cwd=BUNDLED_SAMPLE / "wiki"), 2)
    # Reading is fine (not provisioned: exit 10), and writes nothing either.
    assert_one_line_error(run_cli("retrieve", "--vault", BUNDLED_SAMPLE, "espresso", "--no-rerank"), 10)
    assert snapshot(BUNDLED_SAMPLE) == before


def test_sample_command(tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    proc = run_cli("sample", dest)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == dest.resolve()
    assert (dest / ".vaulteval.json").is_file() and len(list((dest / "wiki").rglob("*.md"))) == 53
    assert_one_line_error(run_cli("sample", dest), 2)  # not empty any more


@pytest.mark.parametrize(
    "make",
    ["missing", "file", "no-wiki"],
)
def test_unusable_vault_paths(tmp_path: Path, make: str) -> None:
    target = tmp_path / "target"
    if make == "file":
        target.write_text("not a folder")
    elif make == "no-wiki":
        target.mkdir()
    line = assert_one_line_error(run_cli("retrieve", "--vault", target, "espresso", "--no-rerank"), 2)
    assert str(target) in line
    assert not (target / ".vault-meta").exists() if target.is_dir() else True


def test_the_walk_lists_what_os_walk_and_a_link_check_per_file_list(tmp_path: Path) -> None:
    """The notes walk reads each entry's type from the directory: the same pages as ``os.walk`` with an
    ``lstat`` per file, links to notes, folders and outside files left out, an unreadable folder skipped."""
    import os

    from vaulteval.vault.vault import Vault

    wiki = tmp_path / "vault" / "wiki"
    (wiki / "a" / "b").mkdir(parents=True)
    (wiki / ".hidden").mkdir()
    (wiki / "locked").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.md").write_text("# O\n")
    for rel in ("top.md", "a/one.md", "a/b/two.md", ".hidden/h.md", "a/.dot.md", "a/notes.txt", "locked/l.md"):
        (wiki / rel).write_text("# x\n")
    os.symlink(wiki / "top.md", wiki / "a" / "link-to-note.md")
    os.symlink(tmp_path / "outside" / "o.md", wiki / "out.md")
    os.symlink(tmp_path / "outside", wiki / "outdir")
    os.symlink(wiki / "a", wiki / "loop")
    os.symlink(tmp_path / "missing.md", wiki / "dangling.md")
    os.mkfifo(wiki / "a" / "pipe.md")
    os.chmod(wiki / "locked", 0)
    try:
        reference = []
        for dirpath, dirnames, filenames in os.walk(wiki):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            reference += [os.path.relpath(os.path.join(dirpath, f), wiki.parent) for f in filenames
                          if f.endswith(".md") and not f.startswith(".") and not os.path.islink(os.path.join(dirpath, f))]
        pages = list(Vault(tmp_path / "vault").iter_pages())
    finally:
        os.chmod(wiki / "locked", 0o755)
    assert [p.rel for p in pages] == sorted(reference)
    assert {p.rel for p in pages} >= {"wiki/top.md", "wiki/a/one.md", "wiki/a/b/two.md", "wiki/a/pipe.md"}
    assert all(os.path.realpath(p.abspath) == str(wiki.parent / p.rel) for p in pages)
