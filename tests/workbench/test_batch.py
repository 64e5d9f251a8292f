"""Batch BM25 gives exactly the one-query hits: same documents, same order, bit-identical scores.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_batch.py -q``
"""

from __future__ import annotations

from pathlib import Path

from vaulteval import Vault
from vaulteval.index import bm25
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.querysets.queryset import load_queryset
from vaulteval.workbench import batch

SAMPLE_SET = Path(__file__).resolve().parents[2] / "vaulteval" / "data" / "querysets" / "sample-vault.yaml"


def test_batch_hits_equal_one_query_hits(provisioned_sample: Path, monkeypatch) -> None:
    index = Retriever(Vault(provisioned_sample)).index()
    texts = [q.text for q in load_queryset(SAMPLE_SET, Vault(provisioned_sample)).queries]
    texts += ["espresso espresso descale", "", "zzzz-not-a-term", texts[0] + " " + texts[0]]
    for k in (1, 5, 100):
        assert batch.batch_search(index, texts, k=k) == [index.search(t, k=k) for t in texts]
    monkeypatch.setattr(bm25, "BLOCK_CELLS", 1)  # one query per block
    assert batch.batch_search(index, texts, k=20) == [index.search(t, k=20) for t in texts]
    rescored = index.with_params(0.9, 0.4)
    assert batch.batch_search(rescored, texts, k=20) == [rescored.search(t, k=20) for t in texts]
