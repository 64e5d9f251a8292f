"""The same vector gets the same score bits wherever it stands and whatever the batch size.

Usage: ``.venv/bin/python -m pytest tests/embeddings/test_vectors.py -q``

A BLAS matrix-vector product rounds a row by its place in the kernel's blocks
(on this project's machines ``m @ q`` scores a row copied to another position
differently in about one case in three). These tests put one vector at many
positions of batches of many sizes and require equal bits, for the rerank
cosines, for the whole-store scan of dense retrieval, and through the rerank
stage with real MiniLM vectors from the loopback Ollama stand-in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vaulteval.embeddings.rerank import RerankConfig, rerank
from vaulteval.embeddings.store import EmbeddingStore, StoreRow
from vaulteval.embeddings.vectors import cosines, row_dots

from ollama_server import minilm_model, ollama_server, ollama_server_session  # noqa: F401

SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 65, 130]


def _batch(rng: np.random.Generator, size: int, dim: int, same: np.ndarray, every: int) -> tuple[np.ndarray, list[int]]:
    """``size`` random float32 rows with ``same`` copied to every ``every``-th row (and the last)."""
    m = rng.standard_normal((size, dim)).astype(np.float32)
    where = sorted({*range(0, size, every), size - 1})
    m[where] = same
    return m, where


@pytest.mark.parametrize("dim", [3, 8, 383, 384, 768])
def test_one_vector_scores_the_same_bits_at_every_position_and_batch_size(dim: int) -> None:
    rng = np.random.default_rng(dim)
    query = rng.standard_normal(dim).astype(np.float32)
    same = rng.standard_normal(dim).astype(np.float32)
    alone_cos, = cosines(query, [same])
    alone_dot = row_dots(same[None, :], query)[0]
    alone_dot32 = row_dots(same[None, :], query, dtype=np.float32)[0]
    seen_cos, seen_dot, seen_dot32 = set(), set(), set()
    for size in SIZES:
        for every in (1, 2, 3, 5):
            m, where = _batch(rng, size, dim, same, every)
            cos = cosines(query, list(m))
            dots, dots32 = row_dots(m, query), row_dots(m, query, dtype=np.float32)
            seen_cos |= {cos[i] for i in where}
            seen_dot |= {float(dots[i]) for i in where}
            seen_dot32 |= {float(dots32[i]) for i in where}
    assert seen_cos == {alone_cos} and seen_dot == {float(alone_dot)} and seen_dot32 == {float(alone_dot32)}
    assert -1.0 <= alone_cos <= 1.0
    np.testing.assert_allclose(alone_cos, same.astype(np.float64) @ query / np.linalg.norm(same.astype(np.float64))
                               / np.linalg.norm(query.astype(np.float64)), rtol=1e-12)


def test_the_store_scan_ranks_equal_rows_equal_and_breaks_ties_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dense first stage (and hybrid, which takes its list): copies of one chunk vector tie exactly, lower row first,
    in one block or across the scan's blocks."""
    from vaulteval.embeddings import vectors

    rng = np.random.default_rng(7)
    dim = 384
    same = rng.standard_normal(dim).astype(np.float32)
    same /= np.linalg.norm(same)
    query = (same + 0.01 * rng.standard_normal(dim)).astype(np.float32)  # the copies are the best rows
    for size, block in ((9, 1024), (130, 1024), (130, 16), (130, 7)):
        m = rng.standard_normal((size, dim)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        copies = sorted({1, size // 2, size - 3, size - 1})
        m[copies] = same
        store = EmbeddingStore(Path("unused"), {"dim": dim}, m, [StoreRow(f"c{i}", "", "") for i in range(size)])
        monkeypatch.setattr(vectors, "BLOCK_ROWS", block)
        rows, cos = store.top(query, len(copies) + 2)
        assert rows[: len(copies)].tolist() == copies
        assert len(set(cos[: len(copies)].tolist())) == 1 and cos[len(copies)] < cos[0]


def test_the_rerank_stage_scores_a_repeated_text_the_same_at_every_position(ollama_server: Any, tmp_path: Path) -> None:
    """Real MiniLM vectors; the embedding cache gives every call the same document vector, so every call
    (candidate lists of several lengths, embedding batches of several sizes) must give the same bits."""
    query = "how do I descale the espresso machine"
    text = "Descaling the espresso machine: run a citric acid solution through the boiler, then rinse twice."
    others = [f"Note {i}: the tax return deadline is in April; tomatoes need sun; bread needs time." for i in range(40)]
    cache = tmp_path / "embeddings.sqlite"
    scores = set()
    for size, every, batch in ((3, 2, 64), (4, 3, 1), (9, 4, 2), (17, 3, 5), (41, 8, 16)):
        texts = [text if i % every == 0 or i == size - 1 else others[i] for i in range(size)]
        config = RerankConfig(host=ollama_server.url, model="all-minilm", batch_size=batch)
        out = rerank(query, texts, config, cache_path=cache)
        assert out.fallback_reason is None and out.scores is not None
        scores |= {s for s, t in zip(out.scores, texts) if t == text}
        assert max(s for s, t in zip(out.scores, texts) if t != text) < min(scores)
    assert len(scores) == 1
