"""Query sets and their formats (YAML, JSONL, BEIR, TREC), judgment keys to pages, BEIR import,
generation from the vault, judging and merging, and following renamed pages.

- ``queryset``: ``QuerySet``, ``load_queryset``, validation with ``file:line`` problems.
- ``formats``: the readers for each file format.
- ``links``: Obsidian-style ``[[wikilink]]`` resolution (file name, shortest path, aliases).
- ``beir``: import a BEIR collection as a vault plus query sets.
- ``generate/``: queries built from the vault; ``written/``: questions a writer asked;
  ``judging``: judging and merging; ``follow``: renamed pages.
"""
