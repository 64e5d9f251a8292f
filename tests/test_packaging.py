"""The wheel built from the checkout carries every stage folder, the notebooks and the sample vault.

Usage: ``.venv/bin/python -m pytest tests/test_packaging.py -q``

Installing that wheel into a fresh venv and running ``vaulteval demo`` there is
the slow half of this check; docs/benchmarks.md gives the commands.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_every_module_notebook_and_sample_note(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("vaulteval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    package = REPO / "vaulteval"
    tracked = subprocess.run(["git", "ls-files", "-z", "vaulteval"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split("\0")
    wanted = {name for name in tracked if name.endswith((".py", ".ipynb"))
              or name.startswith("vaulteval/data/")}
    assert wanted, "git ls-files found nothing to package"
    assert sorted(wanted - names) == []
    assert (package / "py.typed").is_file() and "vaulteval/py.typed" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "vaulteval = vaulteval.cli:run" in zipfile.ZipFile(wheel).read(entry).decode()
