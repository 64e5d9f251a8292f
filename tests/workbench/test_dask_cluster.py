"""Acceptance: a real Dask scheduler and two workers (subprocesses on 127.0.0.1) give the serial bytes,
also when one worker is killed in the middle of a task.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_dask_cluster.py -q``

One cluster serves the module; the test that kills a worker runs last. Each
run gets its own cold evaluation cache: index variants and embeddings are
computed anew by the cluster, not read back from the serial run. The six
strategies are BM25 variants (four index builds); a rerank strategy runs on a
small vault through the suite's loopback Ollama-compatible server, so the
workers' embedding warm-up and the client's OLLAMA_HOST are checked too. Every wait is bounded; the scheduler and workers also
stop on their own if the test process dies (idle and death timeouts).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from vaulteval.cli.main import main

from evalkit import QUERYSET, eval_cache, manifest_without_executor, same_bytes  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).with_name("dask")
SIX = ["bm25", "bm25:analyzer=english", "bm25:k1=1.2,b=0.6", "bm25:target=800,overlap=100",
       "bm25:bm25_top=20,top=5", "bm25:analyzer=english,target=1200,overlap=150"]
VICTIM = 5  # the strategy whose shard marks the worker to kill


def _wait(predicate, timeout: float, what: str, poll: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """``(address, {"w1": Popen, "w2": Popen})``: `dask scheduler` and two `dask worker --no-nanny`."""
    from distributed import Client

    tmp_path = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    sched_file = tmp_path / "scheduler.json"
    log = open(tmp_path / "cluster.log", "wb")
    procs = {"scheduler": subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                            "--no-dashboard", "--scheduler-file", str(sched_file), "--idle-timeout", "300s"],
                                           env=env, stdout=log, stderr=log)}
    try:
        address = _wait(lambda: sched_file.is_file() and json.loads(sched_file.read_text() or "{}").get("address"),
                        60, "the scheduler file")
        for name in ("w1", "w2"):
            procs[name] = subprocess.Popen([str(DASK), "worker", address, "--nthreads", "1", "--no-nanny",
                                            "--host", "127.0.0.1", "--no-dashboard", "--name", name, "--death-timeout", "60s"],
                                           env=env, stdout=log, stderr=log)
        with Client(address, timeout=20) as client:
            client.wait_for_workers(2, timeout=60)
        yield address, procs
    finally:
        for p in procs.values():
            p.kill()
        for p in procs.values():
            p.wait(timeout=20)
        log.close()


def test_a_worker_that_sees_another_vault_is_named(cluster) -> None:
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.vault.vault import Vault
    from vaulteval.workbench.executor import make_executor
    from vaulteval.workbench.splits import shard_queries
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.tasks import TaskContext, WorkerMismatch
    from vaulteval.workbench.workspace import Workspace

    qs = load_queryset(QUERYSET)
    ws = Workspace(Vault(qs.vault_root))
    bad = TaskContext(str(ws.vault.root), str(ws.cache_dir), True, "sha256:" + "f" * 64, "")
    with make_executor(cluster[0]) as ex:
        with pytest.raises(WorkerMismatch, match=r"worker w[12] \(tcp://127\.0\.0\.1:\d+\) sees another vault"):
            ex.run(bad, [Strategy()], shard_queries(qs.queries, 1), ws)


def test_rerank_on_the_workers_gives_the_serial_bytes(cluster, ollama_server, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers embed through the client's OLLAMA_HOST (the suite's loopback server with real MiniLM)."""
    from evalkit import make_vault, write_yaml

    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url)
    root = make_vault(tmp_path / "v", {f"p{i}.md": f"# Page {i}\n\nGiraffes and zebras, note {i}. " * 3
                                       for i in range(6)})
    qs = write_yaml(tmp_path / "qs.yaml", [{"id": f"q{i}", "query": f"giraffe note {i}",
                                            "relevant": {f"wiki/p{i}.md": 1}} for i in range(4)], vault=str(root))
    base = ["eval", "run", "--queryset", str(qs), "--out", str(tmp_path / "runs"), "--measures", "RR",
            "--strategy", "bm25", "--strategy", "rerank:ollama,model=all-minilm,bm25_top=5"]
    assert main([*base, "--id", "serial", "--cache", str(tmp_path / "c1")]) == 0
    assert main([*base, "--id", "cluster", "--cache", str(tmp_path / "c2"), "--scheduler", cluster[0]]) == 0
    assert same_bytes(tmp_path / "runs" / "serial", tmp_path / "runs" / "cluster") == []
    manifest = json.loads((tmp_path / "runs" / "cluster" / "manifest.json").read_text())
    assert manifest["strategies"][1]["labels"] == {"bm25+rerank:ollama": 4}
    assert manifest_without_executor(tmp_path / "runs" / "serial") == manifest_without_executor(
        tmp_path / "runs" / "cluster")


