"""Path confinement: the shortcut for plain index paths gives exactly what the general rules give.

Usage: ``.venv/bin/python -m pytest tests/vault/test_paths.py -q``
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaulteval.errors import PathEscape
from vaulteval.vault import paths

# Components drawn from characters that matter to the rules: separators, dots, drive colons, NUL.
_COMPONENT = st.lists(st.sampled_from(list("ab.:-_ \\\x00é") + ["..", "wiki", "notes"]), max_size=4).map("".join)
_RELATIVE = st.lists(_COMPONENT, max_size=5).map("/".join) | st.text(max_size=12)


def _general(base: str, relative: str, strip: str | None) -> str:
    """The general rules alone (the shortcut switched off)."""
    original = paths._plain
    paths._plain = lambda rel: False
    try:
        return paths.lexical_path(base, relative, strip=strip)
    finally:
        paths._plain = original


@settings(max_examples=800, deadline=None, database=None)
@given(relative=_RELATIVE, strip=st.sampled_from([None, "", "wiki", "my/notes"]))
def test_the_plain_path_shortcut_agrees_with_the_general_rules(relative: str, strip: str | None) -> None:
    base = "/vault/root"
    try:
        expected: str | type = _general(base, relative, strip)
    except PathEscape:
        expected = PathEscape
    try:
        got: str | type = paths.lexical_path(base, relative, strip=strip)
    except PathEscape:
        got = PathEscape
    assert got == expected


@pytest.mark.parametrize("relative", ["wiki/a.md", "wiki/sub/b c.md", "chunks/c-1/chunk-000.json"])
def test_plain_paths_take_the_shortcut_and_others_do_not(relative: str) -> None:
    assert paths._plain(relative)
    assert paths.lexical_path("/v", relative) == os.path.join("/v", relative)
    for odd in ("/" + relative, relative + "/", "./" + relative, relative.replace("/", "//"), "../" + relative,
                relative.replace("/", "\\"), "C:" + relative, relative + "\x00"):
        assert not paths._plain(odd)
