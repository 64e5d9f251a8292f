"""Filling the embedding store: which texts reach the embedder, in what order, and what the header records."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from vaulteval.embeddings.config import RerankConfig, resolve
from vaulteval.embeddings.embedders import EmbedFailure, input_scheme
from vaulteval.embeddings.store import open_store
from vaulteval.embeddings.storebuild import build_store
from vaulteval.vault.metadir import MetaDir


class CountingEmbedder:
    """Vectors from the text's letters; remembers every batch it was given."""

    source = "sentence-transformers"
    model = "fake-model"
    model_key = "fake-model==1"
    form = "onnx-fp32"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.closed = False

    @property
    def scheme(self):
        return input_scheme(self.model)

    def embed(self, inputs: list[str]) -> list[np.ndarray]:
        self.batches.append(list(inputs))
        return [np.array([len(t), t.count("a") + 1, 1.0], np.float32) for t in inputs]

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def meta(tmp_path: Path):
    with MetaDir.open(SimpleNamespace(root=tmp_path, meta_dir=tmp_path / "meta"), create=True) as opened:
        yield opened


CONFIG = resolve(RerankConfig(backend="sentence-transformers", model="sentence-transformers/fake", batch_size=2))


def items(texts: list[str]) -> list[tuple[str, str, str]]:
    return [(f"c-{i}", f"h-{i}", t) for i, t in enumerate(texts)]


def test_texts_reach_the_embedder_longest_first_in_batches(meta) -> None:
    texts = ["bb", "a" * 9, "ccc", "d", "eeeee"]
    embedder = CountingEmbedder()
    report = build_store(meta, items(texts), CONFIG, embedder=embedder)
    assert embedder.batches == [["a" * 9, "eeeee"], ["ccc", "bb"], ["d"]]
    assert embedder.closed and report.embedded == 5 and report.form == "onnx-fp32"
    store = open_store(meta.path)
    assert store.header["form"] == "onnx-fp32" and store.describe()["form"] == "onnx-fp32"
    # rows stay in the chunks' order whatever order they were embedded in
    assert [r.chunk_id for r in store.rows] == [f"c-{i}" for i in range(5)]
    assert [round(float(store.matrix[i][0] / store.matrix[i][2])) for i in range(5)] == [len(t) for t in texts]


def test_a_text_met_twice_is_embedded_once_and_reused_texts_not_at_all(meta) -> None:
    first = CountingEmbedder()
    build_store(meta, items(["same", "same", "other"]), CONFIG, embedder=first)
    assert sorted(t for b in first.batches for t in b) == ["other", "same"]
    again = CountingEmbedder()
    report = build_store(meta, items(["same", "other", "new text"]), CONFIG, embedder=again)
    assert again.batches == [["new text"]] and report.reused_store == 2


def test_the_form_is_the_embedders(meta) -> None:
    class TorchEmbedder(CountingEmbedder):
        form = "torch-fp32"

    build_store(meta, items(["x", "y"]), CONFIG, embedder=TorchEmbedder())
    assert open_store(meta.path).header["form"] == "torch-fp32"


def test_a_failing_embedder_publishes_nothing_and_is_closed(meta) -> None:
    class Failing(CountingEmbedder):
        def embed(self, inputs: list[str]) -> list[np.ndarray]:
            raise EmbedFailure("backend-error", "boom")

    embedder = Failing()
    with pytest.raises(EmbedFailure):
        build_store(meta, items(["x"]), CONFIG, embedder=embedder)
    assert embedder.closed and not (meta.path / "embeddings").exists()
