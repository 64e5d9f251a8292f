"""One load for the threads that ask at once: the first caller loads, the others wait for its outcome.

Usage::

    loads = Loads()
    index = loads.fill(retriever, "_index", lambda: open_index(vault))   # set once; every caller gets it
    loads.run("scorer", lambda: index.choose_scorer(warm=True))         # run once for the callers meanwhile

A failed load is raised to the caller that ran it and to every caller that was
waiting for it (the same error), and is not remembered: the next call loads
again. Built on ``_thread`` (always imported), so a one-shot CLI query pays no
import for it.
"""

from __future__ import annotations

import _thread
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable


class _Flight:
    """One load in progress: its lock is held until the load ends."""

    __slots__ = ("done", "value", "error", "waiting")

    def __init__(self) -> None:
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.waiting = 0  # callers waiting for it besides the one loading
        self.value: Any = None
        self.error: BaseException | None = None


class Loads:
    """The loads in progress for one owner, by key (thread-safe)."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._flights: dict[str, _Flight] = {}

    def run(self, key: str, load: "Callable[[], Any]") -> Any:
        """``load()``, run by one thread for all the callers of ``key`` while it runs; they get its value or
        its error."""
        with self._lock:
            flight = self._flights.get(key)
            leading = flight is None
            if leading:
                flight = self._flights[key] = _Flight()
            else:
                flight.waiting += 1
        if not leading:
            with flight.done:  # released when the load ends
                pass
            if flight.error is not None:
                raise flight.error
            return flight.value
        try:
            flight.value = load()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.release()
        return flight.value

    def waiting(self, key: str) -> int:
        """How many callers wait for the load of ``key`` now (0 when none runs)."""
        with self._lock:
            flight = self._flights.get(key)
            return 0 if flight is None else flight.waiting

    def fill(self, owner: object, attr: str, load: "Callable[[], Any]", unset: Any = None) -> Any:
        """``owner.attr``, set to ``load()`` first while it is ``unset``, by one thread at a time."""
        def once() -> Any:
            if getattr(owner, attr) is unset:  # a caller before this flight may have set it
                setattr(owner, attr, load())
            return getattr(owner, attr)

        return self.run(attr, once)
