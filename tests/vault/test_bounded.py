"""The one loader of YAML and JSON from disk: bounded depth and alias expansion, no NaN, one line per refusal."""

from __future__ import annotations

import pytest

from vaulteval.vault.bounded import ALIAS_BUDGET, MAX_DEPTH, Refused, load_json, load_yaml


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The billion-laughs shape: each anchor is ``width`` references to the one before."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines + [f"tags: *a{levels - 1}"]) + "\n"


def anchor_chain(length: int) -> str:
    return "a0: &a0 x\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, length)) + f"tags: *a{length - 1}\n"


@pytest.mark.parametrize("text, problem", [
    (alias_bomb(), "aliases expand past"),
    ("tags: " + "[" * 900 + "]" * 900, f"nests deeper than {MAX_DEPTH} levels"),
    ("tags: " + "[" * 100_000, "nest"),  # libyaml stops it first
    ("\n".join("  " * i + "a:" for i in range(3000)) + " x", f"nests deeper than {MAX_DEPTH} levels"),
    (anchor_chain(3000), f"aliases nest deeper than {MAX_DEPTH} levels"),
    ("a: &a [1, *a]", "refers to a node that contains it"),
    ("a: *nowhere", "names no anchor"),
    ("a: [1, 2", "not valid YAML"),
    ("a: 2026-13-45", "cannot build"),
    ("a: " + "9" * 5000, "cannot build"),
])
def test_a_hostile_document_is_refused_in_one_line(text: str, problem: str) -> None:
    with pytest.raises(Refused) as caught:
        load_yaml(text)
    assert problem in caught.value.problem
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_the_budget_counts_what_aliases_add() -> None:
    assert len(load_yaml(alias_bomb(levels=3))["tags"]) == 9  # 729 items: well inside the budget
    shared = load_yaml("d: &d {k1: 1, k2: [a, b]}\nq1: {<<: *d, id: 1}\nq2: *d\n")
    assert shared["q1"] == {"k1": 1, "k2": ["a", "b"], "id": 1} and shared["q2"]["k2"] == ["a", "b"]
    one = "x" * 1000
    text = f"a: &a {one}\n" + "".join(f"b{i}: *a\n" for i in range(ALIAS_BUDGET // 1000 + 1))
    with pytest.raises(Refused, match="aliases expand past"):
        load_yaml(text)  # a long scalar weighs its characters, not one item


def test_nesting_up_to_the_bound_loads() -> None:
    depth = MAX_DEPTH - 1
    value = load_yaml("tags: " + "[" * depth + "x" + "]" * depth)["tags"]
    for _ in range(depth - 1):
        value = value[0]
    assert value == ["x"]


def test_a_refusal_names_the_line_and_cuts_a_long_problem() -> None:
    with pytest.raises(Refused) as caught:
        load_yaml("ok: 1\nbad: [1, 2\n")
    assert caught.value.line == 3
    assert len(Refused("x" * 10_000).problem) < 300


@pytest.mark.parametrize("text, problem", [
    ('{"seed": NaN}', "NaN"),
    ('{"k": -Infinity}', "-Infinity"),
    ("[" * 5000 + "]" * 5000, f"nests deeper than {MAX_DEPTH} levels"),
    ('{"a": 1', "not valid JSON"),
    (b"\xff{}", "not UTF-8"),
    ("1" * 5000, "cannot hold"),
])
def test_json_that_no_field_can_hold_is_refused(text, problem: str) -> None:
    with pytest.raises(Refused) as caught:
        load_json(text)
    assert problem in caught.value.problem


def test_brackets_inside_json_strings_are_not_nesting() -> None:
    assert load_json('{"a": "' + "[" * 1000 + '\\"]", "b": [1, {"c": null}]}')["b"] == [1, {"c": None}]
