"""The compiled BM25 core (``bm25_compiled``) against the pure-Python reference, and how the path is chosen.

Usage: ``.venv/bin/python -m pytest tests/index/test_compiled_scoring.py -q`` (20 examples per property;
``VAULTEVAL_FUZZ_EXAMPLES=400`` for a deeper run).

The compiled core must rank the same documents in the same order with the same
floats, bit for bit, as ``bm25_plain`` and numpy: it is the default where it is
built, so a CLI call, a notebook and a machine without a compiler agree.
SciFact's 300 test queries are compared in tests/index/test_bm25.py.
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
from vaulteval.index import bm25, bm25_plain, search
from vaulteval.pipeline.retrieve import Retriever

REPO = Path(__file__).resolve().parents[2]
core = search.compiled_core()
needs_core = pytest.mark.skipif(core is None, reason="the compiled core is not built here (no compiler at install)")


def _ints(values: list[int], fmt: str) -> memoryview:
    return memoryview(array("i", values)).cast("B").cast(fmt)


@st.composite
def corpora(draw):
    """Document lengths, per-term sorted distinct postings with term frequencies, BM25 parameters, a query;
    small ranges, so equal scores (ties) are common."""
    n_docs = draw(st.integers(1, 80))
    doc_len = draw(st.lists(st.integers(0, 40), min_size=n_docs, max_size=n_docs))
    lists = []
    for _ in range(draw(st.integers(0, 6))):
        docs = sorted(draw(st.sets(st.integers(0, n_docs - 1), max_size=n_docs)))
        tfs = draw(st.lists(st.integers(1, 6), min_size=len(docs), max_size=len(docs)))
        lists.append((docs, tfs, draw(st.integers(1, 3))))
    k1 = draw(st.sampled_from([0.0, 0.3, 1.2, 1.5, 3.7]))
    b = draw(st.sampled_from([0.0, 0.25, 0.75, 1.0]))
    avgdl = draw(st.sampled_from([0.0, sum(doc_len) / n_docs, 17.3]))
    return n_docs, doc_len, lists, k1, b, avgdl, draw(st.integers(0, 90))


def _flat(lists: list[tuple[list[int], list[int], int]]) -> tuple[list[int], list[int], list[tuple[int, int, int]]]:
    """Every term's postings laid end to end, as an index stores them, and each term's (start, end, qtf)."""
    docs, tfs, spans = [], [], []
    for d, t, q in lists:
        spans.append((len(docs), len(docs) + len(d), q))
        docs += d
        tfs += t
    return docs, tfs, spans


@needs_core
@settings(max_examples=examples(), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora())
def test_the_compiled_top_k_is_the_python_top_k_bit_for_bit(corpus) -> None:
    n_docs, doc_len, lists, k1, b, avgdl, k = corpus
    dl = _ints(doc_len, "i")
    views = [(_ints(d, "I"), _ints(t, "i"), q) for d, t, q in lists]
    plain = bm25_plain.top_k(n_docs, dl, avgdl, k1, b, views, k)
    docs, tfs, spans = _flat(lists)
    scratch = core.Scratch(n_docs)
    for _ in range(2):  # the scratch is left clean for the next query
        got = core.top_k_counts(scratch, _ints(docs, "I"), _ints(tfs, "i"), dl, avgdl, k1, b, spans, k)
        assert got == plain  # the same documents in the same order, identical floats
    norm = bm25.length_norm(np.asarray(doc_len, dtype=np.int32), avgdl, k1, b)
    np_lists = [(np.asarray(d, dtype=np.int32), np.asarray(t, dtype=np.int32), q) for d, t, q in lists]
    top_docs, vals = bm25.top_k(bm25.score_terms(n_docs, norm, np_lists, k1), k)
    assert plain == list(zip(top_docs.tolist(), vals.tolist()))
    # From weights computed beforehand, as a warm searcher's preload keeps them; answers as Hit rows.
    weights = [bm25.posting_weights(bm25_plain.idf(n_docs, len(d)), t, norm[d], k1) for d, t, _q in np_lists]
    flat_weights = np.concatenate(weights) if weights else np.zeros(0)
    hits = core.top_k_weighted(scratch, np.asarray(docs, dtype=np.uint32), flat_weights, spans, k, search.Hit)
    assert hits == plain and all(type(h) is search.Hit for h in hits)
    assert core.idf(n_docs, 1) == bm25_plain.idf(n_docs, 1)


@needs_core
def test_the_compiled_core_refuses_what_plain_python_refuses() -> None:
    """A document number past the lengths or a span past the postings is IndexError, a zero denominator
    ZeroDivisionError (the searcher turns both into 'index file is malformed'), and the scratch still answers
    the next query."""
    scratch = core.Scratch(3)
    dl = _ints([4, 6, 8], "i")
    good = (_ints([0, 2], "I"), _ints([1, 2], "i"))
    for bad in (3, -1):  # -1 read as unsigned is past the end too
        docs, tfs = _ints([0, 2, 1, bad], "I"), _ints([1, 2, 1, 1], "i")
        with pytest.raises(IndexError):
            core.top_k_counts(scratch, docs, tfs, dl, 6.0, 1.2, 0.75, [(0, 2, 1), (2, 4, 1)], 5)
        with pytest.raises(IndexError):
            core.top_k_weighted(scratch, np.array([0, bad], dtype=np.int64).astype(np.uint32), np.ones(2),
                                [(0, 2, 1)], 5)
    for span in ((0, 3, 1), (-1, 1, 1), (2, 1, 1)):
        with pytest.raises(IndexError):
            core.top_k_counts(scratch, *good, dl, 6.0, 1.2, 0.75, [span], 5)
    with pytest.raises(ZeroDivisionError):  # tf 0 and b 1 with a length of 0: only a forged file has it
        core.top_k_counts(scratch, _ints([0], "I"), _ints([0], "i"), _ints([0, 6, 8], "i"), 6.0, 1.2, 1.0,
                          [(0, 1, 1)], 5)
    with pytest.raises(ValueError):
        core.top_k_counts(scratch, _ints([0, 1], "I"), _ints([1], "i"), dl, 6.0, 1.2, 0.75, [(0, 1, 1)], 5)
    expected = bm25_plain.top_k(3, dl, 6.0, 1.2, 0.75, [(*good, 1)], 5)
    assert expected and core.top_k_counts(scratch, *good, dl, 6.0, 1.2, 0.75, [(0, 2, 1)], 5) == expected


@needs_core
def test_the_compiled_core_is_the_default_and_the_environment_forces_python(
        provisioned_sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cold (a CLI call) and warm (a Retriever kept open) searchers score with the core unless
    ``VAULTEVAL_PURE_PYTHON=1``; every path ranks alike."""
    queries = ["espresso descaling", "sourdough starter", "bike chain", "espresso machine water", "bread", "the"]
    answers = {}
    for pure in ("", "1"):
        monkeypatch.setenv(search.PURE_PYTHON_ENV, pure)
        for warm in (False, True):
            index = Retriever(Vault(provisioned_sample)).index().with_params(1.2, 0.75)
            searcher = index.choose_scorer(warm=warm)
            assert (searcher._core is None) == (pure == "1")
            answers[pure, warm] = [index.search(q, 10) for q in queries]
    assert any(answers["", False]) and len(set(map(repr, answers.values()))) == 1


