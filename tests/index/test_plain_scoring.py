"""One-query BM25 in plain Python (no numpy import) against the numpy scorer, and when each is used.

Usage: ``.venv/bin/python -m pytest tests/index/test_plain_scoring.py -q`` (20 examples per property;
``VAULTEVAL_FUZZ_EXAMPLES=400`` for a deeper run).

The plain scorer must give the same documents with bit-identical scores, so a
CLI call (plain) and a notebook (numpy) never disagree about a ranking.
"""

from __future__ import annotations

import os
import subprocess
import sys
from array import array
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hypothesis_budget import examples

from vaulteval import Vault
from vaulteval.errors import NotProvisioned
from vaulteval.index import bm25, bm25_plain, search
from vaulteval.pipeline.retrieve import Retriever

from pipeline_fixtures import run_main
from vaulteval.index.file import write_sections
from vaulteval.index.location import INDEX_DIR, INDEX_NAME
from vaulteval.vault.metadir import MetaDir

REPO = Path(__file__).resolve().parents[2]


@st.composite
def corpora(draw):
    """Document lengths, per-term sorted distinct postings with term frequencies, BM25 parameters, a query."""
    n_docs = draw(st.integers(1, 60))
    doc_len = draw(st.lists(st.integers(0, 400), min_size=n_docs, max_size=n_docs))
    n_terms = draw(st.integers(1, 6))
    lists = []
    for _ in range(n_terms):
        docs = sorted(draw(st.sets(st.integers(0, n_docs - 1), max_size=n_docs)))
        tfs = draw(st.lists(st.integers(1, 30), min_size=len(docs), max_size=len(docs)))
        qtf = draw(st.integers(1, 3))
        lists.append((docs, tfs, qtf))
    k1 = draw(st.sampled_from([0.0, 0.3, 0.9, 1.2, 1.5, 2.0, 3.7]))
    b = draw(st.sampled_from([0.0, 0.25, 0.75, 1.0]))
    avgdl = draw(st.sampled_from([0.0, sum(doc_len) / n_docs, 17.3]))
    k = draw(st.integers(1, 70))
    return n_docs, doc_len, lists, k1, b, avgdl, k


@settings(max_examples=examples(), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora())
def test_plain_top_k_is_the_numpy_top_k_bit_for_bit(corpus) -> None:
    n_docs, doc_len, lists, k1, b, avgdl, k = corpus
    dl = memoryview(array("i", doc_len)).cast("B").cast("i")
    plain_lists = [(memoryview(array("i", d)).cast("B").cast("I"), memoryview(array("i", t)).cast("B").cast("i"), q)
                   for d, t, q in lists]
    plain = bm25_plain.top_k(n_docs, dl, avgdl, k1, b, plain_lists, k)

    norm = bm25.length_norm(np.asarray(doc_len, dtype=np.int32), avgdl, k1, b)
    np_lists = [(np.asarray(d, dtype=np.int32), np.asarray(t, dtype=np.int32), q) for d, t, q in lists]
    docs, vals = bm25.top_k(bm25.score_terms(n_docs, norm, np_lists, k1), k)
    assert plain == list(zip(docs.tolist(), vals.tolist()))  # same documents, same order, identical floats
    # The warm single-query path sums only the documents the postings touch: the same, bit for bit.
    docs, vals = bm25.top_k_touched(n_docs, norm, np_lists, k1, k)
    assert plain == list(zip(docs.tolist(), vals.tolist()))
    # From weights computed beforehand (a warm searcher keeps them per term), with a scratch row left dirty.
    weighted = [(d, bm25.posting_weights(bm25_plain.idf(n_docs, len(d)), t, norm[d], k1), q) for d, t, q in np_lists]
    dirty = np.full(n_docs, 7, dtype=np.int64)
    for _ in range(2):
        docs, vals = bm25.top_k_weighted(n_docs, weighted, k, dirty)
        assert plain == list(zip(docs.tolist(), vals.tolist()))
    # The same query inside a block of queries (the batch path) scores the same, bit for bit.
    other = [(np.asarray(d[::-1][:3], dtype=np.int32)[::-1], np.ones(min(3, len(d)), dtype=np.int32), 1)
             for d, _t, _q in lists]
    block = bm25.score_rows(n_docs, norm, k1, [other, np_lists, []])
    docs, vals = bm25.top_k(block[1], k)
    assert plain == list(zip(docs.tolist(), vals.tolist()))
    assert not block[2].any()


