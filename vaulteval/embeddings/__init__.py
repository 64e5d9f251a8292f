"""Optional embedding rerank of BM25 candidates.

- ``config``: ``RerankConfig`` and the Ollama host rules (local unless ``--allow-remote-ollama``).
- ``embedders``: Ollama (official client) and sentence-transformers backends.
- ``embedcache``: the SQLite embedding cache keyed by model, input scheme and text hash.
- ``stage``: ``rerank()``; any failure keeps BM25 order and names the reason.
"""
