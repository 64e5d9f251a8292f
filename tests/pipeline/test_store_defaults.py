"""A vault with a MiniLM store and no Ollama: the default is the hybrid over the store, and a no-op provision is cheap.

The store is built once per module in-process (sentence-transformers, offline);
``OLLAMA_HOST`` points at a closed port, so any Ollama attempt would show as a
fallback. Every test checks that nothing outside ``.vault-meta/`` changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pipeline_fixtures import cli_env, copy_sample, run_cli, snapshot, write_note
from vaulteval import Vault
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.tuned import write_tuned
from vaulteval.vault.metadir import META_REL

QUERY = "how often should I descale"
NO_OLLAMA = "http://127.0.0.1:9"  # the discard port: nothing answers


def _notes(root: Path) -> dict:
    return {k: v for k, v in snapshot(root).items() if not k.startswith(".vault-meta")}


def _retrieve(root: Path, *extra: str) -> tuple[dict, str]:
    # A cold process loads MiniLM for the query: generous on a busy machine (this is no timing test).
    proc = run_cli("retrieve", "--vault", root, QUERY, *extra, env=cli_env(OLLAMA_HOST=NO_OLLAMA, HF_HUB_OFFLINE="1"),
                   timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_default_retrieve_is_the_hybrid_over_the_stores_model_and_never_tries_ollama(embedded_sample: Path) -> None:
    before = _notes(embedded_sample)
    out, err = _retrieve(embedded_sample)
    assert out["label"] == {"first_stage": "hybrid:cc", "reranker": None, "fallbacks": []}
    assert out["pipeline"] == {"text": "hybrid:cc", "source": "default"}
    assert {c["rerank_source"] for c in out["candidates"]} == {"skipped"}
    assert "ollama" not in err.lower() and "warning" not in err
    assert _notes(embedded_sample) == before


def test_without_a_store_the_default_is_bm25_with_no_model_contacted(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "vault")
    provision(Vault(root))
    out, err = _retrieve(root)
    assert out["strategy"] == "bm25-only" and err == ""


def test_ollama_named_by_the_user_is_tried_and_its_failure_is_said(embedded_sample: Path) -> None:
    out, err = _retrieve(embedded_sample, "--embedder", "ollama")
    assert out["label"]["reranker"] is None and out["label"]["first_stage"] == "hybrid:cc"
    assert out["label"]["fallbacks"] == [{"stage": "rerank", "reason": "ollama-unreachable"}]
    assert "rerank fell back to BM25 order" in err


def test_a_tuned_pipeline_without_a_reranker_adds_none(embedded_sample: Path, tmp_path: Path) -> None:
    import shutil

    root = Path(shutil.copytree(embedded_sample, tmp_path / "vault", symlinks=True))
    write_tuned(Vault(root), "bm25", run_id="r1", rerank=None)
    out, err = _retrieve(root)
    assert out["strategy"] == "bm25-only" and out["tuned"]["strategy"] == "bm25" and err == ""


def test_a_store_whose_model_is_gone_gives_one_warning_and_bm25(embedded_sample: Path, tmp_path: Path) -> None:
    import shutil

    from vaulteval.embeddings.store import open_store, write_store
    from vaulteval.vault.locking import vault_lock

    root = Path(shutil.copytree(embedded_sample, tmp_path / "vault", symlinks=True))
    store = open_store(Vault(root).meta_dir)
    identity = {"backend": store.backend, "model": str(tmp_path / "no-such-model"), "model_key": "gone",
                "scheme": store.scheme}
    with vault_lock(Vault(root)) as meta:
        write_store(meta, identity, list(store.rows), store.matrix)
    out, err = _retrieve(root)
    assert out["strategy"] == "bm25-only" and out["pipeline"] == {"text": "bm25", "source": "default"}
    assert len(err.strip().splitlines()) == 1 and "runs bm25" in err and "--embed" in err


def _imports_of_provision(root: Path) -> tuple[dict, set[str]]:
    env = {**os.environ, **cli_env(OLLAMA_HOST=NO_OLLAMA, HF_HUB_OFFLINE="1")}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vaulteval", "provision", "--vault", str(root)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return json.loads(proc.stdout), names


def test_a_provision_with_nothing_to_embed_does_not_load_the_model(embedded_sample: Path, tmp_path: Path) -> None:
    import shutil

    root = Path(shutil.copytree(embedded_sample, tmp_path / "vault", symlinks=True))
    before = _notes(root)
    report, imported = _imports_of_provision(root)
    assert report["embeddings"]["embedded"] == 0 and report["embeddings"]["reused_store"] == report["embeddings"]["rows"]
    assert not {m for m in imported if m.split(".")[0] in ("torch", "sentence_transformers", "transformers")}
    assert _notes(root) == before
    write_note(root, "wiki/howto/New note.md", "A brand new note about grinder burrs.\n")
    report, imported = _imports_of_provision(root)
    # The new chunk is embedded through the vault's ONNX export: torch stays out (it only ever exports).
    assert report["embeddings"]["embedded"] == 1 and report["embeddings"]["form"] == "onnx-fp32"
    assert "onnxruntime" in imported
    assert not {m for m in imported if m.split(".")[0] in ("torch", "sentence_transformers", "transformers")}


def test_provision_reports_a_summary_and_lists_every_page_with_verbose(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "vault")
    quiet = json.loads(run_cli("provision", "--vault", root).stdout)
    assert quiet["schema"] == "vaulteval.provision.v1"
    assert len(quiet["prefix"]["changed_pages"]) == 20
    assert quiet["prefix"]["changed_pages_more"] == quiet["prefix"]["pages_changed"] - 20 > 0
    loud = json.loads(run_cli("provision", "--vault", root, "--rebuild", "--verbose").stdout)
    assert len(loud["prefix"]["changed_pages"]) == loud["prefix"]["pages_changed"]
    assert loud["prefix"]["changed_pages_more"] == 0
    doctor = json.loads(run_cli("doctor", "--json", "--vault", root).stdout)
    assert doctor["schema"] == "vaulteval.doctor.v1" and doctor["state"] == "verified"
    assert (root / META_REL).is_dir()


def _imports_of_retrieve(root: Path) -> set[str]:
    env = {**os.environ, **cli_env(OLLAMA_HOST=NO_OLLAMA)}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vaulteval", "retrieve", "--vault", str(root),
                           "espresso"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_a_tuned_plain_bm25_retrieve_is_as_lean_as_an_untuned_one(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "vault")
    provision(Vault(root))
    untuned = _imports_of_retrieve(root)
    settings = {"analyzer": "default", "k1": 1.5, "b": 0.75, "target": 2000, "overlap": 200, "hard_max": 4000}
    write_tuned(Vault(root), "bm25", run_id="r1", rerank=None, bm25_top=50, index=settings)
    tuned = _imports_of_retrieve(root)
    extra = tuned - untuned
    assert not {m for m in extra if not m.startswith("vaulteval.")}, sorted(extra)  # no numpy, typing, dataclasses
    assert "vaulteval.chunks.chunking" not in tuned and "numpy" not in tuned
