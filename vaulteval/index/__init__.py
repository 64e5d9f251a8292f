"""Analyzers, BM25 scoring and the index: one checksummed, memory-mapped file built from chunk
records, with the field index beside it.

- ``analysis``: the ``Analyzer`` protocol and the one registry of analyzer names (``lookup``); ``tokenize``,
  ``analyzers``, ``langs/``: the analyzers themselves (``default``, ``english``, ``auto`` and the language
  analyzers).
- ``params``: the one validator of k1/b and chunk sizes.
- ``file``: the index file format with its section and block checksums (also used by the field index
  and the stored embeddings); ``location``: where the index lives; ``reader``: opening it.
- ``bm25``: BM25 scoring in numpy, the one array implementation, for one query or a block;
  ``bm25_plain``: one thin no-numpy path for a CLI query (MaxScore pruning, bit-identical);
  ``bm25_compiled.pyx``: the compiled core (Cython, optional at install, bit-identical) used instead
  where it is built; ``search``: the choice between them.
- ``build``, ``fieldbuild``: building the index and the field index from chunk records;
  ``notecap``: what one note may add, bounded.
"""
