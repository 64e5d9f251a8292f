"""Helpers for the workbench tests: tiny vaults, query sets, snapshots, a scripted embedder.

Usage::

    from evalkit import make_vault, write_yaml, snapshot
    vault_root = make_vault(tmp_path / "v", {"a.md": "Zebra notes."})
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

QUERYSET = Path(__file__).resolve().parent.parent / "querysets" / "sample-vault.yaml"


@pytest.fixture(autouse=True)
def eval_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own evaluation cache; no real Ollama host leaks in."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("VAULTEVAL_CACHE", str(cache))
    for name in ("OLLAMA_HOST", "OLLAMA_URL", "VAULTEVAL_VAULT", "CLAUDE_OBSIDIAN_VAULT"):
        monkeypatch.delenv(name, raising=False)
    return cache


def make_vault(root: Path, pages: dict[str, str]) -> Path:
    """Write ``wiki/<rel>`` for each page and a marker file; returns the vault root."""
    for rel, text in pages.items():
        path = root / "wiki" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".vaulteval.json").write_text('{"name": "test"}\n', encoding="utf-8")
    return root


def write_yaml(path: Path, queries: list[dict], vault: str | None = None, name: str = "test") -> Path:
    import yaml

    doc: dict = {"name": name}
    if vault:
        doc["vault"] = vault
    doc["queries"] = queries
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (dot-folders included) -> sha256 of its bytes (or 'dir')."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "dir"
        for f in filenames:
            full = os.path.join(dirpath, f)
            out[os.path.relpath(full, root)] = hashlib.sha256(Path(full).read_bytes()).hexdigest()
    return out


def scripted_embed(texts: list[str]) -> np.ndarray:
    """A deterministic embedder: the query points at 'giraffe'; documents mentioning it score 0.99, others 0.1."""
    rows = []
    for text in texts:
        if text.startswith("search_query:"):
            rows.append([1.0, 0.0])
        elif "giraffe" in text.lower():
            rows.append([0.99, 0.14])
        else:
            rows.append([0.1, 0.99])
    arr = np.asarray(rows, dtype=np.float32)
    return arr / np.linalg.norm(arr, axis=1, keepdims=True)


# What must be the same bytes whatever the executor (queries.csv holds latencies; the manifest its executor).
IDENTICAL = ("metrics.csv", "per_query.csv", "misses.csv", "pool.csv", "abstention.csv", "report.json", "report.md",
             "vault-pages.txt")


def same_bytes(a: Path, b: Path) -> list[str]:
    """Names of the files that must match and do not (TREC files included)."""
    names = [*IDENTICAL, *sorted(p.name for p in a.glob("*.trec"))]
    assert len(names) > len(IDENTICAL)
    return [n for n in names if (a / n).read_bytes() != (b / n).read_bytes()]


def manifest_without_executor(path: Path) -> dict:
    """The manifest less what differs between any two runs: id, times, the executor, the cache folder and
    the build times of index variants (two runs with their own caches each build them)."""
    text = (path / "manifest.json").read_text(encoding="utf-8")
    m = json.loads(text.replace(json.loads(text)["cache_dir"], "<cache>"))
    for key in ("id", "started_at", "finished_at", "seconds", "executor"):
        m.pop(key)
    for s in m["strategies"]:
        s["index"].pop("built_at")
    return m
