"""LLM pre-grades for a pool (``queryset pregrade``) through a fake loopback Ollama, and the checked pool reader.

Usage: ``.venv/bin/python -m pytest tests/workbench/test_pregrade.py -q``
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.errors import UsageError
from vaulteval.notebooks.grader import Grader
from vaulteval.querysets.generate.llm import LlmSettings
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault
from vaulteval.workbench.pooling import pool_queryset, read_pool, write_pool
from vaulteval.workbench.pregrade import SCHEMA, parse_grade, pregrade_pool

from evalkit import make_vault, snapshot, write_yaml
from fake_llm_servers import EgressGuard, FakeServer, Reply

PAGES = {
    "coffee/Grinder.md": "The grinder dial sits at 12 for espresso.\n",
    "coffee/Espresso.md": "Espresso shots pulled at nine bar; the grinder matters most.\n",
    "garden/Monstera.md": "Monstera repotting in spring.\n",
}


def _answer(text: str) -> Reply:
    return Reply(200, {"model": "llama3.2", "done": True, "response": text})


@pytest.fixture
def pool_file(tmp_path: Path) -> Path:
    vault = Vault(make_vault(tmp_path / "v", PAGES))
    qs = write_yaml(tmp_path / "q.yaml", [{"id": "q1", "query": "espresso grinder", "relevant": {}},
                                          {"id": "q2", "query": "monstera repotting", "relevant": {}}], vault="v")
    pool = pool_queryset(vault, load_queryset(qs), ["bm25"], depth=3)
    assert len(pool["pairs"]) >= 3
    return write_pool(pool, tmp_path / "pool.yaml")


def test_each_pair_gets_the_models_grade_reason_and_name_as_a_suggestion(pool_file: Path, tmp_path: Path,
                                                                        capsys) -> None:
    vault = tmp_path / "v"
    before = snapshot(vault)
    with FakeServer([_answer(json.dumps({"grade": 2, "reason": "It gives\nthe dial setting."}))]) as srv:
        rc = main(["queryset", "pregrade", str(pool_file), "--out", str(tmp_path / "graded.yaml"),
                   "--llm-host", srv.url, "--quiet"])
        asked = [r.body for r in srv.requests if r.path == "/api/generate"]
    assert rc == 0 and snapshot(vault) == before
    graded = read_pool(tmp_path / "graded.yaml")
    assert len(asked) == len(graded["pairs"])
    for body, pair in zip(asked, graded["pairs"]):
        assert body["format"] == SCHEMA and body["options"]["temperature"] == 0 and body["model"] == "llama3.2"
        assert pair["query"] in body["prompt"] and pair["snippet"] in body["prompt"] and pair["page"] in body["prompt"]
        assert (pair["llm_grade"], pair["llm_reason"], pair["llm_model"]) == (2, "It gives the dial setting.",
                                                                             "llama3.2")
    out = capsys.readouterr().out
    assert out.startswith(f"{len(asked)} of {len(asked)} pairs pre-graded by llama3.2")
    grader = Grader(graded, queryset="q")
    assert "LLM pre-grade by llama3.2 (a suggestion, not a judgment)" in grader.card_html()
    assert grader.grades == {}  # a pre-grade is never a judgment
    grader.grade(0)
    assert grader.progress().endswith("the LLM pre-grade matched yours on 0 of 1")


def test_a_second_run_grades_only_what_is_left_unless_asked_to_regrade(pool_file: Path, tmp_path: Path) -> None:
    pool = read_pool(pool_file)
    pool["pairs"][0].update(llm_grade=1, llm_reason="earlier", llm_model="other")
    write_pool(pool, pool_file)
    with FakeServer([_answer('{"grade": 0, "reason": "unrelated"}')]) as srv:
        assert main(["queryset", "pregrade", str(pool_file), "--out", str(pool_file), "--llm-host", srv.url,
                     "--quiet"]) == 0
        first = len([r for r in srv.requests if r.path == "/api/generate"])
        assert main(["queryset", "pregrade", str(pool_file), "--out", str(pool_file), "--llm-host", srv.url,
                     "--quiet", "--regrade"]) == 0
        second = len([r for r in srv.requests if r.path == "/api/generate"]) - first
    pool = read_pool(pool_file)
    assert first == len(pool["pairs"]) - 1 and second == len(pool["pairs"])
    assert all(p["llm_grade"] == 0 and p["llm_model"] == "llama3.2" for p in pool["pairs"])


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"grade": 1, "reason": "on topic"}', (1, "on topic")),
    ('{"grade": "2", "reason": 5}', (2, "")),
    ("2 - it lists the steps", (2, "it lists the steps")),
    ("Grade: 0. Not about coffee.", (0, "Not about coffee.")),
    ('<think>The passage names the dial.</think>\n{"grade": 2, "reason": "gives the setting"}', (2, "gives the setting")),
    ('```json\n{"grade": 0, "reason": "other topic"}\n```', (0, "other topic")),
    ('{"grade": 3, "reason": "too high"}', None),
    ('{"grade": true}', None),
    ("[2]", None),
    ("12 things", None),
    ("-1", None),
    ("0.5 on topic", None),
    ("**2** it answers", (2, "it answers")),
    ("I think it is relevant.", None),
    ("", None),
])
def test_a_reply_gives_a_grade_only_when_it_states_one_from_0_to_2(reply: str, expected) -> None:
    assert parse_grade(reply) == expected


def test_replies_without_a_grade_leave_the_pair_ungraded_and_are_counted(pool_file: Path) -> None:
    pool = read_pool(pool_file)
    with FakeServer([_answer("I cannot tell."), _answer('{"grade": 7}'), _answer('{"grade": 1, "reason": "x"}')]) as srv:
        summary = pregrade_pool(pool, LlmSettings(host=srv.url))
    assert summary["unanswered"] == 2 and summary["graded"] == len(pool["pairs"]) - 2
    assert [p.get("llm_grade") for p in pool["pairs"][:2]] == [None, None]


def test_a_model_that_stops_answering_keeps_what_was_graded_and_says_how_to_go_on(pool_file: Path, tmp_path: Path,
                                                                                   capsys) -> None:
    out = tmp_path / "graded.yaml"
    pool = read_pool(pool_file)
    pool["pairs"] += [{**pair, "query_id": f"x{n}"} for n, pair in enumerate(pool["pairs"])]
    write_pool(pool, pool_file)  # more pairs than one answer and three failures
    failing = Reply(500, {"error": "llama runner process has terminated"})
    with FakeServer([_answer('{"grade": 2, "reason": "yes"}'), failing, failing, failing]) as srv:
        rc = main(["queryset", "pregrade", str(pool_file), "--out", str(out), "--llm-host", srv.url, "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "failed 3 times in a row" in err[0] and "run again on it" in err[0]
    assert [p.get("llm_grade") for p in read_pool(out)["pairs"]].count(2) == 1


def test_a_remote_host_is_refused_without_allow_egress(pool_file: Path, tmp_path: Path, capsys) -> None:
    with EgressGuard() as attempts:
        rc = main(["queryset", "pregrade", str(pool_file), "--out", str(tmp_path / "g.yaml"),
                   "--llm-host", "http://10.1.2.3:11434"])
    assert rc == 2 and attempts == [] and not (tmp_path / "g.yaml").exists()
    assert "--allow-egress" in capsys.readouterr().err


def test_the_pool_is_not_written_inside_its_vault(pool_file: Path, tmp_path: Path, capsys) -> None:
    with FakeServer([_answer('{"grade": 1, "reason": "x"}')]) as srv:
        rc = main(["queryset", "pregrade", str(pool_file), "--out", str(tmp_path / "v" / "pool.yaml"),
                   "--llm-host", srv.url])
        assert srv.requests == []
    assert rc == 2 and "inside the vault" in capsys.readouterr().err
    assert not (tmp_path / "v" / "pool.yaml").exists()


BAD_POOLS = {
    "not-yaml": (b"pairs: [\n", "not valid YAML"),
    "a-list": (b"- 1\n- 2\n", "expected a mapping with a 'pairs:' list"),
    "no-pairs": (b"depth: 3\n", "expected a mapping with a 'pairs:' list"),
    "no-header": (b"pairs: []\n", "expected 'strategies:'"),
    "pair-not-mapping": (b"depth: 3\nstrategies: [bm25]\npairs: [3]\n", "pair 1 is not a mapping"),
    "no-page": (b"depth: 3\nstrategies: [bm25]\npairs:\n- {query_id: q1, query: x, snippet: y}\n", "has no text 'page'"),
    "bad-grade": (b"depth: 3\nstrategies: [bm25]\npairs:\n- {query_id: q1, query: x, page: a.md, snippet: y, llm_grade: 5}\n", "'llm_grade'"),
    "twice": (b"depth: 3\nstrategies: [bm25]\npairs:\n- {query_id: q1, query: x, page: a.md, snippet: y}\n"
              b"- {query_id: q1, query: x, page: a.md, snippet: z}\n", "a second time"),
    "not-utf8": (b"pairs: []\n# \xff\xfe\n", "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_POOLS))
def test_a_malformed_pool_is_one_line_for_the_cli_and_the_notebook(case: str, tmp_path: Path, capsys) -> None:
    data, message = BAD_POOLS[case]
    path = tmp_path / "pool.yaml"
    path.write_bytes(data)
    with pytest.raises(UsageError, match=message):
        read_pool(path)
    assert main(["queryset", "pregrade", str(path), "--out", str(tmp_path / "out.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vaulteval: error: pool ") and "queryset pool" in err[0]
    assert not (tmp_path / "out.yaml").exists()


def test_a_pool_that_is_a_fifo_or_a_folder_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "folder.yaml").mkdir()
    for name in ("fifo.yaml", "folder.yaml", "missing.yaml"):
        with pytest.raises(UsageError, match="cannot read pool"):
            read_pool(tmp_path / name)


def test_a_numeric_query_id_reads_as_text(tmp_path: Path) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump({"depth": 1, "strategies": ["bm25"],
                                    "pairs": [{"query_id": 12, "query": "x", "page": "a.md", "snippet": "y"}]}))
    assert read_pool(path)["pairs"][0]["query_id"] == "12"


def test_a_model_slower_than_the_timeout_is_one_line_not_a_crash(pool_file: Path, tmp_path: Path, capsys) -> None:
    with FakeServer([Reply(200, {"response": '{"grade": 1, "reason": "x"}'}, delay=1.0)]) as srv:
        rc = main(["queryset", "pregrade", str(pool_file), "--out", str(tmp_path / "g.yaml"), "--llm-host", srv.url,
                   "--llm-timeout", "0.2", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "failed 3 times in a row" in err[0] and "Timeout" in err[0]
    assert not (tmp_path / "g.yaml").exists()


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(pool_file: Path, tmp_path: Path, timeout: str,
                                                           capsys) -> None:
    rc = main(["queryset", "pregrade", str(pool_file), "--out", str(tmp_path / "g.yaml"), "--llm-timeout", timeout])
    assert rc == 2 and "--llm-timeout must be a number of seconds" in capsys.readouterr().err


def test_a_server_that_is_not_there_is_named_when_every_request_fails(tmp_path: Path, capsys) -> None:
    import socket

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = tmp_path / "pool.yaml"
    path.write_text("depth: 1\nstrategies: [bm25]\npairs:\n- {query_id: q1, query: x, page: a.md, snippet: y}\n",
                    encoding="utf-8")
    rc = main(["queryset", "pregrade", str(path), "--out", str(tmp_path / "g.yaml"), "--llm-host",
               f"http://127.0.0.1:{port}", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "failed on all 1 pairs" in err and f"is Ollama running at http://127.0.0.1:{port}?" in err
    assert not (tmp_path / "g.yaml").exists()


def test_without_the_ollama_package_the_line_says_what_to_install(pool_file: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ollama", None)  # as if the rerank extra were not installed
    rc = main(["queryset", "pregrade", str(pool_file), "--out", str(tmp_path / "g.yaml")])
    assert rc == 2 and "pip install 'vaulteval[rerank]'" in capsys.readouterr().err
