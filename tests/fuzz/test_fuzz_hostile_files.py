"""Fuzz YAML bombs (front matter, query sets, pools) and special files at every path the workbench reads.

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=300 .venv/bin/python -m pytest tests/fuzz/test_fuzz_hostile_files.py -q``

Oracles: the bounded loader builds nothing larger than its text plus the alias
budget, or refuses in one line; a command ends with a documented exit code in
one line; no read waits on a FIFO (a blocked read ends the run with a traceback
from ``faulthandler``, not a hang); the vault's notes never change.
"""

from __future__ import annotations

import faulthandler
import os
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from vaulteval.vault.bounded import ALIAS_BUDGET, MAX_DEPTH, Refused, load_yaml

from fuzzkit import Scratch, cli_ok, count, fuzz_settings
from pipeline_fixtures import snapshot, write_note

HANG_S = 120  # a read blocked this long is a hang: faulthandler ends the run with every thread's traceback


def _bomb(width: int, levels: int, key: str) -> str:
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines + [f"{key}: *a{levels - 1}"])


def _nesting(depth: int, opener: str, key: str, closed: bool) -> str:
    if opener == "block":
        return "\n".join("  " * i + f"{key if i == 0 else 'k'}:" for i in range(depth)) + " x"
    close = {"[": "]", "{a: ": "}"}[opener]
    return f"{key}: " + opener * depth + "x" + (close * depth if closed else "")


def _chain(length: int, key: str) -> str:
    return "a0: &a0 x\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, length)) + f"{key}: *a{length - 1}"


KEYS = st.sampled_from(["tags", "aliases", "title", "address", "cssclasses", "name", "other"])
TOKENS = st.sampled_from(["&a ", "&b ", "*a", "*b", "[", "]", "{", "}", ": ", "- ", "\n", "  ", "<<: ", "lol",
                          ", ", "? ", "!!str ", "'", '"', "tags", "#", "|", ">"])
hostile_yaml = st.one_of(
    st.builds(_bomb, st.integers(2, 12), st.integers(2, 12), KEYS),
    st.builds(_nesting, st.integers(1, 3000), st.sampled_from(["[", "{a: ", "block"]), KEYS, st.booleans()),
    st.builds(_chain, st.integers(2, 3000), KEYS),
    st.builds(lambda a, b: a + "\n" + b, st.builds(_bomb, st.integers(2, 6), st.integers(2, 6), KEYS),
              st.lists(TOKENS, max_size=30).map("".join)),
    st.lists(TOKENS, max_size=60).map("".join),
)


def _expanded_size(value, limit: int) -> int:
    """Items plus characters of ``value`` with every shared reference counted again (what a reader pays); fails
    as soon as it passes ``limit``, so an unbounded value cannot stall the check itself."""
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        size += 1 + (len(item) if isinstance(item, str) else 0)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        assert size <= limit, f"the value expands past {limit:,}"
    return size


