"""Every tool argument is input (issue 42, item 4): text that cannot be encoded is a tool error, never silence.

A JavaScript client that cuts a string inside an emoji sends half of a
surrogate pair (``"\\ud800abc"``). Python's ``json`` (and so the SDK's HTTP
transport) accepts it; pydantic's JSON parser (the SDK's stdio reader) does
not. Either way the request is answered, with the usual one-line tool error
(exit 2), and the server goes on serving. HTTP is checked in test_mcp_http.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_fixtures import DESCALING_NOTE, snapshot
from vaulteval import Vault
from vaulteval.server.app import call
from vaulteval.server.warm import Served, WarmVault

pytest.importorskip("mcp")
from mcp_servers import StdioLines  # noqa: E402

# Raw JSON-RPC text: "\ud800" stays an escape here and reaches the server as a lone surrogate.
LONE = r"\ud800abc"
CALLS = {
    "search query": f'{{"name": "search", "arguments": {{"query": "{LONE}"}}}}',
    "search strategy": f'{{"name": "search", "arguments": {{"query": "x", "strategy": "{LONE}"}}}}',
    "read page": f'{{"name": "read", "arguments": {{"page": "{LONE}"}}}}',
    "read heading": f'{{"name": "read", "arguments": {{"page": "[[Descaling]]", "heading": "\\udfff"}}}}',
    "read_many page": f'{{"name": "read_many", "arguments": {{"pages": ["[[Descaling]]", "{LONE}"]}}}}',
    "the tool name": f'{{"name": "{LONE}", "arguments": {{}}}}',
    "a low surrogate first": '{"name": "search", "arguments": {"query": "\\udc00\\ud800"}}',
}


def test_unencodable_text_in_any_argument_over_stdio_gets_its_answer(provisioned_sample: Path) -> None:
    before = snapshot(provisioned_sample)
    server = StdioLines(provisioned_sample)
    try:
        for number, (case, params) in enumerate(sorted(CALLS.items()), start=1):
            server.send(f'{{"jsonrpc": "2.0", "id": {number}, "method": "tools/call", "params": {params}}}')
            answer = server.answer()
            assert answer["id"] == number, case
            result = answer["result"]
            message = result["content"][0]["text"]
            assert result["isError"] is True and result["structuredContent"] == {"error": message, "exit_code": 2}
            assert "lone surrogate" in message and "\n" not in message, (case, message)
        # A parameter *name* of that kind the SDK itself refuses while validating the request: still answered.
        server.send(f'{{"jsonrpc": "2.0", "id": 98, "method": "tools/call", "params": {{"name": "status", '
                    f'"arguments": {{"{LONE}": 1}}}}}}')
        refused = server.answer()
        assert refused["id"] == 98 and refused["error"]["code"] == -32602
        server.send('{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": '
                    '{"name": "search", "arguments": {"query": "descale the espresso machine"}}}')
        served = server.answer()["result"]
        assert served["isError"] is False
        assert DESCALING_NOTE in [c["page_path"] for c in served["structuredContent"]["candidates"]]
    finally:
        err = server.close()
    assert "Traceback" not in err and "Received exception" not in err, err
    assert snapshot(provisioned_sample) == before


def test_the_message_names_the_argument_and_the_place(provisioned_sample: Path) -> None:
    warm = WarmVault(Vault(provisioned_sample), Served())
    result = call(warm, "read_many", {"pages": ["[[Descaling]]", "ok \udbff"]})
    assert result.isError is True and result.structuredContent["exit_code"] == 2
    assert result.content[0].text.startswith("pages[1] is not valid text: it holds a lone surrogate (U+DBFF) at "
                                             "character 4;")
    key = call(warm, "status", {"x\udc80": 1})
    assert key.isError is True and key.content[0].text.startswith("a parameter name is not valid text")
    whole = call(warm, "search", {"query": "descale \U0001F600 espresso"})  # a whole pair is fine
    assert whole.isError is False and whole.structuredContent["query"] == "descale \U0001F600 espresso"


def test_an_answer_that_cannot_be_encoded_is_an_error_not_silence(provisioned_sample: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a tool returns, the request is answered: text that could not be sent becomes a tool error."""
    warm = WarmVault(Vault(provisioned_sample), Served())
    monkeypatch.setattr(WarmVault, "status", lambda self, **kw: {"schema": "x", "note": "half \ud83d"})
    result = call(warm, "status", {})
    assert result.isError is True and result.structuredContent["exit_code"] == 1
    assert "cannot be encoded" in result.content[0].text
    result.model_dump_json()  # what a transport sends


@pytest.mark.parametrize("page", ["0\n0", "a\rb", "x\x1b[31my"])
def test_a_control_character_in_a_name_stays_on_the_error_s_one_line(provisioned_sample: Path, page: str) -> None:
    """An unknown page whose name holds a newline or an escape is named escaped, as the CLI prints it."""
    warm = WarmVault(Vault(provisioned_sample), Served())
    result = call(warm, "read", {"page": page})
    text = result.content[0].text
    assert result.isError is True and result.structuredContent == {"error": text, "exit_code": 3}  # no such page
    assert not any(ch in text for ch in "\n\r\x1b") and "matches no page" in text
