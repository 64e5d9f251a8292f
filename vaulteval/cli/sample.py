"""The bundled sample vault.

Usage: ``copy_sample("/tmp/my-sample")`` -> the new vault's path.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from vaulteval.errors import UsageError
from vaulteval.vault.vault import BUNDLED_SAMPLE


def copy_sample(dest: str | Path) -> Path:
    """Copy the sample vault (notes and marker, no derived state) to a new folder."""
    target = Path(dest).expanduser()
    if target.exists() and any(target.iterdir()):
        raise UsageError(f"{target} exists and is not empty; choose a new folder")
    shutil.copytree(BUNDLED_SAMPLE, target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".vault-meta", "__pycache__"))
    return target.resolve()
