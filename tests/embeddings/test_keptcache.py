"""Embedding caches kept open between queries by a long-lived process (``vaulteval.embeddings.keptcache``)."""

from __future__ import annotations

import shutil
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from vaulteval.embeddings import keptcache
from vaulteval.embeddings.embedcache import EmbeddingCache
from vaulteval.embeddings.keptcache import MAX_KEPT, kept_cache

VEC = np.linspace(0.1, 1.0, 8, dtype=np.float32)


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keptcache, "_KEPT", OrderedDict())


def test_one_open_cache_per_file_and_its_vectors_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    first = kept_cache(path)
    assert first.put("b", "m", "plain", {"k1": VEC}) == 1  # creates the file
    assert kept_cache(path) is first
    first.close()  # a no-op: still open for the next query
    assert kept_cache(path) is first and np.array_equal(first.get("b", "m", "plain", ["k1"])["k1"], VEC)
    with EmbeddingCache.open(path) as other:  # another process's view: the vector is in the file (or its log)
        assert np.array_equal(other.get("b", "m", "plain", ["k1"])["k1"], VEC)


def test_a_replaced_file_is_opened_again(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    first = kept_cache(path)
    first.put("b", "m", "plain", {"k1": VEC})
    first.shut()
    shutil.copyfile(path, tmp_path / "copy.sqlite")
    (tmp_path / "copy.sqlite").replace(path)  # a new inode under the same name
    again = kept_cache(path)
    assert again is not first and np.array_equal(again.get("b", "m", "plain", ["k1"])["k1"], VEC)


def test_worker_threads_share_one_connection(tmp_path: Path) -> None:
    cache = kept_cache(tmp_path / "embeddings.sqlite")
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(20):
                assert cache.put("b", "m", "plain", {f"{i}-{j}": VEC}) == 1
                assert f"{i}-{j}" in cache.get("b", "m", "plain", [f"{i}-{j}"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and kept_cache(tmp_path / "embeddings.sqlite") is cache
    assert len(cache.get("b", "m", "plain", [f"{i}-{j}" for i in range(4) for j in range(20)])) == 80


def test_at_most_a_few_files_stay_open(tmp_path: Path) -> None:
    caches = [kept_cache(tmp_path / f"c{i}.sqlite") for i in range(MAX_KEPT + 2)]
    assert len(keptcache._KEPT) == MAX_KEPT
    assert caches[0].put("b", "m", "plain", {"k": VEC}) == 0  # shut when it was dropped: a no-op, not an error
    assert list(keptcache._KEPT) == [str(tmp_path / f"c{i}.sqlite") for i in range(2, MAX_KEPT + 2)]


def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    import os

    path = tmp_path / "embeddings.sqlite"
    parent = kept_cache(path)
    parent.put("b", "m", "plain", {"k": VEC})
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a new connection, which sees the parent's vector and writes its own
        try:
            child = kept_cache(path)
            ok = child is not parent and "k" in child.get("b", "m", "plain", ["k"])
            ok = ok and child.put("b", "m", "plain", {"c": VEC}) == 1
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert kept_cache(path) is parent and "c" in parent.get("b", "m", "plain", ["c"])
