"""The executor: serial without Dask, local:N with the same bytes, and every refusal before work starts.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_executor.py -q``

The real-cluster acceptance test (scheduler and workers as subprocesses, a
worker killed mid-run) is in test_dask_cluster.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from vaulteval.cli.main import main
from vaulteval.errors import UsageError
from vaulteval.hosts import address_is_local
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import BUNDLED_SAMPLE, Vault
from vaulteval.workbench.evaluate import evaluate
from vaulteval.workbench.executor import parse_scheduler
from vaulteval.workbench.strategy import Strategy
from vaulteval.workbench.tasks import TaskContext, WorkerMismatch, prepare_task
from vaulteval.workbench.workspace import Workspace

from evalkit import QUERYSET, eval_cache, manifest_without_executor, same_bytes  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
STRATEGIES = ["bm25", "bm25:analyzer=english", "bm25:target=800,overlap=100,k1=1.2"]
@pytest.mark.parametrize("text, expected", [
    ("local:2", ("local", 2)), ("local:1", ("local", 1)), ("tcp://127.0.0.1:8786", ("address", "tcp://127.0.0.1:8786")),
    ("tls://[::1]:8786", ("address", "tls://[::1]:8786")),
])
def test_scheduler_strings(text: str, expected: tuple) -> None:
    assert parse_scheduler(text) == expected
    assert parse_scheduler("local")[1] == (os.cpu_count() or 1)


@pytest.mark.parametrize("text", ["local:0", "local:65", "local:two", "http://127.0.0.1:8786", "tcp://h", "8786", ""])
def test_bad_scheduler_strings_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--scheduler"):
        parse_scheduler(text)


@pytest.mark.parametrize("address, local", [
    ("tcp://127.0.0.1:8786", True), ("tcp://127.3.4.5:1", True), ("tcp://[::1]:40000", True),
    ("tcp://localhost:8786", True), ("inproc://10.0.0.1/1/2", True),
    ("tcp://10.0.0.5:8786", False), ("tcp://example.org:8786", False), ("tcp://0.0.0.0:8786", False),
    ("tcp://[::ffff:10.0.0.1]:1", False),
])
def test_loopback_rule_for_scheduler_and_worker_addresses(address: str, local: bool) -> None:
    assert address_is_local(address) is local


def test_a_serial_run_never_imports_dask(tmp_path: Path) -> None:
    code = ("import sys\nfrom vaulteval.cli.main import main\n"
            f"rc = main(['eval', 'run', '--queryset', {str(QUERYSET)!r}, '--strategy', 'bm25', '--out', {str(tmp_path)!r},"
            " '--id', 'r', '--measures', 'RR'])\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'))\n"
            "print(rc, loaded)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "0 []", proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["executor"] == {"kind": "serial", "tasks": 2}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_exit_2_with_one_line_before_any_work(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    rc = main(["eval", "run", "--queryset", str(QUERYSET), "--out", str(tmp_path / "runs"),
               "--scheduler", f"tcp://127.0.0.1:{_free_port()}"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:" in err
    assert not (tmp_path / "runs").exists()


def test_a_remote_scheduler_needs_allow_remote_workers(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["eval", "run", "--queryset", str(QUERYSET), "--out", str(tmp_path / "runs"),
               "--scheduler", "tcp://203.0.113.9:8786"])
    err = capsys.readouterr().err
    assert rc == 2 and "not on this machine; pass --allow-remote-workers" in err and err.count("\n") == 1


def test_a_task_that_sees_another_vault_names_its_worker(tmp_path: Path) -> None:
    vault = Vault(BUNDLED_SAMPLE)
    ws = Workspace(vault)
    ctx = TaskContext(str(vault.root), str(ws.cache_dir), True, "sha256:" + "0" * 64, "http://127.0.0.1:11434")
    with pytest.raises(WorkerMismatch, match=rf"worker pid {os.getpid()} sees another vault at .*sha256:.* vs the "
                                             r"client's sha256:0000.*share the client's filesystem"):
        prepare_task(ctx, Strategy(), [])
    gone = TaskContext(str(tmp_path / "nowhere"), str(ws.cache_dir), True, ws.fingerprint.digest, "")
    with pytest.raises(WorkerMismatch, match="cannot read the vault"):
        prepare_task(gone, Strategy(), [])


def test_other_processes_and_hash_seeds_write_the_same_files(tmp_path: Path) -> None:
    """Serial and ``local:2`` runs in two processes whose string hashes differ: every file the same bytes.

    Means taken over a set of query ids added up in hash order, so one run in three or so differed in
    the last digit of ``Judged@10``; in one process the order never changes and nothing shows it.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    base = [sys.executable, "-m", "vaulteval", "eval", "run", "--queryset", str(QUERYSET), "--out", str(tmp_path),
            "--measures", "nDCG@10,RR", "--strategy", "bm25", "--strategy", "bm25:analyzer=english"]
    for run_id, seed, extra in (("one", "1", []), ("other", "3", ["--scheduler", "local:2"])):
        proc = subprocess.run([*base, "--id", run_id, "--cache", str(tmp_path / f"cache-{run_id}"), *extra],
                              env={**env, "PYTHONHASHSEED": seed}, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert same_bytes(tmp_path / "one", tmp_path / "other") == []


def test_local_cluster_gives_the_serial_bytes_and_verifies_serially(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture) -> None:
    qs = load_queryset(QUERYSET)
    vault = Vault(qs.vault_root)
    serial = evaluate(vault, qs, STRATEGIES).save(tmp_path, "serial")
    ev = evaluate(vault, qs, STRATEGIES, scheduler="local:2", shards=4, progress=True)
    dask = ev.save(tmp_path, "dask")
    assert same_bytes(serial, dask) == []
    assert manifest_without_executor(serial) == manifest_without_executor(dask)
    assert ev.executor == {"kind": "dask", "scheduler": "local:2", "workers": 2, "tasks": 3 * (1 + 4)}
    err = capsys.readouterr().err
    assert "vaulteval: 15/15 tasks done" in err and "ETA" in err
    # The distributed run verifies when recomputed serially.
    assert main(["eval", "verify", str(dask)]) == 0
    assert "reproduces exactly" in capsys.readouterr().out
