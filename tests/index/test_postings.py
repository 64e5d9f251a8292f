"""The build's inverted lists from numpy against a term-by-term reading of the same documents.

Usage: ``.venv/bin/python -m pytest tests/index/test_postings.py -q``
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from vaulteval.index.postings import Postings
from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import fresh_vault, unprovisioned_vault  # noqa: F401

WORDS = st.sampled_from(["a", "ab", "b", "東", "東京", "é", "e\u0301", "z" * 40, "0", "_x"])


def _by_hand(docs: list[list[str]]) -> tuple[list[str], list[int], list[int], list[int]]:
    per_term: dict[str, list[tuple[int, int]]] = {}
    for d, terms in enumerate(docs):
        for term, tf in Counter(terms).items():
            per_term.setdefault(term, []).append((d, tf))
    words = sorted(per_term)
    offsets, post_docs, post_tfs = [0], [], []
    for w in words:
        for d, tf in sorted(per_term[w]):
            post_docs.append(d)
            post_tfs.append(tf)
        offsets.append(len(post_docs))
    return words, offsets, post_docs, post_tfs


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.lists(WORDS, max_size=12), max_size=15), st.randoms(use_true_random=False))
def test_postings_are_the_term_by_term_lists_in_any_order_of_adding(docs: list[list[str]], rng) -> None:
    order = list(range(len(docs)))
    rng.shuffle(order)  # documents may arrive in any order; their numbers decide the layout
    lists = Postings()
    for d in order:
        lists.add(d, docs[d])
    words, offsets, post_docs, post_tfs = lists.finish(len(docs))
    assert (words, offsets.tolist(), post_docs.tolist(), post_tfs.tolist()) == _by_hand(docs)


TEXTS = ["Descaling the espresso machine", "東京タワー tower's view", "", "ΟΔΟΣ.Β user's well-formed _x_",
         "m² ﬁlter ①②"] * 7


def test_analyzing_with_a_helper_process_gives_the_serial_terms() -> None:
    from vaulteval.index.analysis import lookup
    from vaulteval.index.analyze_all import analyze_all

    for analyzer in map(lookup, ("default", "english", "german")):
        serial = list(analyze_all(analyzer, TEXTS, parallel=False))
        assert list(analyze_all(analyzer, TEXTS, parallel=True)) == serial and any(serial)


def test_a_build_split_over_two_processes_is_the_serial_build_byte_for_byte(
        fresh_vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything but the build time: the same terms, postings, lengths and rows, in the same bytes."""
    from vaulteval import Vault
    from vaulteval.index import analyze_all
    from vaulteval.index.file import read_sections
    from vaulteval.index.location import index_path
    from vaulteval.pipeline.provision import build

    def sections() -> tuple[dict, dict]:
        header, body = read_sections(index_path(fresh_vault / META_REL))
        return {k: v for k, v in header.items() if k not in ("built_at", "blocks_crc32", "sections")}, \
            {name: bytes(body.raw(name)) for name in body}

    monkeypatch.setenv("VAULTEVAL_BUILD_WORKERS", "1")
    index_path(fresh_vault / META_REL).unlink()
    build(Vault(fresh_vault))
    serial = sections()
    monkeypatch.delenv("VAULTEVAL_BUILD_WORKERS")
    monkeypatch.setattr(analyze_all, "PARALLEL_FROM", 0)
    monkeypatch.setattr(analyze_all, "cores", lambda: 2)
    monkeypatch.setattr(analyze_all, "_idle_cores", lambda: 1.5)
    spawned: list[bool] = []
    real = analyze_all.analyze_all
    monkeypatch.setattr("vaulteval.index.analyze_all.analyze_all",  # the build analyzes through its analyzer
                        lambda name, texts: spawned.append(analyze_all.parallel_pays(texts)) or real(name, texts))
    index_path(fresh_vault / META_REL).unlink()
    build(Vault(fresh_vault))
    assert spawned == [True]
    assert sections() == serial


def test_provision_hands_its_new_records_to_the_build_and_gets_the_index_a_store_read_gives(
        unprovisioned_vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """The records provision has just appended are indexed from memory (none is read back from the store); the
    index and field index are the bytes a build reading every record from the store writes."""
    from vaulteval import Vault
    from vaulteval.chunks import segments
    from vaulteval.index.fields import fields_path
    from vaulteval.index.file import read_sections
    from vaulteval.index.location import index_path
    from vaulteval.pipeline.provision import build, provision

    meta = unprovisioned_vault / META_REL

    def sections(path) -> tuple[dict, dict]:
        header, body = read_sections(path)
        return {k: v for k, v in header.items() if k not in ("built_at", "blocks_crc32", "sections", "index_identity")}, \
            {name: bytes(body.raw(name)) for name in body}

    reads: list[str] = []
    real = segments.StoreReader.record
    monkeypatch.setattr(segments.StoreReader, "record", lambda self, where, *a: reads.append(where) or real(self, where, *a))
    report = provision(Vault(unprovisioned_vault))
    assert report["index"]["tokenized"] == report["index"]["docs"] > 0 and reads == []
    handed = sections(index_path(meta)), sections(fields_path(meta))
    index_path(meta).unlink()
    fields_path(meta).unlink()
    build(Vault(unprovisioned_vault))  # no previous index, no records in memory: every record read from the store
    assert len(reads) == report["index"]["docs"]
    assert (sections(index_path(meta)), sections(fields_path(meta))) == handed


class _OldIndex:
    """What ``Postings.reuse`` reads of a previous index, from a finished build of ``docs``."""

    def __init__(self, docs: list[list[str]]):
        import numpy as np

        lists = Postings()
        for d, terms in enumerate(docs):
            lists.add(d, terms)
        self._words, off, post_docs, post_tfs = lists.finish(len(docs))
        self.n_docs, self.n_terms = len(docs), len(self._words)
        self._off, self.post_docs, self.post_tfs = off, post_docs.astype(np.int32), post_tfs.astype(np.int32)

    def all_terms(self) -> list[str]:
        return self._words

    def section(self, name: str):
        assert name == "post_offsets"
        return self._off


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.lists(WORDS, max_size=12), max_size=12), st.lists(st.lists(WORDS, max_size=12), max_size=6),
       st.randoms(use_true_random=False))
def test_reused_and_fresh_documents_give_the_term_by_term_lists(old_docs, fresh_docs, rng) -> None:
    """An incremental build: some previous documents kept (renumbered, in their old order or not), some dropped,
    fresh ones added; the lists are those of the new documents read term by term."""
    kept = [d for d in range(len(old_docs)) if rng.random() < 0.7]
    if rng.random() < 0.3:
        rng.shuffle(kept)  # renumbering that breaks the old order must still sort right
    slots = [("old", d) for d in kept] + [("new", i) for i in range(len(fresh_docs))]
    rng.shuffle(slots)
    lists = Postings()
    pairs = []
    for new, (kind, i) in enumerate(slots):
        if kind == "old":
            pairs.append((i, new))
        else:
            lists.add(new, fresh_docs[i])
    lists.reuse(_OldIndex(old_docs), pairs)
    words, offsets, post_docs, post_tfs = lists.finish(len(slots))
    expected = _by_hand([old_docs[i] if kind == "old" else fresh_docs[i] for kind, i in slots])
    assert (words, offsets.tolist(), post_docs.tolist(), post_tfs.tolist()) == expected