@settings(max_examples=examples(), deadline=None, database=None)
@given(st.lists(st.sampled_from([-1.5, 0.0, 0.25, 1.0, 2.5, 2.5000000000000004, 7.0]), max_size=300),
       st.integers(1, 40))
def test_top_k_of_keeps_the_k_best_positive_scores_ties_by_lower_document(values: list[float], k: int) -> None:
    """Many values go through one partition, few straight to the sort: both keep exactly the reference's
    choice, ties at the k-th score included and broken by the lower document number."""
    docs = np.arange(len(values), dtype=np.int64)[::-1].copy()  # not in order
    vals = np.asarray(values, dtype=np.float64)
    expected = sorted(((-v, int(d)) for d, v in zip(docs, vals) if v > 0))[:k]
    got_docs, got_vals = bm25.top_k_of(docs, vals, k)
    assert list(zip((-v for v in got_vals.tolist()), got_docs.tolist())) == expected


def test_a_document_number_past_the_end_or_negative_fails_the_length_lookup() -> None:
    dl = memoryview(array("i", [5, 6, 7])).cast("B").cast("i")
    for bad in (3, -1):  # -1 read unsigned is 4294967295: an IndexError, never doc_len[-1]
        docs = bm25_plain.unsigned(memoryview(array("i", [0, bad])).cast("B").cast("i"))
        tfs = memoryview(array("i", [1, 1])).cast("B").cast("i")
        with pytest.raises(IndexError):
            bm25_plain.top_k(3, dl, 6.0, 1.2, 0.75, [(docs, tfs, 1)], 5)


