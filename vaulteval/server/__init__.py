"""The MCP server: a warm, still-verified vault for agents (``vaulteval mcp``; docs/mcp.md).

- ``warm``: one warm ``Retriever``, replaced when provisioning publishes new files, and the tools' work.
- ``opening``: the CLI's open-time rules, checked before every call by stat signature.
- ``args``: tool schemas, parameter checks with the CLI's messages, unencodable text.
- ``app``: the SDK wiring and the one dispatch every tool goes through, stdio.
- ``http``: Streamable HTTP on loopback; ``token``: the bearer token of each launch; ``sessions``:
  session caps (the oldest idle session makes room).
"""
