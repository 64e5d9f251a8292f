"""The generated parts of docs/ are what the code says now, and `python -m vaulteval.docs` rewrites them."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from vaulteval.docs import clidoc
from vaulteval.docs.__main__ import main as docs_main
from vaulteval.docs.parts import PARTS, Part, rewrite, stale

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


@pytest.mark.parametrize("part", PARTS, ids=lambda p: f"{p.doc}:{p.end}")
def test_each_generated_part_is_what_its_function_writes_now(part: Part) -> None:
    text = (DOCS / part.doc).read_text(encoding="utf-8")
    assert part.current(text) is not None, f"docs/{part.doc} lost its marker lines {part.begin!r}, {part.end!r}"
    assert part.current(text) == part.render().strip(), \
        f"docs/{part.doc} is out of date with the code; run: python -m vaulteval.docs"


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("vaulteval",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def test_the_command_reference_has_every_command_and_every_option() -> None:
    from vaulteval.cli.main import build_parser

    reference = clidoc.command_reference()
    sections = {s.partition("`")[0]: s for s in reference.split("\n### `")[1:]}
    commands = list(_commands(build_parser()))
    assert len(commands) > 20 and set(sections) == {" ".join(path) for path, _ in commands}
    vault_options = {"--vault", "--notes-dir", "--ignore-obsidian-settings"}
    for path, parser in commands:
        section = sections[" ".join(path)]
        assert f"usage: {' '.join(path)}" in section
        for action in parser._actions:
            if action.help is argparse.SUPPRESS or isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
                continue
            names = [o for o in action.option_strings if o not in ("-h", "--help")] or [action.metavar or action.dest]
            for name in names:
                assert f"`{name}" in section or f" {name}" in section, (path, name)
            if action.option_strings and action.option_strings[-1] in vault_options:
                continue
            default = action.default
            if action.nargs != 0 and isinstance(default, (int, float, str)) and action.help \
                    and "default" not in action.help.lower():
                assert f"(default: `{default}`)" in section, (path, action.dest)


def test_a_new_flag_makes_the_cli_doc_out_of_date(monkeypatch, tmp_path) -> None:
    """What the test above guards: a flag added to a parser shows in the reference, and the doc goes stale."""
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    from vaulteval.cli.main import build_parser

    def with_new_flag():
        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices["retrieve"].add_argument("--lantern", type=int, default=3, help="a flag nobody has documented")
        return parser

    rewrite(docs)
    monkeypatch.setattr(clidoc, "build_parser", with_new_flag)
    assert "- `--lantern LANTERN` (default: `3`): a flag nobody has documented" in clidoc.command_reference()
    assert [line.partition(":")[0] for line in stale(docs)] == ["cli.md"]
    assert docs_main(["--check", str(docs)]) == 1
    assert rewrite(docs) == ["cli.md"] and "--lantern" in (docs / "cli.md").read_text(encoding="utf-8")


def test_the_terminal_width_does_not_change_the_reference(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = clidoc.command_reference()
    monkeypatch.setenv("COLUMNS", "240")
    assert clidoc.command_reference() == narrow
    assert max(len(line) for line in narrow.split("```text")[2].splitlines()) > 40  # usage lines are wider than 40


def test_rewrite_replaces_only_what_is_between_the_markers(tmp_path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    cli = docs / "cli.md"
    original = cli.read_text(encoding="utf-8")
    part = next(p for p in PARTS if p.doc == "cli.md")
    edited = original.replace(part.begin, "A line of prose written by hand.\n\n" + part.begin + "\nstale text\n")
    cli.write_text(edited, encoding="utf-8")
    assert stale(docs) and rewrite(docs) == ["cli.md"]
    assert cli.read_text(encoding="utf-8") == original.replace(part.begin, "A line of prose written by hand.\n\n"
                                                                + part.begin)
    assert stale(docs) == [] and rewrite(docs) == []
    assert docs_main(["--check", str(docs)]) == 0


def test_a_doc_without_its_markers_is_one_clear_error(tmp_path, capsys) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    part = next(p for p in PARTS if p.doc == "cli.md")
    (docs / "cli.md").write_text("# Command line\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in docs.iterdir()}
    assert docs_main([str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "docs/cli.md" in err and part.begin in err
    assert {p.name: p.read_bytes() for p in docs.iterdir()} == before  # nothing half-written


def test_the_folder_table_has_every_layer_lowest_first_importing_only_lower_ones() -> None:
    from vaulteval.docs import archdoc
    from vaulteval.docs.imports import LAYERS, PACKAGE

    rows = [line for line in archdoc.folder_table().splitlines()[2:]]
    shown = [row.split(" | ")[0].strip("| `").rstrip("/").removesuffix(".py") for row in rows]
    assert shown == LAYERS
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders <= set(LAYERS), "a folder of the package is in no layer"
    for layer, row in zip(LAYERS, rows):
        owns = row.split(" | ")[1]
        assert len(owns) > 20, f"{layer}: its docstring's first paragraph says what it owns"
        imported = [cell.strip("`").rstrip("/").removesuffix(".py") for cell in row.split(" | ")[2].rstrip(" |").split(", ")]
        assert all(LAYERS.index(i) < LAYERS.index(layer) for i in imported if i != "nothing in vaulteval"), row


def test_the_module_index_lists_every_module_once() -> None:
    from vaulteval.docs import archdoc
    from vaulteval.docs.imports import PACKAGE

    index = archdoc.module_index()
    rows = [line for line in index.splitlines() if line.startswith("| `")]
    in_folders = [p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE]
    assert len(rows) == len(in_folders)
    assert "| `stages/registry` | The stage registry" in index


def test_the_stage_table_has_every_registered_stage_and_a_new_one_makes_it_stale(monkeypatch, tmp_path) -> None:
    from vaulteval.docs import archdoc
    from vaulteval.pipeline.stages import registry
    from vaulteval.pipeline.stages.base import Reranker

    table = archdoc.stage_table()
    for cls in registry.stages():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{registry.written(cls)}` |"))
        assert (REPO / "vaulteval" / row.split(" | ")[2].strip("`")).is_file(), row

    class Lantern(Reranker):
        name = "lantern"
        summary = "a reranker nobody has documented"
        needs = frozenset({"embedder"})

    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    rewrite(docs)
    registered = registry.stages()
    monkeypatch.setattr(registry, "stages", lambda role=None: [*registered, Lantern])
    assert "| `lantern` | reranker |" in archdoc.stage_table()
    assert any(line.startswith("architecture.md") and "stage table" in line for line in stale(docs))
