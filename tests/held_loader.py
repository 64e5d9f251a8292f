"""A loader held on an event, for tests of what callers do while a part of the vault is loading.

Usage::

    held = hold_index(monkeypatch)      # vaulteval.pipeline.retrieve.open_index, held
    ...start callers...; assert held.entered.wait(60); held.gate.set()
    assert held.calls == 1

The tests wait for states (a caller entered, callers waiting), never for a time.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest

from vaulteval.errors import NotProvisioned


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll until ``condition()``; fail after 60 s (a hang, not a slow machine)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


class HeldLoader:
    """Stands in for a loader: counts its calls and holds each one until ``gate`` is set; ``fail`` makes the
    next call raise NotProvisioned after its release."""

    def __init__(self, real: Callable[..., Any]):
        self.real, self.calls, self.fail = real, 0, False
        self.entered, self.gate = threading.Event(), threading.Event()

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        self.entered.set()
        assert self.gate.wait(60), "the test never released the loader"
        if self.fail:
            self.fail = False
            raise NotProvisioned("the index cannot be read (test)", rebuild="vaulteval provision --vault V")
        return self.real(*args)


def hold_index(monkeypatch: pytest.MonkeyPatch) -> HeldLoader:
    """The Retriever's index loader (``open_index`` as ``vaulteval.pipeline.retrieve`` calls it), held."""
    from vaulteval.pipeline import retrieve

    loader = HeldLoader(retrieve.open_index)
    monkeypatch.setattr(retrieve, "open_index", loader)
    return loader


def in_threads(work: Callable[[], Any], n: int) -> tuple[list[threading.Thread], list[Any]]:
    """``work()`` on ``n`` started threads; each one's value or exception lands in the list once joined."""
    results: list[Any] = [None] * n

    def one(i: int) -> None:
        try:
            results[i] = work()
        except Exception as exc:  # noqa: BLE001 - the test inspects what each caller got
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, results
