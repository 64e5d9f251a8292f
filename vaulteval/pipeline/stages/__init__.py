"""Retrieval stages, one class per module, found by name in ``registry``.

- ``registry``: the stage protocols (``FirstStage``, ``Reranker``), ``register`` and lookup by name;
- ``params``: ``Param``, one parameter's name, type, default, range and help;
- one module per first stage (``bm25``, ``dense``, ``hybrid``, ...) and per reranker
  (``embedding_rerank``), each listed here;
- ``embedder``: ``EmbedderSettings``, the backend, model, host, timeout and remote permission the stages that
  embed use (the command line, the MCP server and provisioning hand them over; the embeddings package's config
  stays inside the stages).
"""

# How each stage is written in a strategy string, and the module of its class: explicit lists, so the
# import graph sees every edge. Here rather than in ``registry`` so that ``retrieve --help``'s parser reads
# the first-stage names without importing the stage API (or any stage: they load numpy).
FIRST_STAGE_MODULES = {
    "bm25": "vaulteval.pipeline.stages.bm25",
    "dense": "vaulteval.pipeline.stages.dense",
    "hybrid": "vaulteval.pipeline.stages.hybrid",
    "bm25:prf=K": "vaulteval.pipeline.stages.prf",
}
RERANKER_MODULES = {
    "rerank": "vaulteval.pipeline.stages.embedding_rerank",
    "rerank:cross": "vaulteval.pipeline.stages.cross_rerank",
}
