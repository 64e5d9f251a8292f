"""A path that starts with ``~user`` for a user with no home is a path like any other, never an internal error.

pathlib's ``expanduser`` raises RuntimeError for ``~nosuchuser``; a typo on the command line, or a query
set's ``vault: ~0`` (found by the fuzz suite at 2,000 examples), crashed with ``internal error``.

Usage: ``.venv/bin/python -m pytest tests/cli/test_home_paths.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vaulteval.vault.paths import home_path

from pipeline_fixtures import run_main

NO_HOME = "~no-such-user-vaulteval"


def test_a_user_without_a_home_is_left_as_written_and_the_own_home_is_expanded() -> None:
    assert home_path(f"{NO_HOME}/v") == Path(f"{NO_HOME}/v")
    assert home_path("~") == Path.home() and home_path("a/b") == Path("a/b")


@pytest.mark.parametrize("args", [
    ("retrieve", "--vault", f"{NO_HOME}/v", "--no-rerank", "espresso"),
    ("provision", "--vault", f"{NO_HOME}/v"),
    ("queryset", "check", "--vault", f"{NO_HOME}/v", f"{NO_HOME}/q.yaml"),
    ("queryset", "pregrade", f"{NO_HOME}/pool.yaml", "--out", "out.yaml"),
    ("eval", "run", "--queryset", f"{NO_HOME}/q.yaml", "--out", "runs"),
])
def test_a_command_given_such_a_path_says_what_is_missing_in_one_line(args, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(*args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code in (2, 10) and len(lines) == 1 and "internal error" not in err, err
    assert NO_HOME in lines[0]


def test_a_query_set_whose_vault_names_a_user_without_a_home_is_a_problem_of_the_set(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text("vault: '~0'\nqueries: []\n", encoding="utf-8")
    code, out, err = run_main("queryset", "check", tmp_path / "q.yaml")
    assert code == 2 and "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["generate", "pool", "merge", "pregrade"])
def test_an_output_path_that_is_a_folder_is_one_line_and_nothing_else_is_written(command: str, tmp_path: Path) -> None:
    from vaulteval.vault.vault import BUNDLED_SAMPLE

    sample = BUNDLED_SAMPLE.parent / "querysets" / "sample-vault.yaml"
    folder = tmp_path / "taken"
    folder.mkdir()
    pool = tmp_path / "pool.yaml"
    pool.write_text("depth: 1\nstrategies: [bm25]\npairs: []\n", encoding="utf-8")
    args = {"generate": ("queryset", "generate", "--vault", BUNDLED_SAMPLE, "--n", "5", "--quiet", "--out", folder),
            "pool": ("queryset", "pool", sample, "--vault", BUNDLED_SAMPLE, "--depth", "1", "--quiet", "--out", folder),
            "merge": ("queryset", "merge", sample, sample, "--out", folder),
            "pregrade": ("queryset", "pregrade", pool, "--quiet", "--out", folder)}[command]
    code, _, err = run_main(*args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "internal error" not in err, err
    assert lines[0].startswith(f"vaulteval: error: cannot write {folder}: Is a directory")
    assert list(folder.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["pool.yaml", "taken"]


@pytest.mark.parametrize("command", ["generate", "pregrade"])
def test_an_output_symlink_into_the_vault_is_refused_and_a_fifo_is_replaced_not_read(command: str,
                                                                                    tmp_path: Path) -> None:
    import os
    import shutil

    from pipeline_fixtures import snapshot
    from vaulteval.vault.vault import BUNDLED_SAMPLE

    vault = tmp_path / "v"
    shutil.copytree(BUNDLED_SAMPLE / "wiki", vault / "wiki")
    pool = tmp_path / "pool.yaml"
    pool.write_text(f"vault: {vault}\ndepth: 1\nstrategies: [bm25]\npairs: []\n", encoding="utf-8")
    before = snapshot(vault)
    link, fifo = tmp_path / "link.yaml", tmp_path / "fifo.yaml"
    link.symlink_to(vault / "wiki" / "out.yaml")
    os.mkfifo(fifo)
    head = {"generate": ("queryset", "generate", "--vault", vault, "--n", "5", "--quiet"),
            "pregrade": ("queryset", "pregrade", pool, "--quiet")}[command]
    code, _, err = run_main(*head, "--out", link)
    assert code == 2 and "inside the vault" in err and snapshot(vault) == before
    code, _, err = run_main(*head, "--out", fifo)
    assert code == 0, err
    assert fifo.is_file() and not fifo.is_symlink() and snapshot(vault) == before