@pytest.mark.parametrize("value", [-1, 10**6])
def test_a_forged_document_number_gives_exit_10_on_the_plain_path(fresh_vault: Path, value: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain path skips the per-block range scan of ``postings``; a bad number still never reaches a score.

    The file is rewritten by the real writer, so every checksum is right and only the number is wrong."""
    vault = Vault(fresh_vault)
    index = Retriever(vault).index()
    term = index.analyze("descaling")[0]
    start, _end = index.posting_range(index.term_id(term))
    sections = {name: bytes(index.section(name)) if index._s.dtype(name) == "bytes" else index.section(name).copy()
                for name in index._s}
    sections["post_docs"][start] = value
    with MetaDir.open(vault) as meta, meta.sub(INDEX_DIR) as folder:
        write_sections(folder, INDEX_NAME, dict(index.header), sections)
    monkeypatch.setattr(search, "NUMPY_LOADED_FROM", 10**9)  # plain even though the tests loaded numpy
    with pytest.raises(NotProvisioned, match="malformed"):
        Retriever(Vault(fresh_vault)).retrieve("descaling", top=5)
    code, _out, err = run_main("retrieve", "--vault", fresh_vault, "descaling", "--no-rerank")
    assert code == 10 and "provision" in err and len(err.strip().splitlines()) == 1


_LOOP = """
import sys
from vaulteval.index import search
search.NUMPY_IMPORT_POSTINGS = int(sys.argv[2])
from vaulteval.pipeline.retrieve import Retriever, retrieve
from vaulteval.vault.vault import Vault
vault = Vault(sys.argv[1])
seen = []
for q in ["espresso descaling", "sourdough starter", "bike chain", "espresso machine water", "bread"]:
    retrieve(vault, q, top=5)  # one-shot, as a CLI call: a cold searcher
    seen.append("numpy" in sys.modules)
r = Retriever(vault)  # kept open for many queries: numpy before the first query is scored
r.retrieve("bread", top=5)
print(any(seen), "numpy" in sys.modules, r.index()._searcher.warm)
"""


@pytest.mark.parametrize("budget, pure, numpy_in_one_shot", [
    (10**9, "1", False), (0, "1", True),
    pytest.param(0, "", False, marks=pytest.mark.skipif(search.compiled_core() is None, reason="no compiled core")),
])
def test_numpy_is_loaded_when_a_retriever_opens_not_in_the_middle_of_a_loop(
        provisioned_sample: Path, budget: int, pure: str, numpy_in_one_shot: bool) -> None:
    """On the Python path a one-shot query scores in plain Python unless that query alone has more postings
    than numpy's import costs (the compiled core never needs numpy); a Retriever kept open loads numpy up front."""
    env = {**os.environ, search.PURE_PYTHON_ENV: pure}
    proc = subprocess.run([sys.executable, "-c", _LOOP, str(provisioned_sample), str(budget)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    one_shot, after_open, warm = proc.stdout.split()
    assert one_shot == str(numpy_in_one_shot)
    assert after_open == "True" and warm == "True"


def _views(doc_len: list[int], lists: list[tuple[list[int], list[int], int]]):
    dl = memoryview(array("i", doc_len)).cast("B").cast("i")
    return dl, [(memoryview(array("i", d)).cast("B").cast("I"), memoryview(array("i", t)).cast("B").cast("i"), q)
                for d, t, q in lists]


def _numpy_top_k(doc_len, lists, k1, b, avgdl, k):
    norm = bm25.length_norm(np.asarray(doc_len, dtype=np.int32), avgdl, k1, b)
    np_lists = [(np.asarray(d, dtype=np.int32), np.asarray(t, dtype=np.int32), q) for d, t, q in lists]
    docs, vals = bm25.top_k(bm25.score_terms(len(doc_len), norm, np_lists, k1), k)
    return list(zip(docs.tolist(), vals.tolist()))


@settings(max_examples=examples(), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_pruned_top_k_equals_numpy_when_rare_terms_decide(data) -> None:
    """A rare, frequent term and a few very common ones: the common lists are probed, not walked, and the
    answer is still numpy's, bit for bit (ties included: lengths and frequencies repeat a lot)."""
    n_docs = data.draw(st.integers(50, 400))
    doc_len = data.draw(st.lists(st.integers(5, 12), min_size=n_docs, max_size=n_docs))
    rare_docs = sorted(data.draw(st.sets(st.integers(0, n_docs - 1), min_size=1, max_size=12)))
    lists = [(rare_docs, data.draw(st.lists(st.integers(1, 4), min_size=len(rare_docs), max_size=len(rare_docs))), 1)]
    for _ in range(data.draw(st.integers(1, 4))):
        common = sorted(data.draw(st.sets(st.integers(0, n_docs - 1), min_size=n_docs // 2, max_size=n_docs)))
        lists.append((common, [1 + (d % 2) for d in common], data.draw(st.integers(1, 2))))
    data.draw(st.randoms()).shuffle(lists)
    k1, b, k = data.draw(st.sampled_from([1.2, 1.5])), data.draw(st.sampled_from([0.5, 0.75])), data.draw(st.integers(1, 8))
    dl, views = _views(doc_len, lists)
    avgdl = sum(doc_len) / n_docs
    assert bm25_plain.top_k(n_docs, dl, avgdl, k1, b, views, k) == _numpy_top_k(doc_len, lists, k1, b, avgdl, k)


def test_a_common_word_is_probed_not_walked() -> None:
    """One rare term (10 documents, tf 3) and one in every document: after the rare term, no document
    outside its 10 can reach the top 5, so the common term is looked up for the survivors only."""
    n_docs = 5_000
    doc_len = [8] * n_docs
    rare = list(range(0, 5_000, 500))
    lists = [(list(range(n_docs)), [1] * n_docs, 1), (rare, [3] * len(rare), 1)]
    dl, views = _views(doc_len, lists)
    trace: dict = {}
    got = bm25_plain.top_k(n_docs, dl, 8.0, 1.2, 0.75, views, 5, trace=trace)
    assert trace["probed_terms"] == 1
    assert got == _numpy_top_k(doc_len, lists, 1.2, 0.75, 8.0, 5)
    assert [d for d, _ in got] == rare[:5]
