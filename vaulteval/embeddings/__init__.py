"""Embeddings: the backends, the embedding cache, the stored chunk vectors, the embedding rerank
step with its fallbacks, and the ONNX export of a model for torch-free queries.

- ``config``: ``RerankConfig`` and the Ollama host rules (local unless ``--allow-remote-ollama``); private to
  this package and the stages that embed, which callers reach through ``EmbedderSettings``
  (``vaulteval.pipeline.stages.embedder``).
- ``embedders``: Ollama (official client) and sentence-transformers backends.
- ``embedcache``: the SQLite embedding cache keyed by model, input scheme and text hash;
  ``keptcache``: the one a long-lived process keeps open.
- ``rerank``: the rerank step; any failure keeps the first stage's order and names the reason.
- ``store``, ``storebuild``, ``vectors``: the stored embeddings.
- ``onnxexport`` (at provision time), ``onnxembed`` (at query time), ``onnxfiles`` (its files and their check).
"""
