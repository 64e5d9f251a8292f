"""The server applies the rules the CLI applies when it opens a vault, on every call (issue 42, item 2).

A server opens its vault once; the files opening reads can change while it
runs. Each test opens a server on a provisioned vault, changes one such file,
and asks the server through its tool dispatch (``vaulteval.server.app.call``,
what both transports run) and the CLI the same question: a vault the CLI
refuses is refused by every tool with the CLI's line and exit code, a vault the
CLI opens differently (a new exclusion, another notes folder) is served as the
CLI serves it, and the calls change nothing in the vault.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline_fixtures import DESCALING_NOTE, run_main
from vaulteval import Vault
from vaulteval.server.app import call
from vaulteval.server.warm import Served, WarmVault

pytest.importorskip("mcp")

QUERY = "descale the espresso machine"
APP_JSON = ".obsidian/app.json"
RECORD = ".vault-meta/vaulteval/notes-folder.json"


@pytest.fixture
def vault(provisioned_sample: Path, tmp_path: Path) -> Path:
    """A copy of the provisioned sample vault (wiki/ notes, no .obsidian/ yet) that a test may change."""
    root = tmp_path / "vault"
    shutil.copytree(provisioned_sample, root, symlinks=True)
    return root


def serve(root: Path, **selection) -> WarmVault:
    return WarmVault(Vault(root, **selection), Served())


def tool(warm: WarmVault, name: str, **arguments):
    return call(warm, name, arguments)


def pages(warm: WarmVault, query: str = QUERY) -> list[str]:
    result = tool(warm, "search", query=query, limit=10)
    assert result.isError is False, result.content[0].text
    return [c["page_path"] for c in result.structuredContent["candidates"]]


def cli(*args) -> tuple[int, str, str]:
    return run_main(*args)


def snapshot(root: Path) -> dict:
    """Every entry under ``root``: a file by its content and mtime, a FIFO by its kind (reading it would block)."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = os.lstat(path)
        rel = str(path.relative_to(root))
        if stat.S_ISREG(st.st_mode):
            out[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns)
        else:
            out[rel] = (stat.S_IFMT(st.st_mode), os.readlink(path) if path.is_symlink() else None)
    return out


def settings(root: Path, raw: bytes | str) -> None:
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / APP_JSON).write_bytes(raw.encode() if isinstance(raw, str) else raw)


def _fifo(root: Path) -> None:
    (root / ".obsidian").mkdir(exist_ok=True)
    os.mkfifo(root / APP_JSON)


def _dangling(root: Path) -> None:
    (root / ".obsidian").mkdir(exist_ok=True)
    os.symlink(root / "nowhere.json", root / APP_JSON)


def _notes_dir(value: object) -> Callable[[Path], None]:
    return lambda root: (root / ".vaulteval.json").write_text(json.dumps({"notes_dir": value}), encoding="utf-8")


def _record(raw: str) -> Callable[[Path], None]:
    return lambda root: (root / RECORD).write_text(raw, encoding="utf-8")


def _no_notes_folder(root: Path) -> None:
    (root / "wiki").rename(root / "notes")


def _vault_gone(root: Path) -> None:
    root.rename(root.with_name("moved"))


