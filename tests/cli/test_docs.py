"""The docs are part of the contract: README commands, command table, --help, CI entry point."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vaulteval.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(prefix + (name,))
                out.extend(_command_paths(sub, prefix + (name,)))
    return out


COMMANDS = _command_paths(build_parser())


def test_readme_opens_with_the_two_setup_commands():
    first_block = re.search(r"```(?:sh|bash)?\n(.*?)```", README, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert README.index("make demo") < README.index("## ")


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)
    assert os.access(REPO / ".ci" / "run", os.X_OK)


def test_make_test_runs_pytest_in_the_venv():
    dry = subprocess.run(["make", "-n", "test"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert ".venv/bin/python -m pytest" in dry


@pytest.mark.parametrize("path", [p for p in COMMANDS if len(p) == 1], ids=lambda p: " ".join(p))
def test_every_command_is_in_the_readme(path):
    assert f"vaulteval {path[0]}" in README, f"`vaulteval {path[0]}` is not documented in README.md"


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_every_command_has_help(path, capsys):
    from vaulteval.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main([*path, "--help"])
    assert exc.value.code == 0
    assert "usage: vaulteval" in capsys.readouterr().out


def test_make_demo_runs_end_to_end(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.run(["make", "demo"], cwd=REPO, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "== provisioned: 53 pages" in proc.stdout
    assert '"strategy": "bm25-only"' in proc.stdout


def test_every_command_group_registers_exactly_the_commands_main_routes_to_it() -> None:
    from importlib import import_module

    from vaulteval.cli.common import Parser, add_vault
    from vaulteval.cli.main import GROUPS

    for module, names in GROUPS.items():
        assert tuple(import_module(module).NAMES) == names, module
        sub = Parser(prog="vaulteval").add_subparsers(dest="command", parser_class=Parser)
        import_module(module).register(sub, add_vault)  # main builds one command's parser; the group has them all
        assert set(sub.choices) == set(names), f"{module} registers {set(sub.choices)}, main routes {names}"


def _readme_block(heading: str) -> list[list[str]]:
    """The commands of the first shell block under ``heading``, continuation lines joined, comments dropped."""
    import shlex

    section = README.split(heading, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_readme_loop_runs_as_written_on_a_copy_of_the_sample_vault(tmp_path):
    """Every command of "Your own vault: the whole loop", with ~/notes a copy of the sample vault."""
    commands = _readme_block("## Your own vault: the whole loop")
    assert [c[:2] for c in commands] == [[".venv/bin/vaulteval", w] for w in
                                         ("provision", "queryset", "queryset", "eval", "tune", "retrieve")]
    home = tmp_path / "home"
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    subprocess.run([sys.executable, "-m", "vaulteval", "sample", str(home / "notes")], check=True, env=env,
                   capture_output=True, timeout=120)
    outputs = []
    for command in commands:
        args = [os.path.expanduser(a).replace(os.path.expanduser("~"), str(home)) if a.startswith("~") else a
                for a in command[1:]]
        proc = subprocess.run([sys.executable, "-m", "vaulteval", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (command, proc.stderr[-2000:])
        outputs.append(proc.stdout)
    assert (home / "evals" / "mine.yaml").is_file() and (home / "evals" / "runs").is_dir()
    import json

    written = json.loads((home / "notes" / ".vaulteval.json").read_text(encoding="utf-8")).get("retrieve")
    verdict = json.loads(outputs[-2])["decision"]["verdict"]
    if verdict == "adopt":  # retrieve names what tune wrote
        assert json.loads(outputs[-1])["tuned"]["strategy"] == written["strategy"]
    else:  # nothing beat the default: nothing written, and retrieve says it ran the vault's default
        assert written is None and json.loads(outputs[-1])["pipeline"]["source"] == "default"


@pytest.mark.parametrize("doc", ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))])
def test_doc_links_stay_inside_the_repository_and_name_no_outside_data(doc):
    """A person who clones the repository has every file a doc links to, and no `../shared` data folder."""
    text = (REPO / doc).read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/shared" not in text
    prose = re.sub(r"`[^`\n]*`", "", text)  # Markdown written as an example in inline code is not a link
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path = ((REPO / doc).parent / target).resolve()
        assert path.is_relative_to(REPO) and path.exists(), f"{doc} links to {target}"