@fuzz_settings()
@given(text=hostile_yaml)
@example(text=_bomb(9, 9, "tags"))
@example(text=_nesting(900, "[", "tags", True))
@example(text=_chain(3000, "tags"))
def test_the_loader_builds_a_bounded_value_or_refuses(text: str) -> None:
    count("yaml: loader")
    try:
        value = load_yaml(text)
    except Refused as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 300
        return
    _expanded_size(value, 4 * len(text) + 4 * ALIAS_BUDGET + 64)
    depth, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        depth = max(depth, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    assert depth <= MAX_DEPTH


@fuzz_settings()
@given(text=hostile_yaml)
def test_a_hostile_front_matter_leaves_a_page_with_its_body(text: str) -> None:
    from vaulteval.chunks.chunking import parse_page
    from vaulteval.chunks.obsidian import page_terms

    count("yaml: front matter (parse)")
    page = parse_page(f"---\n{text}\n---\nquokka body\n".encode("utf-8"), "wiki/fuzz.md")
    assert page.body.startswith("quokka body") or "---" in text  # a '---' line inside ends the front matter
    assert isinstance(page.frontmatter, dict)
    page_terms(page.frontmatter, page.body)  # the prefix's terms: bounded, no recursion


@fuzz_settings(0.1)
@given(texts=st.lists(hostile_yaml, min_size=1, max_size=2))
def test_hostile_front_matter_through_provision_and_read(tmp_path: Path, texts: list[str]) -> None:
    with Scratch(tmp_path) as scratch:
        root = scratch / "v"
        write_note(root, "wiki/espresso.md", "# Espresso\n\nDescale the espresso machine every month.\n")
        for i, text in enumerate(texts):
            write_note(root, f"wiki/fuzz{i}.md", f"---\n{text}\n---\nquokka{i} body\n")
        count("yaml: front matter (provision)")
        notes = snapshot(root / "wiki")
        code, _, _ = cli_ok("provision", "--vault", root, codes={0, 12})  # 12: two notes claim one address
        if code == 0:
            cli_ok("retrieve", "--vault", root, "--no-rerank", "espresso", codes={0})
        cli_ok("read", "--vault", root, "wiki/fuzz0.md", codes={0})
        assert snapshot(root / "wiki") == notes


QUERYSET_SLOTS = {
    "name": "{anchors}\nname: {ref}\nqueries:\n  - {{id: q1, query: descale, relevant: {{}}}}\n",
    "tags": "{anchors}\nqueries:\n  - {{id: q1, query: descale, relevant: {{}}, tags: {ref}}}\n",
    "grade": "{anchors}\nqueries:\n  - {{id: q1, query: descale, relevant: {{wiki/espresso.md: {ref}}}}}\n",
    "judged": "{anchors}\nqueries:\n  - {{id: q1, query: descale, relevant: {{}}, judged: {ref}}}\n",
    "query": "{anchors}\nqueries:\n  - {{id: q1, query: {ref}, relevant: {{}}}}\n",
}


@fuzz_settings(0.5)
@given(slot=st.sampled_from(sorted(QUERYSET_SLOTS)), width=st.integers(2, 12), levels=st.integers(2, 12),
       deep=st.integers(0, 1200))
def test_query_set_bombs_are_one_line(provisioned_sample: Path, tmp_path: Path, slot: str, width: int, levels: int,
                                      deep: int) -> None:
    anchors = "\n".join(_bomb(width, levels, "unused").splitlines()[:-1])
    ref = f"*a{levels - 1}" if deep == 0 else "[" * deep + "x" + "]" * deep
    with Scratch(tmp_path) as scratch:
        qs = scratch / "bomb.yaml"
        qs.write_text(QUERYSET_SLOTS[slot].format(anchors=anchors, ref=ref), encoding="utf-8")
        count("yaml: query sets")
        code, _, err = cli_ok("queryset", "check", "--vault", provisioned_sample, qs, codes={0, 2})
        assert len(err) < 2000
        cli_ok("queryset", "merge", qs, "--out", scratch / "merged.yaml", codes={0, 2})
        pool = scratch / "pool.yaml"
        pool.write_text(f"{anchors}\nstrategies: [bm25]\ndepth: 10\npairs: {ref}\n", encoding="utf-8")
        cli_ok("queryset", "pregrade", pool, "--out", scratch / "graded.yaml", "--llm-host", "http://127.0.0.1:9",
               "--quiet", codes={2})


# -- special files ------------------------------------------------------------------------------------

def _plant(path: Path, kind: str) -> None:
    """A special file (or a link to one) where a regular file is expected."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "link to fifo":
        os.mkfifo(path.with_name(path.name + ".fifo"))
        path.symlink_to(path.name + ".fifo")
    elif kind == "dangling link":
        path.symlink_to(path.name + ".nowhere")


def _commands(root: Path, scratch: Path, target: Path, where: str) -> list[list]:
    out = scratch / "out.yaml"
    return {
        "queryset.yaml": [["queryset", "check", "--vault", root, target],
                          ["eval", "run", "--vault", root, "--queryset", target, "--out", scratch / "runs"]],
        "queryset.jsonl": [["queryset", "check", "--vault", root, target]],
        "merge input": [["queryset", "merge", target, "--out", out]],
        "pool": [["queryset", "pregrade", target, "--out", out, "--llm-host", "http://127.0.0.1:9", "--quiet"]],
        "log": [["queryset", "from-log", target, "--vault", root, "--out", out]],
        "grid": [["eval", "run", "--vault", root, "--queryset", scratch / "qs.yaml", "--grid", f"@{target}",
                  "--out", scratch / "runs"]],
        "manifest": [["eval", "verify", target.parent]],
        "vaulteval.json": [["retrieve", "--vault", root, "--no-rerank", "espresso"]],
    }[where]


WHERE = ["queryset.yaml", "queryset.jsonl", "merge input", "pool", "log", "grid", "manifest", "vaulteval.json"]
KINDS = ["fifo", "folder", "device", "link to fifo", "dangling link"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", WHERE)
def test_special_files_are_refused_without_waiting(tmp_path: Path, where: str, kind: str) -> None:
    """Every path the workbench reads, with every kind of file that is not a regular one (all 40 pairs)."""
    with Scratch(tmp_path) as scratch:
        root = scratch / "v"
        write_note(root, "wiki/espresso.md", "# Espresso\n\nDescale the espresso machine every month.\n")
        (root / ".obsidian").mkdir()
        (scratch / "qs.yaml").write_text("queries:\n  - {id: q1, query: descale, relevant: "
                                         "{wiki/espresso.md: 2}}\n", encoding="utf-8")
        target = {"queryset.yaml": scratch / "q.yaml", "queryset.jsonl": scratch / "q.jsonl",
                  "merge input": scratch / "m.yaml", "pool": scratch / "pool.yaml", "log": scratch / "log.jsonl",
                  "grid": scratch / "grid.txt", "manifest": scratch / "runs" / "r1" / "manifest.json",
                  "vaulteval.json": root / ".vaulteval.json"}[where]
        _plant(target, kind)
        count("special files")
        notes = snapshot(root / "wiki")
        faulthandler.dump_traceback_later(HANG_S, exit=True)
        try:
            for command in _commands(root, scratch, target, where):
                code, _, _ = cli_ok(*command)
                assert code != 0 or where == "vaulteval.json" and kind == "dangling link", (command, code)
        finally:
            faulthandler.cancel_dump_traceback_later()
        assert snapshot(root / "wiki") == notes


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_special_file_is_planted(tmp_path: Path, kind: str) -> None:
    _plant(tmp_path / "x.yaml", kind)
    assert os.path.lexists(tmp_path / "x.yaml") and not (tmp_path / "x.yaml").is_file()
