"""Hostile YAML in notes and in the files the workbench reads: a bounded refusal in one line, never a hang.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_hostile_yaml.py -q``

Each case of issue 42's first item: a front matter whose ``tags`` is an alias bomb
(498 bytes), 900 nested ``[`` or a chain of 3,000 anchors. The subprocess timeout
only stops a hang; nothing is timed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from pipeline_fixtures import make_vault, provisioned_sample, run_cli, run_main  # noqa: F401 - a fixture

HANG = 120  # seconds: a hang guard, not a measurement


def alias_bomb() -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines + ["tags: *a8"])


HOSTILE_FRONT_MATTER = {
    "bomb": alias_bomb(),
    "aliasbomb": alias_bomb().replace("tags:", "aliases:"),
    "brackets": "tags: " + "[" * 900 + "]" * 900,
    "chain": "a0: &a0 x\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 3000)) + "tags: *a2999",
}


def outside_meta(root: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".vault-meta"]
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                with open(full, "rb") as fh:
                    out[full] = (hashlib.sha256(fh.read()).hexdigest(), st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def provisioned_bombs(tmp_path_factory: pytest.TempPathFactory):
    """The sample vault with one note per hostile front matter, as ``provision`` left it: (root, the run, the
    files outside .vault-meta before it)."""
    root = make_vault(tmp_path_factory.mktemp("yaml") / "vault", provision=False)
    folder = root / "wiki" / "hostile"
    folder.mkdir()
    for name, front in HOSTILE_FRONT_MATTER.items():
        (folder / f"{name}.md").write_text(f"---\n{front}\n---\nquokka{name} lives in the body\n", encoding="utf-8")
    before = outside_meta(root)
    return root, run_cli("provision", "--vault", root, "--no-embed", timeout=HANG), before


@pytest.fixture(scope="module")
def bomb_vault(provisioned_bombs) -> Path:
    return provisioned_bombs[0]


def test_a_hostile_front_matter_costs_one_warning_and_the_note_is_indexed(provisioned_bombs) -> None:
    root, proc, before = provisioned_bombs
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    for name in HOSTILE_FRONT_MATTER:
        said = [line for line in proc.stderr.splitlines() if f"wiki/hostile/{name}.md: front matter ignored" in line]
        assert len(said) == 1, proc.stderr
    for name in HOSTILE_FRONT_MATTER:  # the body is indexed; the properties are not
        hits = run_cli("retrieve", "--vault", root, "--no-rerank", f"quokka{name}", timeout=HANG)
        assert hits.returncode == 0 and f"wiki/hostile/{name}.md" in hits.stdout, hits.stderr[-1000:]
    assert "wiki/howto/Descaling.md" in run_cli("retrieve", "--vault", root, "--no-rerank",
                                                 "descale the espresso machine", timeout=HANG).stdout
    assert outside_meta(root) == before


@pytest.mark.parametrize("note", ["wiki/hostile/bomb.md", "wiki/hostile/chain.md", "wiki/howto/Descaling.md"])
def test_read_answers_with_a_bomb_in_the_vault(bomb_vault: Path, note: str) -> None:
    proc = run_cli("read", "--vault", bomb_vault, note, timeout=HANG)
    assert proc.returncode == 0, proc.stderr[-1000:]
    assert "Traceback" not in proc.stderr
    if "hostile" in note:
        assert "quokka" in proc.stdout and "lol" not in proc.stdout


def test_doctor_answers_with_a_bomb_in_the_vault(bomb_vault: Path) -> None:
    proc = run_cli("doctor", "--vault", bomb_vault, timeout=HANG)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.returncode == 0, proc.stderr[-1000:]
    assert "retrieve: verified" in proc.stdout


# -- query sets, pools and worksheets: the same loader, one line, exit 2 ---------------------------

def bomb_lines() -> list[str]:
    return alias_bomb().splitlines()[:-1]  # the anchors, without the tags: line


QUERYSET_BOMBS = {
    "name": bomb_lines() + ["name: *a8", "queries:", "  - {id: q1, query: descale, relevant: {}}"],
    "tags": bomb_lines() + ["queries:", "  - {id: q1, query: descale, relevant: {}, tags: *a8}"],
    "grade": bomb_lines() + ["queries:", "  - {id: q1, query: descale, relevant: {wiki/howto/Descaling.md: *a8}}"],
    "judged": bomb_lines() + ["queries:", "  - {id: q1, query: descale, relevant: {}, judged: *a8}"],
    "nesting": ["queries:", "  - {id: q1, query: descale, relevant: {}, tags: " + "[" * 900 + "]" * 900 + "}"],
}


@pytest.mark.parametrize("where", sorted(QUERYSET_BOMBS))
def test_a_query_set_bomb_is_one_line_exit_2(provisioned_sample: Path, tmp_path: Path, where: str) -> None:
    qs = tmp_path / "bomb.yaml"
    qs.write_text("\n".join(QUERYSET_BOMBS[where]) + "\n", encoding="utf-8")
    for command in (["queryset", "check", "--vault", provisioned_sample, qs],
                    ["eval", "run", "--vault", provisioned_sample, "--queryset", qs, "--out", tmp_path / "runs"],
                    ["queryset", "merge", qs, qs, "--out", tmp_path / "merged.yaml"]):
        code, out, err = run_main(*command)
        assert code == 2, (command, err)
        lines = err.strip().splitlines()  # check adds its count of problems on a line of its own
        assert len(lines) <= (2 if "check" in command else 1) and "bomb.yaml:" in lines[0], err
        assert all(len(line) < 400 for line in lines) and "lol" not in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "merged.yaml").exists()


def test_a_pool_or_worksheet_bomb_is_one_line(tmp_path: Path) -> None:
    from vaulteval.errors import UsageError
    from vaulteval.notebooks.grader import read_grades
    from vaulteval.workbench.pooling import read_pool

    pool = tmp_path / "pool.yaml"
    pool.write_text("\n".join(bomb_lines() + ["strategies: [bm25]", "depth: 10", "pairs: *a8"]) + "\n",
                    encoding="utf-8")
    with pytest.raises(UsageError, match="aliases expand past") as caught:
        read_pool(pool)
    assert "\n" not in str(caught.value)
    with pytest.raises(UsageError, match="cannot resume from .*aliases expand past"):
        read_grades(pool, [{"query_id": "q1", "page": "wiki/a.md"}])


# -- special files and size: refused before a byte is parsed ------------------------------------------

@pytest.mark.parametrize("name", ["q.yaml", "q.jsonl"])
def test_a_fifo_query_set_is_refused_without_blocking(provisioned_sample: Path, tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    for command in (["queryset", "check", "--vault", provisioned_sample, fifo],
                    ["eval", "run", "--vault", provisioned_sample, "--queryset", fifo, "--out", tmp_path / "runs"],
                    ["queryset", "merge", fifo, fifo, "--out", tmp_path / "merged.yaml"]):
        if name.endswith(".jsonl") and "merge" in command:
            continue  # merge reads YAML sets only
        code, _out, err = run_main(*command)
        assert code == 2 and "not a regular file" in err.splitlines()[0], (command, err)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not (tmp_path / "runs").exists()


def test_a_fifo_pool_or_worksheet_is_refused(tmp_path: Path) -> None:
    from vaulteval.errors import UsageError
    from vaulteval.notebooks.grader import read_grades
    from vaulteval.workbench.pooling import read_pool

    fifo = tmp_path / "pool.yaml"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        read_pool(fifo)
    assert read_grades(fifo, []) == {}  # not a saved worksheet: nothing to resume, and the save replaces it


def test_an_oversized_query_set_is_one_line(provisioned_sample: Path, tmp_path: Path, monkeypatch) -> None:
    from vaulteval.querysets import problems

    monkeypatch.setattr(problems, "MAX_QUERYSET_BYTES", 4096)
    qs = tmp_path / "big.yaml"
    qs.write_text("queries:\n" + "".join(f"  - {{id: q{i}, query: descale, relevant: {{}}}}\n" for i in range(200)),
                  encoding="utf-8")
    code, _out, err = run_main("queryset", "check", "--vault", provisioned_sample, qs)
    assert code == 2 and "big.yaml:1: cannot read: larger than 4,096 bytes" in err, err


def test_the_mcp_read_answers_with_a_bomb_in_the_vault(bomb_vault: Path) -> None:
    from mcp_servers import StdioLines

    server = StdioLines(bomb_vault)
    try:
        for number, page in enumerate(["wiki/hostile/bomb.md", "wiki/howto/Descaling.md"], 10):
            server.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                                    "params": {"name": "read", "arguments": {"page": page}}}))
            answer = server.answer(HANG)  # fails instead of hanging
            assert answer["id"] == number and answer["result"]["isError"] is False, answer
            assert answer["result"]["structuredContent"]["frontmatter"] == {} or "howto" in page
    finally:
        server.close()
