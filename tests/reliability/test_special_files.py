"""No special file anywhere a path is read: a FIFO is refused (or skipped) at once, never waited on.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_special_files.py -q``
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vaulteval.errors import UsageError

from pipeline_fixtures import run_main


def test_a_fifo_vaulteval_json_is_one_line_exit_2(provisioned_sample: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "vault"
    shutil.copytree(provisioned_sample, root, symlinks=True)
    (root / ".vaulteval.json").unlink()
    os.mkfifo(root / ".vaulteval.json")
    code, _out, err = run_main("retrieve", "--vault", root, "--no-rerank", "descale")
    assert code == 2 and ".vaulteval.json: cannot be read (not a regular file)" in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, said", [
    (b"[" * 5000 + b"]" * 5000, "nests deeper than 64 levels"),
    (b'{"notes_dir": NaN}', "NaN"),
])
def test_a_hostile_vaulteval_json_is_one_line_exit_2(provisioned_sample: Path, tmp_path: Path, content: bytes,
                                                     said: str) -> None:
    import shutil

    root = tmp_path / "vault"
    shutil.copytree(provisioned_sample, root, symlinks=True)
    (root / ".vaulteval.json").write_bytes(content)
    code, _out, err = run_main("retrieve", "--vault", root, "--no-rerank", "descale")
    assert code == 2 and said in err and "Traceback" not in err, err


def test_a_fifo_grid_file_or_run_file_is_refused(tmp_path: Path) -> None:
    from vaulteval.workbench.grid import parse_grid
    from vaulteval.workbench.trec import read_trec

    fifo = tmp_path / "grid.txt"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        parse_grid(f"@{fifo}")
    with pytest.raises(UsageError, match="not a regular file"):
        read_trec(fifo)


def test_the_tuned_default_ignores_a_fifo(tmp_path: Path) -> None:
    from vaulteval.pipeline.tuned import tuned_strategy
    from vaulteval.vault.vault import Vault

    from pipeline_fixtures import make_vault

    root = make_vault(tmp_path / "vault", provision=False)
    vault = Vault(root)
    (root / ".vaulteval.json").unlink(missing_ok=True)
    os.mkfifo(root / ".vaulteval.json")
    assert tuned_strategy(vault) is None
