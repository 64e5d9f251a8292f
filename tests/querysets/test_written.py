"""queryset worksheet and add-written: sampling (deterministic, stratified, skips), each check, each refusal.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_written.py -q``
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.querysets.queryset import load_queryset
from vaulteval.querysets.written.add import WorksheetInvalid, add_written
from vaulteval.querysets.written.worksheet import make_worksheet
from vaulteval.vault.vault import Vault

from evalkit import snapshot

PROSE_EN = ("The kettle needs descaling every month when the water is hard. Citric acid works well, and vinegar "
            "leaves a smell that lasts for days. Rinse twice before the next brew. ")
PROSE_DE = ("Im Frühling wird die Monstera in einen größeren Topf umgesetzt. Die Erde sollte locker sein, mit "
            "Rinde gemischt, damit die Wurzeln atmen können. Danach eine Woche nicht düngen. ")


def _plain_vault(root: Path, pages: dict[str, str], ignore: list[str] | None = None) -> Vault:
    for rel, text in pages.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    (root / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": ignore or []}), encoding="utf-8")
    return Vault(root)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    pages = {f"kitchen/Kettle {i}.md": f"# Kettle {i}\n\n{PROSE_EN * (2 + i % 3)}" for i in range(20)}
    pages.update({f"garden/Pflanze {i}.md": f"# Pflanze {i}\n\n{PROSE_DE * 2}" for i in range(3)})
    pages.update({
        "kitchen/Stub.md": "# Stub\n\nTo do.\n",
        "Templates/Daily.md": f"# {{{{date}}}}\n\n{PROSE_EN * 2}",
        "kitchen/Meeting.md": f"# Meeting\n\n<% tp.date.now() %>\n\n{PROSE_EN * 2}",
        "Archive/Old kettle.md": f"# Old kettle\n\n{PROSE_EN * 2}",
    })
    return _plain_vault(tmp_path / "v", pages, ignore=["Archive/"])


def _worksheet(vault: Vault, tmp_path: Path, n: int = 8, seed: int = 3, name: str = "ws.yaml") -> dict:
    make_worksheet(vault, tmp_path / name, n=n, seed=seed)
    return yaml.safe_load((tmp_path / name).read_text(encoding="utf-8"))


def test_worksheet_is_deterministic_for_a_seed(vault: Vault, tmp_path: Path) -> None:
    make_worksheet(vault, tmp_path / "a.yaml", n=8, seed=3)
    make_worksheet(vault, tmp_path / "b.yaml", n=8, seed=3)
    make_worksheet(vault, tmp_path / "c.yaml", n=8, seed=4)
    a = (tmp_path / "a.yaml").read_bytes()
    assert a == (tmp_path / "b.yaml").read_bytes()
    picked = lambda name: [n["path"] for n in yaml.safe_load((tmp_path / name).read_text("utf-8"))["notes"]]  # noqa: E731
    assert picked("a.yaml") != picked("c.yaml")


def test_worksheet_skips_stubs_templates_and_excluded_paths(vault: Vault, tmp_path: Path) -> None:
    paths = [n["path"] for n in _worksheet(vault, tmp_path, n=100)["notes"]]
    assert len(paths) == 23  # 20 kettles and 3 plants: everything else is a stub, a template or excluded
    assert not {"kitchen/Stub.md", "Templates/Daily.md", "kitchen/Meeting.md", "Archive/Old kettle.md"} & set(paths)


def test_worksheet_spreads_the_sample_over_folders_languages_and_lengths(vault: Vault, tmp_path: Path) -> None:
    notes = _worksheet(vault, tmp_path, n=8)["notes"]
    assert Counter(n["language"] for n in notes)["de"] >= 1 and Counter(n["language"] for n in notes)["en"] >= 5
    assert {n["path"].split("/")[0] for n in notes} == {"kitchen", "garden"}
    lengths = {len(n["text"]) for n in notes if n["path"].startswith("kitchen/")}
    assert len(lengths) >= 2  # kettles of one, two and three paragraphs' length are all drawn


def test_worksheet_states_the_task_and_records_each_note(vault: Vault, tmp_path: Path) -> None:
    ws = _worksheet(vault, tmp_path)
    assert "before you run any search" in ws["task"] and "unanswerable" in ws["task"]
    assert ws["languages"] == {"en": 22, "de": 3}  # templates are written in the vault's language too; excluded notes are not counted
    note = ws["notes"][0]
    raw = (vault.root / note["path"]).read_bytes()
    import hashlib

    assert note["note_hash"] == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert note["questions"] == [] and note["split"] in ("tune", "test") and note["title"] in note["text"]
    assert Counter(n["split"] for n in ws["notes"])["tune"] == 2  # about 30% of 8 notes


def test_worksheet_cuts_long_text_to_the_budget(tmp_path: Path) -> None:
    v = _plain_vault(tmp_path / "v", {"Long.md": "# Long\n\n" + PROSE_EN * 40})
    text = _worksheet(v, tmp_path, n=1)["notes"][0]["text"]
    assert len(text) <= 1502 and text.endswith("…")


def _filled(vault: Vault, tmp_path: Path, questions: dict[int, list[str]], unanswerable=(), writer="person",
            name: str = "filled.yaml") -> Path:
    ws = _worksheet(vault, tmp_path)
    for i, qs in questions.items():
        ws["notes"][i]["questions"] = qs
    ws["unanswerable"], ws["writer"] = list(unanswerable), writer
    out = tmp_path / name
    out.write_text(yaml.safe_dump(ws, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return out


def _question_for(note: dict) -> str:
    return "wie oft muss man umtopfen?" if note["language"] == "de" else "how often should I clean the boiler?"


def test_add_written_records_kind_writer_hash_split_overlap_and_keeps_unanswerable(vault: Vault, tmp_path: Path) -> None:
    notes = _worksheet(vault, tmp_path)["notes"]
    ws = _filled(vault, tmp_path, {0: [_question_for(notes[0])], 1: [_question_for(notes[1])]},
                 unanswerable=["how do I renew my passport?"])
    summary = add_written(ws, tmp_path / "set.yaml")
    assert summary["questions"] == 2 and summary["unanswerable"] == 1
    qs = load_queryset(tmp_path / "set.yaml")  # a valid query set, its vault found from the file
    first = qs.queries[0]
    assert first.relevant == {notes[0]["path"]: 2}
    f = first.fields
    assert f["kind"] == "written" and f["writer"] == "person" and f["note_hash"] == notes[0]["note_hash"]
    assert f["split"] == notes[0]["split"]
    assert 0 <= f["overlap"]["title"] <= 1 and 0 <= f["overlap"]["text"] <= 1 and f["flags"] == []
    negative = qs.queries[2]
    assert negative.is_negative and negative.fields["kind"] == "written"
    assert len(qs.negative) == 1 and len(qs.positive) == 2


def test_sets_from_worksheets_of_two_seeds_merge_without_an_id_clash(vault: Vault, tmp_path: Path) -> None:
    """Writing more means a second worksheet with another seed; its set must merge with the first."""
    sets = []
    for seed in (3, 4):
        ws = _worksheet(vault, tmp_path, seed=seed, name=f"ws{seed}.yaml")
        ws["notes"][0]["questions"] = [_question_for(ws["notes"][0])]
        ws["unanswerable"], ws["writer"] = ["how do I renew my passport?"], "agent"
        filled = tmp_path / f"filled{seed}.yaml"
        filled.write_text(yaml.safe_dump(ws, allow_unicode=True, sort_keys=False), encoding="utf-8")
        add_written(filled, tmp_path / f"set{seed}.yaml", vault=vault)
        sets.append(tmp_path / f"set{seed}.yaml")
    assert [q.query_id for q in load_queryset(sets[0]).queries] == ["w3-001", "w3-002"]
    assert main(["queryset", "merge", str(sets[0]), str(sets[1]), "--out", str(tmp_path / "all.yaml")]) == 0
    assert len(load_queryset(tmp_path / "all.yaml").queries) == 4


def test_add_written_flags_a_question_that_repeats_the_title_and_keeps_it(vault: Vault, tmp_path: Path, capsys) -> None:
    notes = _worksheet(vault, tmp_path)["notes"]
    en = next(i for i, n in enumerate(notes) if n["language"] == "en")
    title = notes[en]["title"]
    ws = _filled(vault, tmp_path, {en: [f"what does {title} say?", "how often should I clean the boiler?"]})
    assert main(["queryset", "add-written", str(ws), "--out", str(tmp_path / "set.yaml")]) == 0
    assert f"(repeats_title: {title!r})" in capsys.readouterr().out
    queries = yaml.safe_load((tmp_path / "set.yaml").read_text("utf-8"))["queries"]
    assert [q["flags"] for q in queries] == [["repeats_title"], []]
    assert queries[0]["overlap"]["title"] > 0 and queries[1]["overlap"]["title"] == 0


def _refused(ws: Path, tmp_path: Path, vault: Vault, capsys, *extra: str) -> str:
    before = snapshot(vault.root)
    rc = main(["queryset", "add-written", str(ws), "--out", str(tmp_path / "set.yaml"), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and not (tmp_path / "set.yaml").exists() and snapshot(vault.root) == before
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


def test_worksheet_edited_into_bad_yaml_is_refused(vault: Vault, tmp_path: Path, capsys) -> None:
    ws = _filled(vault, tmp_path, {0: ["how often should I clean the boiler?"]})
    ws.write_text(ws.read_text("utf-8") + "  questions: [unclosed\n", encoding="utf-8")
    assert "at line" in (err := _refused(ws, tmp_path, vault, capsys)) and "not valid YAML" in err


def test_question_in_a_language_the_vault_lacks_is_refused(vault: Vault, tmp_path: Path, capsys) -> None:
    ws = _filled(vault, tmp_path, {0: ["Как часто нужно чистить чайник от накипи?"]})
    assert "language the vault lacks (ru" in _refused(ws, tmp_path, vault, capsys)


@pytest.mark.parametrize("question, says", [("   ", "is empty"), ("why " * 100, "longer than 300 characters")])
def test_empty_or_overlong_question_is_refused(vault: Vault, tmp_path: Path, capsys, question: str, says: str) -> None:
    ws = _filled(vault, tmp_path, {0: [question]})
    assert says in _refused(ws, tmp_path, vault, capsys)


def test_missing_writer_is_refused_unless_given(vault: Vault, tmp_path: Path, capsys) -> None:
    notes = _worksheet(vault, tmp_path)["notes"]
    ws = _filled(vault, tmp_path, {0: [_question_for(notes[0])]}, writer="")
    assert "writer must be agent, person or model:<name>" in _refused(ws, tmp_path, vault, capsys)
    assert main(["queryset", "add-written", str(ws), "--out", str(tmp_path / "set.yaml"), "--writer",
                 "model:qwen2.5-7b"]) == 0
    assert yaml.safe_load((tmp_path / "set.yaml").read_text("utf-8"))["queries"][0]["writer"] == "model:qwen2.5-7b"


def test_missing_and_changed_notes_are_named_note_by_note(vault: Vault, tmp_path: Path, capsys) -> None:
    notes = _worksheet(vault, tmp_path)["notes"]
    ws = _filled(vault, tmp_path, {0: [_question_for(notes[0])]})
    (vault.root / notes[1]["path"]).write_text("# Changed\n\n" + PROSE_EN, encoding="utf-8")
    (vault.root / notes[2]["path"]).write_text("# Changed too\n\n" + PROSE_EN, encoding="utf-8")
    err = _refused(ws, tmp_path, vault, capsys)
    assert "2 note(s) changed since the worksheet was written" in err
    assert notes[1]["path"] in err and notes[2]["path"] in err
    (vault.root / notes[3]["path"]).unlink()
    err = _refused(ws, tmp_path, vault, capsys)
    assert "1 note(s) are missing" in err and notes[3]["path"] in err


def test_worksheet_without_questions_and_out_inside_the_vault_are_refused(vault: Vault, tmp_path: Path) -> None:
    ws = _filled(vault, tmp_path, {})
    with pytest.raises(WorksheetInvalid, match="holds no questions yet"):
        add_written(ws, tmp_path / "set.yaml")
    with pytest.raises(Exception, match="inside the vault"):
        make_worksheet(vault, vault.root / "ws.yaml", n=2)


@pytest.mark.parametrize("field, value, says", [
    ("writer", "robot", "writer must be agent, person or model:<name>"),
    ("note_hash", "md5:abc", "note_hash must be sha256:<64 hex digits>"),
    ("flags", "repeats_title", "flags must be a list of words"),
    ("overlap", {"title": 0.2}, "overlap must be a number from 0 to 1 or {title: X, text: Y}"),
])
def test_a_query_set_refuses_malformed_written_fields(vault: Vault, tmp_path: Path, field: str, value, says: str) -> None:
    from vaulteval.querysets.problems import QuerySetInvalid

    entry = {"id": "w1", "query": "how often should I clean the boiler?", "relevant": {"kitchen/Kettle 1.md": 2},
             "kind": "written",
             field: value}
    (tmp_path / "set.yaml").write_text(yaml.safe_dump({"queries": [entry]}), encoding="utf-8")
    with pytest.raises(QuerySetInvalid, match=re.escape(says)):
        load_queryset(tmp_path / "set.yaml", vault)


def test_a_worksheet_that_is_an_alias_bomb_or_a_fifo_is_one_line_and_exit_2(vault: Vault, tmp_path: Path,
                                                                             capsys) -> None:
    import os

    bomb = tmp_path / "bomb.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb.write_text("\n".join(lines) + "\nnotes: *a8\n", encoding="utf-8")
    _refused(bomb, tmp_path, vault, capsys)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert "cannot read worksheet" in _refused(fifo, tmp_path, vault, capsys)
