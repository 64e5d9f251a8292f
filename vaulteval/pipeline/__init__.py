"""The stages composed: the ``Pipeline`` value, retrieval, provisioning and the checks of what
they wrote; what the CLI's pipeline commands, the MCP server and the workbench call.

- ``spec``: the ``Pipeline`` value (first stage, reranker, depth and the index settings it names,
  whose schema is ``indexsettings``): its one grammar, text and saved form, taken by retrieve, the MCP
  server, eval run, tune and pooling; and the pipeline a vault runs when nobody names one (the tuned
  one, else the default built from what the vault has).
- ``retrieve``: ``Retriever`` (an opened index + integrity checker) and ``retrieve()``;
  ``firststage``: running a first stage with the fallbacks they share; ``loadonce``: each part a
  Retriever opens is loaded once for the threads that ask at once.
- ``stages/``: the first stages and rerankers, one class per module, registered by name with their
  parameter schema (``registry``, ``base``, ``params``).
- ``provision``: ``prefix``, ``build`` and ``provision`` under the vault lock; ``tuned``: the strategy
  ``tune --write`` stored.
- ``storegc``: what no generation needs (old segments, temporary files); ``storecheck``: the packed
  store byte by byte, for ``index verify`` and ``doctor --deep``; ``findable``: which notes with text
  no query can be served from.
- ``doctor``: is retrieval available, configured, verified or degraded? ``bench``: provisioning and
  retrieval timings on a throwaway copy of a vault.
"""
