"""Issue 42's remaining cases under ``make reliability``: a query that is not UTF-8 in the log, a manifest
holding NaN, a tampered vault-pages.txt, and a note whose every character pair is a new term.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_hostile_values.py -q -s``
(``VAULTEVAL_RELIABILITY=full`` feeds the issue's 8.4 MB note; the default, 400 KB under a 256 KiB bound.)
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from pipeline_fixtures import make_vault, run_cli, run_main

FULL = os.environ.get("VAULTEVAL_RELIABILITY") == "full"
HANG = 900 if FULL else 240  # a hang guard for the subprocess, not a measurement


def test_retrieve_log_records_a_query_that_is_not_utf8(provisioned_sample: Path, tmp_path: Path) -> None:
    log = tmp_path / "q.jsonl"
    code, _out, err = run_main("retrieve", "--vault", provisioned_sample, "--no-rerank", "--log", log,
                               "callouts \udcff")  # $'callouts \xff' as Python reads it from argv
    assert code == 0 and "internal error" not in err, err
    assert json.loads(log.read_text(encoding="utf-8"))["query"] == "callouts \\xff"


def test_a_manifest_holding_nan_is_malformed(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text('{"schema": 2, "id": "r1", "parameters": {"seed": NaN}}', encoding="utf-8")
    code, _out, err = run_main("eval", "verify", run)
    assert code == 2 and "malformed" in err and "NaN" in err and len(err.strip().splitlines()) == 1, err


def test_a_tampered_vault_pages_file_does_not_verify(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v")
    qs = tmp_path / "q.yaml"
    qs.write_text("queries:\n  - {id: q1, query: descale the espresso machine, "
                  "relevant: {wiki/howto/Descaling.md: 2}}\n", encoding="utf-8")
    assert run_main("eval", "run", "--vault", root, "--queryset", qs, "--strategy", "bm25", "--out",
                    tmp_path / "runs", "--id", "r1", "--cache", tmp_path / "cache")[0] == 0
    pages = tmp_path / "runs" / "r1" / "vault-pages.txt"
    pages.write_text(pages.read_text(encoding="utf-8").replace("sha256:", "sha256:0", 1), encoding="utf-8")
    code, out, _err = run_main("eval", "verify", tmp_path / "runs" / "r1", "--cache", tmp_path / "cache")
    assert code == 1 and "vault-pages.txt: not the page list" in out, out


def test_a_note_of_random_cjk_adds_a_bounded_share_to_the_index(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", provision=False)
    chars = 2_800_000 if FULL else 140_000  # 8.4 MB as in the issue, else 420 KB
    rng = random.Random(7)
    (root / "wiki" / "cjk.md").write_text("".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(chars)),
                                          encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if not FULL:
        env["VAULTEVAL_MAX_NOTE_BYTES"] = str(256 << 10)
    started = time.perf_counter()
    proc = run_cli("provision", "--vault", root, "--no-embed", env=env, timeout=HANG)
    seconds = time.perf_counter() - started
    index = root / ".vault-meta" / "vaulteval" / "bm25" / "index.vti"
    print(f"\n  random CJK note of {chars * 3 / 1e6:.1f} MB: provision {seconds:.1f} s, "
          f"index.vti {index.stat().st_size / 1e6:.1f} MB")
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [line for line in proc.stderr.splitlines() if "wiki/cjk.md adds more than" in line]
    assert len(said) == 1, proc.stderr
    limit = int(env.get("VAULTEVAL_MAX_NOTE_BYTES", 8 << 20))
    assert index.stat().st_size < 16 * limit  # the index holds at most limit/8 postings of the note
    hits = run_cli("retrieve", "--vault", root, "--no-rerank", "descale the espresso machine", env=env, timeout=HANG)
    assert hits.returncode == 0 and "wiki/howto/Descaling.md" in hits.stdout, hits.stderr[-1000:]
