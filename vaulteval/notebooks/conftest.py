"""nbval runs of the bundled notebooks (``pytest --nbval notebooks``): a fresh cache, offline models.

Kernels inherit this process's environment when nbval starts them, so the
variables are set when this file is imported, before any notebook is collected.
The evaluation cache is a new temporary folder (removed at the end), so the
stored outputs are checked from a clean state and nothing is written to the
repository or the bundled vault. A ``VAULTEVAL_CACHE`` already set is kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"):
    os.environ.setdefault(_name, "1")
_CACHE = None if os.environ.get("VAULTEVAL_CACHE") else tempfile.mkdtemp(prefix="vaulteval-nbval-")
if _CACHE:
    os.environ["VAULTEVAL_CACHE"] = _CACHE


def pytest_unconfigure(config) -> None:
    if _CACHE:
        shutil.rmtree(_CACHE, ignore_errors=True)
