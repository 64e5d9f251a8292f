"""Notes into chunk records, and the records' check against the notes.

- ``chunking``: split a page into paragraph chunks with a contextual prefix (claude-obsidian's chunk record schema).
- ``store``: chunk records under ``.vault-meta/chunks/<address>/`` and the catalog that skips unchanged pages.
- ``prefix_llm``: optional LLM-written prefixes (local Ollama; off-machine providers need ``--allow-egress``).
- ``integrity``: is a chunk record still what its page says? (read confined, verdicts remembered per unchanged file)
"""
