"""The MCP server: a warm, still-verified vault for agents (``vaulteval mcp``; docs/mcp.md)."""
