"""Real questions with consent: ``retrieve --log FILE`` and ``queryset from-log FILE`` into a pool to judge."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from pipeline_fixtures import run_json, run_main, snapshot

QUESTIONS = ["how do I descale the espresso machine", "why does my bread come out flat",
             "how do I descale   the espresso machine"]  # the third is the first again, spaced differently


def _retrieve(vault: Path, query: str, *extra) -> tuple[int, str, str]:
    return run_main("retrieve", "--vault", vault, query, "--no-rerank", *extra)


def test_nothing_is_logged_without_the_flag(fresh_vault: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    before_vault, before_here = snapshot(fresh_vault), sorted(os.listdir(tmp_path))
    assert _retrieve(fresh_vault, QUESTIONS[0])[0] == 0
    assert snapshot(fresh_vault) == before_vault and sorted(os.listdir(tmp_path)) == before_here


def test_the_log_gets_one_line_per_retrieve_with_query_time_strategy_and_paths(fresh_vault: Path,
                                                                              tmp_path: Path) -> None:
    log = tmp_path / "questions.jsonl"
    results = []
    for q in QUESTIONS:
        code, out, err = _retrieve(fresh_vault, q, "--log", log)
        assert code == 0, err
        results.append(json.loads(out))
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 3 and oct(log.stat().st_mode & 0o777) == "0o600"
    for line, result in zip(lines, results):
        assert set(line) == {"time", "vault", "query", "strategy", "paths"}
        assert line["query"] == result["query"] and line["strategy"] == result["strategy"] == "bm25-only"
        assert line["paths"] == [c["page_path"] for c in result["candidates"]] and line["paths"]
        assert line["vault"] == str(fresh_vault.resolve()) and line["time"].endswith("Z")


@pytest.mark.parametrize("where", ["vault", "meta", "symlink_into_vault", "fifo", "no_folder"])
def test_a_log_inside_the_vault_or_not_a_plain_file_is_refused_before_retrieval(fresh_vault: Path, tmp_path: Path,
                                                                               where: str) -> None:
    target = {"vault": fresh_vault / "log.jsonl", "meta": fresh_vault / ".vault-meta" / "log.jsonl",
              "symlink_into_vault": tmp_path / "link.jsonl", "fifo": tmp_path / "fifo.jsonl",
              "no_folder": tmp_path / "missing" / "log.jsonl"}[where]
    if where == "symlink_into_vault":
        target.symlink_to(fresh_vault / "wiki" / "new.jsonl")
    if where == "fifo":
        os.mkfifo(target)
    before = snapshot(fresh_vault)
    code, out, err = _retrieve(fresh_vault, QUESTIONS[0], "--log", target)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--log" in err, err
    assert "Traceback" not in err and snapshot(fresh_vault) == before


def test_from_log_makes_a_query_set_and_a_pool_the_judge_notebook_reads(fresh_vault: Path, tmp_path: Path) -> None:
    from vaulteval.querysets.judging import save_labels
    from vaulteval.querysets.queryset import open_queryset

    log = tmp_path / "questions.jsonl"
    for q in QUESTIONS:
        assert _retrieve(fresh_vault, q, "--log", log)[0] == 0
    pool_path = tmp_path / "judge" / "pool.yaml"
    code, out, err = run_main("queryset", "from-log", log, "--out", pool_path)  # the vault comes from the log
    assert code == 0, err
    qs_path = tmp_path / "judge" / "pool-queries.yaml"
    assert str(pool_path) in out and str(qs_path) in out
    pool = yaml.safe_load(pool_path.read_text(encoding="utf-8"))
    from vaulteval.workbench.pooling import read_pool

    assert read_pool(pool_path) == pool  # the checked reader the judge notebook and pregrade use takes it
    vault, qs = open_queryset(qs_path)
    assert vault.root == fresh_vault.resolve()
    assert len(qs.queries) == 2 and all(q.is_negative and q.tags == ("from-log",) for q in qs.queries)
    asked = {q.text: q for q in qs.queries}
    assert asked[QUESTIONS[0]].fields["source"]["asked"] == 2
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert {(p["query"], p["page"]) for p in pool["pairs"]} == {
        (" ".join(r["query"].split()), page) for r in logged for page in r["paths"]}
    assert all(p["strategies"] == ["bm25-only"] and p["snippet"] for p in pool["pairs"])
    assert pool["vault"] == str(fresh_vault.resolve()) and pool["queryset"] == str(qs_path.resolve())
    # the judge notebook's save: grades land in a new query set that loads with judgments
    first = pool["pairs"][0]
    saved = save_labels(qs_path, pool, {(first["query_id"], first["page"]): 2}, judge="ana",
                        out=tmp_path / "judged.yaml")
    assert saved["judgments_added"] == 1
    _, judged = open_queryset(tmp_path / "judged.yaml")
    assert {q.query_id: q.relevant for q in judged.queries}[first["query_id"]] == {first["page"]: 2}
    # the same questions logged again give the same ids: judgments merge by id
    again = tmp_path / "again.yaml"
    assert run_main("queryset", "from-log", log, "--out", again)[0] == 0
    assert yaml.safe_load(again.read_text())["pairs"] == pool["pairs"]


@pytest.mark.parametrize("content, message", [
    (b"not json\n", "log.jsonl:1: not a JSON line"),
    (b'{"query": "q", "paths": ["a.md"]}\n{"query": 3}\n', "log.jsonl:2: expected"),
    (b"\xff\xfe\n", "log.jsonl:1: not a JSON line"),
    (b"\n\n", "holds no logged questions"),
    (b'{"query": "callouts \\udcff", "paths": []}\n', "log.jsonl:1: expected"),
    (b'{"query": "q", "paths": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", "log.jsonl:1: not a JSON line"),
])
def test_a_malformed_log_is_one_line_naming_the_line(fresh_vault: Path, tmp_path: Path, content: bytes,
                                                     message: str) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(content)
    code, _, err = run_main("queryset", "from-log", log, "--vault", fresh_vault, "--out", tmp_path / "pool.yaml")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "pool.yaml").exists()


def test_from_log_refuses_to_write_into_the_vault_and_skips_other_vaults(fresh_vault: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    assert _retrieve(fresh_vault, QUESTIONS[1], "--log", log)[0] == 0
    with log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"query": "elsewhere", "vault": str(tmp_path / "other"), "paths": ["x.md"]}) + "\n")
        fh.write(json.dumps({"query": "gone page", "vault": str(fresh_vault.resolve()),
                             "paths": ["wiki/No such page.md", "../../etc/passwd"]}) + "\n")
    before = snapshot(fresh_vault)
    code, _, err = run_main("queryset", "from-log", log, "--vault", fresh_vault, "--out", fresh_vault / "pool.yaml")
    assert code == 2 and "inside the vault" in err and snapshot(fresh_vault) == before
    code, _, err = run_main("queryset", "from-log", log, "--out", tmp_path / "p.yaml")
    assert code == 2 and "names 2 vaults" in err  # which one to judge must be said
    code, out, err = run_main("queryset", "from-log", log, "--vault", fresh_vault, "--out", tmp_path / "p.yaml")
    assert code == 0, err
    assert "skipped 1 logged line(s) from another vault" in out and "2 logged page(s) are gone" in out
    pool = yaml.safe_load((tmp_path / "p.yaml").read_text())
    assert {p["query"] for p in pool["pairs"]} == {QUESTIONS[1]}  # the gone pages are left out


def test_a_log_that_fails_to_take_the_line_is_one_clear_line(fresh_vault: Path, tmp_path: Path, monkeypatch) -> None:
    """A full disk while appending: exit 2 with one line naming the log, nothing printed, the vault unchanged."""
    import errno

    from vaulteval.pipeline import querylog

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(querylog.os, "write", full)
    before = snapshot(fresh_vault)
    code, out, err = _retrieve(fresh_vault, QUESTIONS[0], "--log", tmp_path / "questions.jsonl")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--log" in err and "No space left on device" in err and "internal error" not in err
    assert snapshot(fresh_vault) == before


def test_a_query_that_is_not_utf8_is_logged_escaped(fresh_vault: Path, tmp_path: Path) -> None:
    """``retrieve --log`` of ``$'callouts \\xff'``: Python reads the byte as a surrogate escape."""
    log = tmp_path / "questions.jsonl"
    code, _out, err = _retrieve(fresh_vault, "callouts \udcff and \ud800", "--log", log)
    assert code == 0, err
    (line,) = log.read_bytes().decode("utf-8").splitlines()
    assert json.loads(line)["query"] == "callouts \\xff and \\ud800"
    assert run_main("queryset", "from-log", log, "--vault", fresh_vault, "--out", tmp_path / "pool.yaml")[0] == 0


def test_a_fifo_log_is_refused_without_blocking(fresh_vault: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    code, _, err = run_main("queryset", "from-log", fifo, "--vault", fresh_vault, "--out", tmp_path / "pool.yaml")
    assert code == 2 and "not a regular file" in err and len(err.strip().splitlines()) == 1, err


def test_a_logged_path_relative_to_the_notes_folder_is_that_note(fresh_vault: Path, tmp_path: Path) -> None:
    log = tmp_path / "questions.jsonl"
    record = {"time": "2026-12-07T00:00:00Z", "vault": str(fresh_vault.resolve()), "query": "descaling",
              "strategy": "bm25-only", "paths": ["howto/Descaling.md", "wiki/hot.md", "../outside.md"]}
    log.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, out, err = run_main("queryset", "from-log", log, "--out", tmp_path / "pool.yaml")
    assert code == 0, err
    pool = yaml.safe_load((tmp_path / "pool.yaml").read_text(encoding="utf-8"))
    assert [p["page"] for p in pool["pairs"]] == ["wiki/howto/Descaling.md", "wiki/hot.md"]
    assert all(p["snippet"] for p in pool["pairs"])


# -- judged logged questions follow the written questions' rules (docs/querysets.md, "Real questions")

ESPRESSO, GRINDER, BIKE = "wiki/coffee/Espresso machine.md", "wiki/coffee/Grinder.md", "wiki/cycling/Bike fit.md"


def _log_of(vault: Path, tmp_path: Path, asked: list[tuple[str, list[str]]]) -> Path:
    log = tmp_path / "log.jsonl"
    lines = [json.dumps({"query": q, "vault": str(vault.resolve()), "strategy": "bm25", "paths": p}) for q, p in asked]
    log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return log


def _pool(vault: Path, tmp_path: Path, asked: list[tuple[str, list[str]]]) -> tuple[Path, dict]:
    pool_path = tmp_path / "pool.yaml"
    code, _, err = run_main("queryset", "from-log", _log_of(vault, tmp_path, asked), "--out", pool_path)
    assert code == 0, err
    return tmp_path / "pool-queries.yaml", yaml.safe_load(pool_path.read_text(encoding="utf-8"))


def test_judged_logged_questions_carry_the_written_records_and_count_as_real(fresh_vault: Path,
                                                                             tmp_path: Path) -> None:
    from vaulteval.querysets.fromlog import query_id
    from vaulteval.querysets.judging import save_labels
    from vaulteval.querysets.queryset import open_queryset
    from vaulteval.workbench.evidence import is_generated, writer_of

    asked = [("how do I clean scale out of the boiler", [ESPRESSO, GRINDER]),
             ("how do I use the espresso machine", [ESPRESSO]),  # repeats the title
             ("how fine should beans be ground", [GRINDER]),
             ("saddle height", [BIKE]),
             ("what is the capital of peru", [BIKE]),  # judged, and nothing answers it
             ("never judged here", [GRINDER])]
    qs_path, pool = _pool(fresh_vault, tmp_path, asked)
    assert yaml.safe_load(qs_path.read_text())["languages"] == {"en": 45, "ja": 3, "zh": 3}
    ids = [query_id(q) for q, _ in asked]
    labels = {(ids[0], ESPRESSO): 2, (ids[0], GRINDER): 1, (ids[1], ESPRESSO): 2, (ids[2], GRINDER): 2,
              (ids[3], BIKE): 1, (ids[4], BIKE): 0}
    save_labels(qs_path, pool, labels, judge="ana", out=tmp_path / "judged.yaml")
    _, judged = open_queryset(tmp_path / "judged.yaml")
    by_id = {q.query_id: q for q in judged.queries}
    hashes = {p: sha256_of(fresh_vault / p) for p in (ESPRESSO, GRINDER, BIKE)}
    for i, note in ((0, ESPRESSO), (1, ESPRESSO), (2, GRINDER), (3, BIKE)):
        q = by_id[ids[i]]
        assert q.kind == "logged" and q.fields["writer"] == "real" and q.fields["note_hash"] == hashes[note]
        assert set(q.fields["overlap"]) == {"title", "text"} and q.fields["overlap_band"] in ("low", "mid", "high")
        assert writer_of(q) == "real" and not is_generated(q)
    assert by_id[ids[1]].fields["flags"] == ["repeats_title"] and by_id[ids[1]].fields["overlap"]["title"] > 0
    assert by_id[ids[0]].fields["flags"] == [] and by_id[ids[0]].fields["overlap"]["title"] == 0
    # the split is the note's: both questions judged against the espresso machine share one
    assert by_id[ids[0]].split == by_id[ids[1]].split
    assert {q.split for q in judged.queries if q.kind} <= {"tune", "test"}
    assert by_id[ids[4]].kind == "logged" and by_id[ids[4]].is_negative and "note_hash" not in by_id[ids[4]].fields
    assert by_id[ids[5]].kind == "" and writer_of(by_id[ids[5]]) == "real"  # unjudged: left as logged


def sha256_of(path: Path) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("question, message", [
    ("how do I " + "descale the espresso machine and " * 10, "longer than 300 characters"),
    ("Wie entkalke ich die Espressomaschine richtig, ohne den Kessel zu beschädigen?", "language the vault lacks"),
])
def test_from_log_refuses_a_question_the_written_checks_refuse(fresh_vault: Path, tmp_path: Path, question: str,
                                                               message: str) -> None:
    log = _log_of(fresh_vault, tmp_path, [("saddle height", [BIKE]), (question, [ESPRESSO])])
    code, out, err = run_main("queryset", "from-log", log, "--out", tmp_path / "pool.yaml")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "pool.yaml").exists() and not (tmp_path / "pool-queries.yaml").exists()


def test_saving_judgments_refuses_what_the_written_checks_refuse(fresh_vault: Path, tmp_path: Path) -> None:
    from vaulteval.errors import UsageError
    from vaulteval.querysets.fromlog import query_id
    from vaulteval.querysets.judging import save_labels

    qs_path, pool = _pool(fresh_vault, tmp_path, [("saddle height", [BIKE])])
    label = {(query_id("saddle height"), BIKE): 2}
    data = yaml.safe_load(qs_path.read_text())
    data["queries"][0]["query"] = "saddle height " * 30  # edited past the length limit after from-log
    qs_path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(UsageError, match="longer than 300 characters"):
        save_labels(qs_path, pool, label, judge="ana", out=tmp_path / "judged.yaml")
    data["queries"][0]["query"] = "saddle height"
    del data["languages"]
    qs_path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(UsageError, match="no languages"):
        save_labels(qs_path, pool, label, judge="ana", out=tmp_path / "judged.yaml")
    assert not (tmp_path / "judged.yaml").exists()


def test_a_logged_question_with_another_writer_is_a_problem(tmp_path: Path) -> None:
    from vaulteval.querysets.problems import QuerySetInvalid
    from vaulteval.querysets.queryset import load_queryset

    (tmp_path / "v" / ".obsidian").mkdir(parents=True)
    (tmp_path / "v" / "x.md").write_text("# Bike fit\n\nSet the saddle height first.\n", encoding="utf-8")
    path = tmp_path / "q.yaml"
    path.write_text("vault: v\nqueries:\n- {id: a, query: saddle height, relevant: {x.md: 2}, kind: logged, writer: person}\n",
                    encoding="utf-8")
    with pytest.raises(QuerySetInvalid, match="writer of a logged question must be real"):
        load_queryset(path)
    path.write_text(path.read_text().replace("person", "real"), encoding="utf-8")
    assert load_queryset(path).queries[0].fields["writer"] == "real"


def test_a_keyword_search_in_the_vaults_script_is_not_refused_but_another_script_is(fresh_vault: Path,
                                                                                     tmp_path: Path) -> None:
    log = _log_of(fresh_vault, tmp_path, [("grinder", [GRINDER]), ("descale", [ESPRESSO])])
    code, _, err = run_main("queryset", "from-log", log, "--out", tmp_path / "pool.yaml")
    assert code == 0, err  # one or two words are too few to tell English from a neighbour in its script
    log = _log_of(fresh_vault, tmp_path, [("grinder", [GRINDER]), ("кофемолка", [GRINDER])])
    code, _, err = run_main("queryset", "from-log", log, "--out", tmp_path / "pool2.yaml")
    assert code == 2 and "language the vault lacks (" in err and len(err.strip().splitlines()) == 1, err
