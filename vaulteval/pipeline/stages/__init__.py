"""Retrieval stages, one class per module, found by name in ``registry``.

- ``registry``: the stage protocols (``FirstStage``, ``Reranker``), ``register`` and lookup by name;
- ``params``: ``Param``, one parameter's name, type, default, range and help;
- one module per first stage (``bm25``, ``dense``, ``hybrid``, ...) and per reranker
  (``embedding_rerank``), each listed in ``registry``.
"""
