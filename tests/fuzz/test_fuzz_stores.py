"""Fuzz the stored embeddings (``embeddings/vectors.vtv``), the field index (``bm25/fields.vti``) and the ONNX export.

Each example damages one of the two files (a flipped byte, a truncation, or
other bytes altogether) in a copy of an embedded vault. ``dense`` and
``hybrid`` must then serve a result or exit 10 naming the rebuild; field
weights must fall back or exit 10; ``doctor`` must report; ``provision
--embed`` must repair it. Never a traceback, never a changed note.

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/fuzz/test_fuzz_stores.py -q``
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaulteval import Vault
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.stages.embedder import EmbedderSettings

from fuzzkit import Scratch, cli_ok, count, fuzz_settings
from pipeline_fixtures import snapshot, write_note

FILES = {"stored embeddings": ".vault-meta/vaulteval/embeddings/vectors.vtv", "field index": ".vault-meta/vaulteval/bm25/fields.vti"}

damage = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(st.just("replace"), st.binary(max_size=400), st.just(0)),
)


@pytest.fixture(scope="module")
def embedded_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stores") / "v"
    write_note(root, "wiki/Espresso machine.md",
               "---\naliases: [Gaggia]\n---\n# Espresso machine\n\nDescale the espresso machine every month.\n")
    write_note(root, "wiki/Bread.md", "# Bread\n\nA country loaf with a long, cold proof.\n")
    write_note(root, "wiki/Router.md", "# Router\n\n## Reset\n\nHold the reset button for ten seconds.\n")
    provision(Vault(root), embed=EmbedderSettings("sentence-transformers"))
    return root


def _damaged(raw: bytes, how: tuple) -> bytes:
    kind, where, value = how
    if kind == "flip":
        i = int(where * len(raw))
        return raw[:i] + bytes([raw[i] ^ value]) + raw[i + 1:]
    if kind == "truncate":
        return raw[:int(where * len(raw))]
    return where


@fuzz_settings()
@given(st.sampled_from(sorted(FILES)), damage)
def test_a_damaged_store_or_field_index_fails_closed(embedded_vault: Path, tmp_path: Path, target: str,
                                                     how: tuple) -> None:
    with Scratch(tmp_path) as scratch:
        root = Path(shutil.copytree(embedded_vault, scratch / "v", symlinks=True))
        path = root / FILES[target]
        path.write_bytes(_damaged(path.read_bytes(), how))
        count(target)
        notes = snapshot(root / "wiki")
        for strategy in ("dense", "hybrid:cc", "hybrid:rrf", "bm25:w_title=2,w_aliases=2"):
            code, _, err = cli_ok("retrieve", "--vault", root, "--no-rerank", "--strategy", strategy,
                                  "descale the espresso machine", codes={0, 10})
            if code == 10:
                assert "provision" in err, err
        cli_ok("doctor", "--vault", root, codes={0, 1})
        cli_ok("provision", "--vault", root, "--embed", "--embedder", "st", codes={0})
        code, out, _ = cli_ok("retrieve", "--vault", root, "--no-rerank", "--strategy", "hybrid:cc",
                              "descale the espresso machine", codes={0})
        assert "Espresso machine.md" in out
        assert snapshot(root / "wiki") == notes


ONNX_FILES = ("model.onnx", "model.data", "tokenizer.json", "export.json")


@fuzz_settings(scale=0.5)
@given(st.sampled_from(ONNX_FILES), damage)
def test_a_damaged_onnx_export_falls_back_to_sentence_transformers(embedded_vault: Path, tmp_path: Path, name: str,
                                                                   how: tuple) -> None:
    """Whatever happened to one of the export's files, a dense query is answered (exit 0), never half-served."""
    with Scratch(tmp_path) as scratch:
        root = Path(shutil.copytree(embedded_vault, scratch / "v", symlinks=True))
        path = root / ".vault-meta/vaulteval/onnx" / name
        path.write_bytes(_damaged(path.read_bytes(), how))
        count(f"onnx export: {name}")
        notes = snapshot(root / "wiki")
        for strategy in ("dense", "hybrid:cc"):
            _, out, _ = cli_ok("retrieve", "--vault", root, "--no-rerank", "--strategy", strategy,
                               "descale the espresso machine", codes={0})
            result = json.loads(out)
            # Embedded all the same (by the export when it is intact, else by sentence-transformers): no fallback.
            assert result["label"]["fallbacks"] == [] and result["strategy"] == strategy
            assert "wiki/Espresso machine.md" in [c["page_path"] for c in result["candidates"]]
        assert snapshot(root / "wiki") == notes
