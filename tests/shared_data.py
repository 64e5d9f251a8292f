"""Where the read-only benchmark data lives: ``../shared`` beside the checkout (as CI lays it out),
else the workplace's ``/work/shared``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    for candidate in (REPO.parent / "shared", Path("/work/shared")):
        if candidate.is_dir():
            return candidate
    return REPO.parent / "shared"


SHARED = shared_dir()
