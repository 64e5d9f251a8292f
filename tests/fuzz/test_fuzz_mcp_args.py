"""Fuzz the MCP tools' arguments through the SDK's own tools/call handler, as both transports run it.

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/fuzz/test_fuzz_mcp_args.py -q``

Any tool name and any JSON a client can send as arguments (lone surrogates,
NaN, huge numbers, nesting, unknown names), plus well-shaped calls with hostile
values. Every call is answered with a result that serializes as the SDK sends
it (UTF-8 JSON); an error is a tool error with one line and a documented exit
code, never an internal one; and the vault does not change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fuzzkit import DOCUMENTED_CODES, count, fuzz_settings
from pipeline_fixtures import snapshot
from vaulteval import Vault

pytest.importorskip("mcp")
from mcp import types  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from vaulteval.server.app import build_server  # noqa: E402
from vaulteval.server.args import TOOLS  # noqa: E402
from vaulteval.server.warm import Served, WarmVault  # noqa: E402

# Any code point, surrogates included (what a JSON "\ud800" escape decodes to).
raw_text = st.text(st.characters(exclude_categories=()), max_size=40)
texts = st.one_of(raw_text, st.sampled_from(["", " ", "[[Descaling]]", "[[Descaling#How often]]", "wiki/howto/Descaling.md",
                                             "../../etc/passwd", "wiki/../.vault-meta/x", "/abs.md", "[[", "#", "\x00",
                                             "descale \ud83d", "espresso \U0001F600"]))
numbers = st.one_of(st.integers(), st.integers(-3, 1200), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, 1, 1000, 1001, 2**63, -(2**63), 10**400 // 10**399]))
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(raw_text, inner, max_size=3),
                      max_leaves=8)
NAMES = sorted({name for spec in TOOLS.values() for name in spec["properties"]})
loose = st.dictionaries(st.one_of(st.sampled_from(NAMES), raw_text), values, max_size=5)
shaped = st.one_of(
    st.fixed_dictionaries({"query": texts}, optional={"limit": numbers, "min_score": numbers, "bm25_top": numbers,
                                                     "strategy": st.one_of(texts, st.sampled_from(
                                                         ["bm25", "bm25:k1=1.2", "bm25:nope=1", "hybrid:cc,alpha=2"]))}),
    st.fixed_dictionaries({"page": texts}, optional={"heading": texts, "start_line": numbers, "end_line": numbers}),
    st.fixed_dictionaries({"pages": st.lists(texts, max_size=22)}),
)
tool_names = st.one_of(st.sampled_from(sorted(TOOLS)), raw_text)


@pytest.fixture(scope="module")
def handler(provisioned_sample: Path):
    before = snapshot(provisioned_sample)
    server = build_server(WarmVault(Vault(provisioned_sample), Served()))
    yield server.request_handlers[types.CallToolRequest]
    assert snapshot(provisioned_sample) == before, "a tool call changed the vault"


def _answer(handler: Any, name: str, arguments: Any) -> bytes | None:
    """The response line the transports would send for this call; None when the SDK refuses the request itself
    (then it answers with a JSON-RPC error of its own)."""
    try:
        request = types.CallToolRequest(method="tools/call",
                                        params=types.CallToolRequestParams(name=name, arguments=arguments))
    except (ValidationError, UnicodeError):
        return None
    result = anyio.run(handler, request)
    response = types.JSONRPCResponse(jsonrpc="2.0", id=1,
                                     result=result.model_dump(by_alias=True, mode="json", exclude_none=True))
    return response.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")


def _check(handler: Any, name: str, arguments: Any) -> None:
    line = _answer(handler, name, arguments)
    if line is None:
        return
    result = json.loads(line)["result"]
    text = result["content"][0]["text"]
    if result.get("isError"):
        data = result.get("structuredContent") or {}
        assert set(data) == {"error", "exit_code"}, f"not a vaulteval tool error: {text[:300]!r}"
        assert data["exit_code"] in DOCUMENTED_CODES - {0} and data["error"] == text
        assert "\n" not in text and "Traceback" not in text and "internal error" not in text, text[:500]
        assert not text.startswith("the answer holds text"), "unencodable input reached a tool and its answer"
    else:
        assert json.loads(text) == result["structuredContent"]


@fuzz_settings()
@given(tool_names, st.one_of(loose, shaped))
@example("search", {"query": "\ud800abc"})
@example("search", {"query": "descale", "min_score": float("nan")})
@example("read", {"page": "[[Descaling]]", "start_line": 2**70})
@example("read_many", {"pages": ["[[Descaling]]", "\udfff"]})
@example("\ud800", {})
def test_any_call_is_answered_with_a_result_or_one_line(handler: Any, name: str, arguments: dict) -> None:
    count("mcp tool arguments")
    _check(handler, name, arguments)


@fuzz_settings(0.5)
@given(st.sampled_from(sorted(TOOLS)), shaped)
def test_well_shaped_calls_with_hostile_values(handler: Any, name: str, arguments: dict) -> None:
    count("mcp tool arguments")
    _check(handler, name, arguments)
