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
TIMING_COLUMNS = ("latency_ms", "rerank_ms")


def _comparable(folder: Path, name: str) -> bytes | dict:
    """A result file as it must match: bytes, except the three files that record the run itself."""
    import pandas as pd

    path = folder / name
    if name == "manifest.json":
        return manifest_without_executor(folder)
    if name == "queries.csv":  # latencies are machine timings; the labels, pools and stale counts must match
        return pd.read_csv(path, dtype=str).drop(columns=list(TIMING_COLUMNS)).to_csv(index=False).encode()
    if name == "tune.json":  # names its own run directory
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("run_dir")
        return data
    return path.read_bytes()


def same_bytes(a: Path, b: Path) -> list[str]:
    """Names of the result files that differ: every file of either folder, byte for byte, but for the
    latencies of queries.csv and what the manifest and tune.json say about the run itself."""
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    assert set(IDENTICAL) <= set(names) and any(n.endswith(".trec") for n in names), names
    return [n for n in names if not ((a / n).is_file() and (b / n).is_file()) or _comparable(a, n) != _comparable(b, n)]


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
