"""What a build's helper processes need: the cores this process may use, and the helper's environment.

Usage: ``if not serial_only() and cores() >= 2: subprocess.Popen([...], env=helper_env())``.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def serial_only() -> bool:
    """``VAULTEVAL_BUILD_WORKERS=1``: a build stays in one process."""
    return os.environ.get("VAULTEVAL_BUILD_WORKERS", "").strip() == "1"


def helper_env() -> dict[str, str]:
    """A helper's environment: this one, with this package importable (it may not be installed), as a fresh
    interpreter (``python -m ...``) that inherits nothing else of this process."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
