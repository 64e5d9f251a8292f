"""Pages into chunk records with contextual prefixes (synthetic or LLM), Obsidian syntax in chunk
text, wikilink resolution, the packed chunk store and its catalog, and the check of a record against
its page.

- ``chunking``: split a page into paragraph chunks with a contextual prefix (claude-obsidian's chunk
  record schema); ``obsidian`` and ``visible``: Obsidian syntax, and what reading view shows.
- ``segments``: immutable segment files; ``packing``: the incremental run, compaction, migration;
  ``catalog`` and ``catalogfile``: what ``prefix`` last wrote for each page.
- ``prefix_llm``: optional LLM-written prefixes (local Ollama; off-machine providers need ``--allow-egress``).
- ``integrity``: is a chunk record still what its page says? ``derived``: is its text text of the note?
"""
