"""Confined, read-only note access for agents: one note, bounded text search, and the claim and
source ledgers.

- ``read``: one note with its frontmatter, headings, outgoing links and backlinks.
- ``search``: text search of every note with line numbers and context (no index needed).
- ``ledgers``: the claim and source ledgers, validated, with per-claim evidence status.

Everything here reads; nothing writes the vault or its derived state.
"""