# Every way the CLI refuses to open a vault whose files changed after the server opened it.
REFUSED: dict[str, Callable[[Path], None]] = {
    "app.json not JSON": lambda root: settings(root, '{"userIgnoreFilters": ["wiki/howto/"], '),
    "app.json not UTF-8": lambda root: settings(root, b'{"userIgnoreFilters": ["wiki/\xff"]}'),
    "app.json not an object": lambda root: settings(root, '["wiki/howto/"]'),
    "app.json over 1 MiB": lambda root: settings(root, '{"pad": "' + "x" * (1 << 20) + '"}'),
    "filters not a list": lambda root: settings(root, '{"userIgnoreFilters": "wiki/howto/"}'),
    "filter not text": lambda root: settings(root, '{"userIgnoreFilters": ["wiki/howto/", 7]}'),
    "filter too long": lambda root: settings(root, '{"userIgnoreFilters": ["' + "a" * 501 + '"]}'),
    "filter not an expression": lambda root: settings(root, '{"userIgnoreFilters": ["/[unclosed/"]}'),
    "filter too slow": lambda root: settings(root, '{"userIgnoreFilters": ["/(x+x+)+y/"]}'),
    "app.json a FIFO": _fifo,
    "app.json a dangling symlink": _dangling,
    ".vaulteval.json not JSON": lambda root: (root / ".vaulteval.json").write_text("{", encoding="utf-8"),
    ".vaulteval.json not an object": lambda root: (root / ".vaulteval.json").write_text("[]", encoding="utf-8"),
    "notes_dir missing": _notes_dir("nowhere"),
    "notes_dir hidden": _notes_dir(".hidden"),
    "notes_dir outside": _notes_dir("../elsewhere"),
    "notes_dir not text": _notes_dir(7),
    "record malformed": _record("{"),
    "record of another schema": _record('{"schema": "x", "notes_dir": "wiki"}'),
    "record names a missing folder": _record('{"schema": "vaulteval.notes-folder.v1", "notes_dir": "gone"}'),
    "no notes folder": _no_notes_folder,
    "vault folder gone": _vault_gone,
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_vault_the_cli_refuses_now_is_refused_by_every_tool_with_its_line(vault: Path, case: str) -> None:
    warm = serve(vault)
    assert DESCALING_NOTE in pages(warm)
    REFUSED[case](vault)
    root = vault if vault.exists() else vault.with_name("moved")
    before = snapshot(root)
    code, out, err = cli("retrieve", "--vault", vault, QUERY, "--no-rerank")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    message = lines[0].removeprefix("vaulteval: error: ")
    for name, arguments in (("search", {"query": QUERY}), ("read", {"page": "[[Descaling]]"}),
                            ("read_many", {"pages": [DESCALING_NOTE]}), ("status", {})):
        for _ in range(2):  # the refusal holds, and is not a one-off
            result = call(warm, name, arguments)
            assert result.isError is True, (name, result.content)
            assert result.structuredContent == {"error": message, "exit_code": 2}
            assert result.content[0].text == message and "\n" not in message
    assert snapshot(root) == before


def test_settings_fixed_again_are_served_again(vault: Path) -> None:
    warm = serve(vault)
    settings(vault, "{")
    assert tool(warm, "search", query=QUERY).isError is True
    settings(vault, '{"userIgnoreFilters": []}')
    assert DESCALING_NOTE in pages(warm)
    assert tool(warm, "read", page="[[Descaling]]").isError is False


@pytest.mark.parametrize("entry", ["wiki/howto/", "/Descal/"])
def test_an_exclusion_added_after_start_holds_from_the_next_call(vault: Path, entry: str) -> None:
    warm = serve(vault)
    assert DESCALING_NOTE in pages(warm)
    linked = [b["page_path"] for b in tool(warm, "read", page="[[Espresso machine]]").structuredContent["backlinks"]]
    assert DESCALING_NOTE in linked
    settings(vault, json.dumps({"userIgnoreFilters": [entry]}))
    before = snapshot(vault)
    served = pages(warm)
    cli_out = json.loads(cli("retrieve", "--vault", vault, QUERY, "--no-rerank", "--top", "10")[1])
    assert DESCALING_NOTE not in served and served == [c["page_path"] for c in cli_out["candidates"]]
    for page in ("[[Descaling]]", DESCALING_NOTE):
        code, _, err = cli("read", "--vault", vault, page)
        result = tool(warm, "read", page=page)
        assert result.isError is True and code == 3
        assert result.structuredContent == {"error": err.strip().removeprefix("vaulteval: error: "), "exit_code": 3}
    many = tool(warm, "read_many", pages=[DESCALING_NOTE, "[[Espresso machine]]"]).structuredContent["notes"]
    assert many[0]["exit_code"] == 3 and many[1]["page_path"] == "wiki/coffee/Espresso machine.md"
    assert DESCALING_NOTE not in [b["page_path"] for b in many[1]["backlinks"]]  # an excluded note links nowhere
    status = tool(warm, "status").structuredContent
    doctor = json.loads(cli("doctor", "--vault", vault, "--json")[1])
    assert status["state"] == doctor["state"] != "verified"
    assert status["doctor"]["exclusions"] == doctor["exclusions"]
    assert status["doctor"]["exclusions"]["configured"] == [entry]
    assert snapshot(vault) == before


def test_ignore_obsidian_settings_serves_on_as_the_cli_does(vault: Path) -> None:
    warm = serve(vault, ignore_obsidian_settings=True)
    settings(vault, "{")
    served = pages(warm)
    cli_out = json.loads(cli("retrieve", "--vault", vault, QUERY, "--no-rerank", "--top", "10",
                             "--ignore-obsidian-settings")[1])
    assert DESCALING_NOTE in served and served == [c["page_path"] for c in cli_out["candidates"]]
    assert tool(warm, "status").structuredContent["doctor"]["exclusions"]["settings_ignored"] is True


def test_another_notes_folder_is_served_as_the_cli_serves_it(vault: Path) -> None:
    warm = serve(vault)
    assert DESCALING_NOTE in pages(warm)
    _notes_dir("wiki/coffee")(vault)
    served = tool(warm, "search", query=QUERY, limit=10).structuredContent
    cli_out = json.loads(cli("retrieve", "--vault", vault, QUERY, "--no-rerank", "--top", "10")[1])
    assert served == cli_out
    read = tool(warm, "read", page=DESCALING_NOTE)
    code, _, err = cli("read", "--vault", vault, DESCALING_NOTE)
    assert read.isError is True and read.structuredContent["exit_code"] == code != 0
    assert read.structuredContent["error"] == err.strip().removeprefix("vaulteval: error: ")
    assert tool(warm, "status").structuredContent["doctor"]["pages_in_vault"] == \
        json.loads(cli("doctor", "--vault", vault, "--json")[1])["pages_in_vault"]


def test_a_notes_dir_flag_that_disagrees_with_a_new_record_is_refused(vault: Path) -> None:
    warm = serve(vault, notes_dir="wiki")
    assert DESCALING_NOTE in pages(warm)
    _record('{"schema": "vaulteval.notes-folder.v1", "notes_dir": "wiki/coffee"}')(vault)
    code, _, err = cli("retrieve", "--vault", vault, "--notes-dir", "wiki", QUERY, "--no-rerank")
    result = tool(warm, "search", query=QUERY)
    assert code == 2 and result.isError is True
    assert result.structuredContent == {"error": err.strip().removeprefix("vaulteval: error: "), "exit_code": 2}


def test_an_unchanged_vault_is_not_opened_again(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-call check is a stat of each file opening reads; the files are read again only on a change."""
    settings(vault, '{"userIgnoreFilters": ["wiki/travel/"]}')
    past = os.stat(vault / APP_JSON).st_mtime - 60
    for rel in (APP_JSON, ".obsidian", ".vaulteval.json", "wiki", "."):
        os.utime(vault / rel, (past, past))
    warm = serve(vault)
    opened = []
    real = Vault.reopen
    monkeypatch.setattr(Vault, "reopen", lambda self: opened.append(1) or real(self))
    for _ in range(3):
        pages(warm)
    assert opened == []
    settings(vault, '{"userIgnoreFilters": ["wiki/howto/"]}')
    assert DESCALING_NOTE not in pages(warm) and opened


def test_settings_behind_a_symlink_are_followed(vault: Path, tmp_path: Path) -> None:
    """Obsidian's settings may be a link (dotfiles kept elsewhere): an edit of the file it leads to counts."""
    target = tmp_path / "dotfiles" / "app.json"
    target.parent.mkdir()
    target.write_text('{"userIgnoreFilters": []}', encoding="utf-8")
    (vault / ".obsidian").mkdir()
    os.symlink(target, vault / APP_JSON)
    warm = serve(vault)
    assert DESCALING_NOTE in pages(warm)
    target.write_text('{"userIgnoreFilters": ["wiki/howto/"]}', encoding="utf-8")
    assert DESCALING_NOTE not in pages(warm)
    target.write_text('{"userIgnoreFilters": "wiki/howto/"}', encoding="utf-8")
    result = tool(warm, "search", query=QUERY)
    assert result.isError is True and result.structuredContent["exit_code"] == 2