def test_tune_on_the_cluster_makes_the_serial_decision(cluster, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``tune --scheduler``: the search (tune split) and the confirmation (test split) run on the workers."""
    grid = "bm25;bm25:analyzer=english;bm25:k1=0.5,b=0.3;bm25:target=800,overlap=100"
    base = ["tune", "--queryset", str(QUERYSET), "--grid", grid, "--out", str(tmp_path / "runs")]
    assert main([*base, "--id", "serial", "--cache", str(tmp_path / "c1")]) == 0
    assert main([*base, "--id", "cluster", "--cache", str(tmp_path / "c2"), "--scheduler", cluster[0]]) == 0
    serial, clustered = (json.loads((tmp_path / "runs" / r / "tune.json").read_text()) for r in ("serial", "cluster"))
    assert len(serial["search"]) == 4 and serial["search"] == clustered["search"]
    assert serial["decision"] == clustered["decision"] and serial["params"] == clustered["params"]
    assert same_bytes(tmp_path / "runs" / "serial", tmp_path / "runs" / "cluster") == []
    executor = json.loads((tmp_path / "runs" / "cluster" / "manifest.json").read_text())["executor"]
    assert executor["kind"] == "dask" and executor["scheduler"] == cluster[0]
    assert "tasks done" in capsys.readouterr().err


def test_two_workers_give_the_serial_bytes_even_when_one_is_killed(cluster, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    from distributed import Client

    address, procs = cluster
    out = tmp_path / "runs"
    base = ["eval", "run", "--queryset", str(QUERYSET), "--out", str(out), "--measures", "nDCG@10", "RR", "R@20",
            *[a for s in SIX for a in ("--strategy", s)]]

    def run(run_id: str, *extra: str) -> int:
        return main([*base, "--id", run_id, "--cache", str(tmp_path / f"cache-{run_id}"), *extra])

    assert run("serial") == 0
    assert run("cluster", "--scheduler", address) == 0
    serial, clustered = out / "serial", out / "cluster"
    assert len(list(serial.glob("*.trec"))) == 6 and same_bytes(serial, clustered) == []
    assert manifest_without_executor(serial) == manifest_without_executor(clustered)
    executor = json.loads((clustered / "manifest.json").read_text())["executor"]
    assert executor == {"kind": "dask", "scheduler": address, "workers": 2, "tasks": 12}
    assert "12/12 tasks done" in capsys.readouterr().err

    # Kill the worker a shard was handed to, as soon as the scheduler has handed it over: the shard
    # (running, queued, or done but not yet gathered) is lost with it and must be rerun elsewhere.
    result: dict[str, int] = {}
    runner = threading.Thread(target=lambda: result.setdefault("rc", run("killed", "--scheduler", address)))
    runner.start()
    try:
        with Client(address, timeout=20) as watcher:
            def shard_worker():
                for worker, keys in watcher.processing().items():
                    if any(str(k).startswith("vaulteval-shard-") and str(k).endswith(f"-{VICTIM}-0") for k in keys):
                        return worker
                return None

            victim = _wait(shard_worker, 90, "the shard to be handed to a worker", poll=0.005)
            name = watcher.scheduler_info()["workers"][victim]["name"]
            procs[name].send_signal(signal.SIGKILL)
            procs[name].wait(timeout=10)
            runner.join(timeout=120)
            assert not runner.is_alive(), "the run did not finish after a worker was killed"
            survivors = [w["name"] for w in watcher.scheduler_info()["workers"].values()]
        assert survivors == [({"w1", "w2"} - {name}).pop()]
    finally:
        runner.join(timeout=120)
    assert result.get("rc") == 0
    assert same_bytes(serial, out / "killed") == []
    assert manifest_without_executor(serial) == manifest_without_executor(out / "killed")
    assert json.loads((out / "killed" / "manifest.json").read_text())["executor"]["workers"] == 2