@needs_core
def test_threads_sharing_one_searcher_get_the_serial_answers(provisioned_sample: Path) -> None:
    """A server's threads share one warm searcher and its scratch: each query still gets its own sums."""
    from concurrent.futures import ThreadPoolExecutor

    index = Retriever(Vault(provisioned_sample)).index().with_params(1.2, 0.75)
    assert index.choose_scorer(warm=True)._core is not None
    queries = ["espresso descaling", "sourdough starter", "bike chain", "espresso machine water", "bread"] * 40
    serial = [index.search(q, 10) for q in queries]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda q: index.search(q, 10), queries)) == serial


_BLOCKED = """
import sys
sys.modules["vaulteval.index.bm25_compiled"] = None  # as if the extension were never built: its import fails
from vaulteval.index import search
assert search.compiled_core() is None
from vaulteval.cli.main import main
sys.exit(main(["retrieve", "--vault", sys.argv[1], "espresso descaling", "--no-rerank"]))
"""


def test_without_the_extension_the_package_imports_and_answers(provisioned_sample: Path) -> None:
    """A machine that could not compile the core installs the package as Python: a query answers the same."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop(search.PURE_PYTHON_ENV, None)
    blocked = subprocess.run([sys.executable, "-c", _BLOCKED, str(provisioned_sample)], capture_output=True,
                             text=True, cwd=REPO, timeout=120, env=env)
    assert blocked.returncode == 0, blocked.stderr
    usual = subprocess.run([sys.executable, "-m", "vaulteval", "retrieve", "--vault", str(provisioned_sample),
                            "espresso descaling", "--no-rerank"], capture_output=True, text=True,
                           cwd=REPO, timeout=120, env=env)
    assert usual.returncode == 0, usual.stderr
    assert blocked.stdout.strip() and blocked.stdout == usual.stdout
