"""The server answers before its vault is loaded: the warm-up runs behind it, and a call waits only for its parts.

An in-process server driven by the official SDK's client over memory streams, with the index's loader held on
an event: ``initialize`` and ``tools/list`` are answered while it is held, searches sent meanwhile get the
same pages as a one-shot retrieve once it is released, and the index was opened once for all of them. No
timing is asserted.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from held_loader import HeldLoader, hold_index, wait_for
from vaulteval import Vault
from vaulteval.pipeline.retrieve import retrieve
from vaulteval.server import warm as warm_module
from vaulteval.server.warm import Served, WarmVault

pytest.importorskip("mcp")
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402

from vaulteval.server.app import build_server, call  # noqa: E402

QUERY = "descale the espresso machine"
SEARCHES = 3


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldLoader:
    return hold_index(monkeypatch)


def test_initialize_and_tools_are_answered_during_warm_up_and_searches_wait_for_one_load(
        provisioned_sample: Path, held: HeldLoader, monkeypatch: pytest.MonkeyPatch) -> None:
    held.gate.set()
    expected = [c.page_path for c in retrieve(Vault(provisioned_sample), QUERY, top=3).candidates]
    held.gate.clear()
    held.calls, held.entered = 0, threading.Event()
    started = []  # searches that reached the server's search tool
    real_check = warm_module.check_query
    monkeypatch.setattr(warm_module, "check_query", lambda q: (started.append(q), real_check(q))[1])

    warm = WarmVault(Vault(provisioned_sample), Served())
    warming = warm.start_warm_up()
    assert held.entered.wait(60)  # the warm-up is opening the index, and stays there until released

    async def main() -> tuple[set[str], list]:
        async with create_connected_server_and_client_session(build_server(warm)) as client:  # initialize
            tools = {t.name for t in (await client.list_tools()).tools}
            assert not held.gate.is_set() and warming.is_alive()  # answered while the index is still loading
            results: list = [None] * SEARCHES

            async def search(i: int) -> None:
                results[i] = await client.call_tool("search", {"query": QUERY, "limit": 3})

            async with anyio.create_task_group() as group:
                for i in range(SEARCHES):
                    group.start_soon(search, i)
                await anyio.to_thread.run_sync(wait_for, lambda: len(started) == SEARCHES, "the searches")
                held.gate.set()  # the searches were sent during the warm-up
            return tools, results

    tools, results = anyio.run(main)
    warming.join(60)
    assert tools == {"search", "read", "read_many", "status"}
    for result in results:
        assert result.isError is False, result.content
        assert [c["page_path"] for c in result.structuredContent["candidates"]] == expected
    assert held.calls == 1  # one load of the index for the warm-up and the three searches
    assert not warming.is_alive()


def test_a_failed_warm_up_prints_nothing_and_the_next_call_loads_again(provisioned_sample: Path, held: HeldLoader,
                                                                       capfd: pytest.CaptureFixture) -> None:
    real = held.real

    def broken(*_args: object) -> None:
        raise RuntimeError("a loader bug")

    held.real, held.gate = broken, threading.Event()
    held.gate.set()
    warm = WarmVault(Vault(provisioned_sample), Served())
    warm.start_warm_up().join(60)
    assert held.calls == 1
    assert capfd.readouterr().err == ""  # no traceback from the background thread, and the process goes on
    held.real = real
    result = call(warm, "search", {"query": QUERY, "limit": 3})
    assert result.isError is False, result.content
    assert held.calls == 2  # the search loaded the index again, and it opened this time
    assert [c["page_path"] for c in result.structuredContent["candidates"]] == \
        [c.page_path for c in retrieve(Vault(provisioned_sample), QUERY, top=3).candidates]


def test_an_unprovisioned_vault_warms_up_quietly_and_search_reports_it(unprovisioned_vault: Path,
                                                                      capfd: pytest.CaptureFixture) -> None:
    warm = WarmVault(Vault(unprovisioned_vault), Served())
    warm.start_warm_up().join(60)
    assert capfd.readouterr().err == ""
    result = call(warm, "search", {"query": QUERY})
    assert result.isError is True and result.structuredContent["exit_code"] == 10
    assert "provision" in result.structuredContent["error"]


def test_ending_the_warm_up_stops_it_after_its_current_step(provisioned_sample: Path, held: HeldLoader) -> None:
    warm = WarmVault(Vault(provisioned_sample), Served())
    warming = warm.start_warm_up()
    assert held.entered.wait(60)
    ending = threading.Thread(target=warm.end_warm_up)
    ending.start()
    wait_for(lambda: warm._stopping, "the stop to be asked")
    assert ending.is_alive()  # it waits for the step in progress
    held.gate.set()
    ending.join(60)
    assert not warming.is_alive()
    assert warm.retriever()._fields is False  # the steps after the index were not run
