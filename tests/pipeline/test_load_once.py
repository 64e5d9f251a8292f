"""A Retriever shared by threads loads each part once: the first caller loads it, the others wait for that load.

A failed load is the same error for every caller that waited for it, and is not remembered: a later call loads
again. The loader is held on an event, so the callers are known to be waiting (no timing is asserted).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from held_loader import HeldLoader, hold_index, in_threads, wait_for
from vaulteval import Vault
from vaulteval.errors import NotProvisioned
from vaulteval.pipeline.loadonce import Loads
from vaulteval.pipeline.retrieve import Retriever, retrieve

CALLERS = 4


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldLoader:
    return hold_index(monkeypatch)


def test_concurrent_first_queries_open_the_index_once_and_rank_as_one_query(provisioned_sample: Path,
                                                                             held: HeldLoader) -> None:
    held.gate.set()
    expected = [c.chunk_id for c in retrieve(Vault(provisioned_sample), "descale the espresso machine").candidates]
    held.gate.clear()
    held.calls = 0
    retriever = Retriever(Vault(provisioned_sample))
    threads, results = in_threads(lambda: retriever.retrieve("descale the espresso machine"), CALLERS)
    wait_for(lambda: retriever._loads.waiting("_index") == CALLERS - 1, "the other callers to wait")
    held.gate.set()
    for t in threads:
        t.join()
    assert held.calls == 1
    assert [[c.chunk_id for c in r.candidates] for r in results] == [expected] * CALLERS


def test_a_failed_load_is_each_waiting_callers_error_and_a_later_call_loads_again(provisioned_sample: Path,
                                                                                  held: HeldLoader) -> None:
    held.fail = True
    retriever = Retriever(Vault(provisioned_sample))
    threads, results = in_threads(retriever.index, CALLERS)
    wait_for(lambda: retriever._loads.waiting("_index") == CALLERS - 1, "the other callers to wait")
    held.gate.set()
    for t in threads:
        t.join()
    assert held.calls == 1
    assert all(isinstance(r, NotProvisioned) for r in results), results
    assert {str(r) for r in results} == {str(results[0])} and "cannot be read" in str(results[0])
    index = retriever.index()  # the failure was not kept: this call loads again, and succeeds
    assert held.calls == 2 and index.n_docs > 0 and retriever.index() is index


def test_loads_run_once_for_the_callers_meanwhile_and_again_afterwards() -> None:
    loads, gate, calls = Loads(), threading.Event(), []

    def load() -> int:
        calls.append(1)
        assert gate.wait(60)
        return len(calls)

    threads, results = in_threads(lambda: loads.run("part", load), CALLERS)
    wait_for(lambda: loads.waiting("part") == CALLERS - 1, "the other callers to wait")
    gate.set()
    for t in threads:
        t.join()
    assert results == [1] * CALLERS and loads.waiting("part") == 0
    assert loads.run("part", load) == 2  # a later call runs it again (``fill`` is what keeps a value)
