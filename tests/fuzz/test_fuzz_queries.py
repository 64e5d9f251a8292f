"""Fuzz queries through `vaulteval retrieve`, `index query` and the API: any Unicode, NUL, RTL marks, the limit.

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/fuzz -q``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from vaulteval import Vault
from vaulteval.errors import UsageError
from vaulteval.index.tokenize import MAX_INPUT_CHARS, over_limit
from vaulteval.pipeline.retrieve import Retriever

from fuzzkit import count, cli_ok, fuzz_settings
from pipeline_fixtures import assert_one_line_error, run_cli, snapshot

MARKS = "\u200f\u200e\u202e\u202d\u2066\u2067\u2069\x00\ufeff\u0301"  # RTL/LTR marks, overrides, NUL, BOM
any_text = st.text(st.characters(codec="utf-8"), max_size=200)
marked = st.text(st.sampled_from(list(MARKS) + list("ab東京 ")), max_size=50)
# Around the limit: a filler character (some expand or shrink under NFKC) repeated 7,999-8,001 times.
at_limit = st.builds(lambda ch, n: ch * n, st.sampled_from(["a", "東", " ", "\u200f", "ﷺ", "ｱ", "\x00"]),
                     st.sampled_from([MAX_INPUT_CHARS - 1, MAX_INPUT_CHARS, MAX_INPUT_CHARS + 1]))
queries = st.one_of(any_text, marked, at_limit, st.builds(lambda a, b: a + b, at_limit, any_text))


def _expected_code(query: str) -> int:
    return 2 if not query.strip() or over_limit(query) is not None else 0


@pytest.fixture(scope="module")
def vault_root(provisioned_sample: Path):
    before = snapshot(provisioned_sample)
    yield provisioned_sample
    assert snapshot(provisioned_sample) == before, "a query changed the vault"


@fuzz_settings()
@given(queries)
@example("\x00")
@example("\u200f\u202e espresso")
@example("-" + "x" * 20)
def test_retrieve_cli(vault_root: Path, query: str) -> None:
    count("queries: retrieve CLI")
    code, out, _ = cli_ok("retrieve", "--vault", vault_root, "--no-rerank", "--explain", "--", query,
                          codes={_expected_code(query)})
    if code == 0:
        assert isinstance(json.loads(out)["candidates"], list)


@fuzz_settings(0.5)
@given(queries)
def test_index_query_cli(vault_root: Path, query: str) -> None:
    count("queries: index query CLI")
    cli_ok("index", "query", "--vault", vault_root, "--", query, codes={_expected_code(query)})


@fuzz_settings()
@given(queries)
def test_retrieve_api(vault_root: Path, query: str) -> None:
    count("queries: API")
    retriever = Retriever(Vault(vault_root))
    try:
        result = retriever.retrieve(query, top=5, rerank=None)
    except UsageError:
        assert _expected_code(query) == 2
    else:
        assert _expected_code(query) == 0 and len(result.candidates) <= 5


@pytest.mark.parametrize("query, code", [
    ("\u200f" * (MAX_INPUT_CHARS - 1) + "a", 0),
    ("a" * (MAX_INPUT_CHARS + 1), 2),
    ("ﷺ" * 1000, 2),
    ("\u202eespresso\u202c", 0),
])
def test_retrieve_subprocess(vault_root: Path, query: str, code: int) -> None:
    """A few through a real process (argv cannot carry NUL)."""
    count("queries: subprocess")
    proc = run_cli("retrieve", "--vault", vault_root, "--no-rerank", "--", query)
    if code:
        assert_one_line_error(proc, code)
    else:
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        json.loads(proc.stdout)
