"""Fixtures shared by the whole suite; helper modules in tests/ are imported by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import eval_cache  # noqa: F401  (autouse: a private evaluation cache, no stray env)
from ollama_server import minilm_model, ollama_server, ollama_server_session  # noqa: F401
from pipeline_fixtures import fresh_vault, provisioned_sample, unprovisioned_vault  # noqa: F401

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="session")
def _offline_models() -> None:
    """Models load from installed packages only; nothing is downloaded."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
