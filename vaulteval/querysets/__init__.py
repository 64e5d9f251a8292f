"""Query sets: queries with graded judgments, in YAML, JSONL, BEIR and TREC.

- ``queryset``: ``QuerySet``, ``load_queryset``, validation with ``file:line`` problems.
- ``formats``: the readers for each file format.
- ``links``: Obsidian-style ``[[wikilink]]`` resolution (file name, shortest path, aliases).
- ``beir``: import a BEIR collection as a vault plus query sets.
"""
