"""Hostile YAML in notes and in the files the workbench reads: a bounded refusal in one line, never a hang.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_hostile_yaml.py -q``

Each case of issue 42's first item: a front matter whose ``tags`` is an alias bomb
(498 bytes), 900 nested ``[`` or a chain of 3,000 anchors. The subprocess timeout
only stops a hang; nothing is timed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from pipeline_fixtures import make_vault, run_cli

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
def bomb_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_vault(tmp_path_factory.mktemp("yaml") / "vault", provision=False)
    folder = root / "wiki" / "hostile"
    folder.mkdir()
    for name, front in HOSTILE_FRONT_MATTER.items():
        (folder / f"{name}.md").write_text(f"---\n{front}\n---\nquokka{name} lives in the body\n", encoding="utf-8")
    return root


def test_a_hostile_front_matter_costs_one_warning_and_the_note_is_indexed(bomb_vault: Path) -> None:
    root = bomb_vault
    before = outside_meta(root)
    proc = run_cli("provision", "--vault", root, "--no-embed", timeout=HANG)
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
