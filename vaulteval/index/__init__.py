"""The BM25 index over chunk records: one checksummed, memory-mapped file.

- ``tokenize``: the analyzers (``default`` = claude-obsidian's tokenizer, ``english`` with stemming).
- ``bm25``: the scoring formula (idf, term weight), as pure functions.
- ``file``: the on-disk container (header, sections, checksums, atomic publish).
- ``reader``: ``open_index`` and ``BM25Index.search``.
- ``build``: ``build_index``, reusing postings of unchanged chunk files.
"""
