"""Evaluation: strategies, the evaluation workspace, runs, metrics, misses, comparisons and
statistics, pooling, abstention, slices, and reproducible run directories with their verification.

- ``api``: the workbench in three calls: ``run(qs, strategies)`` -> ``Runs``, ``compare(qs, runs)`` -> ``Report``.
- ``strategy``: first stage, reranker, index settings (``pipeline.indexsettings``) and depth, with the grammar's docs and help in
  ``strategydoc``.
- ``workspace``: each strategy's index, the vault's own or a build in the cache.
- ``runs``: ``Run`` (ranked pages per query); ``batch``: batch BM25.
- ``measures``, ``stats``, ``compare``, ``misses``, ``sweep``: metrics (ir-measures), tests, reports.
- ``evaluate``: ``evaluate()`` -> ``EvalRun``; ``manifest``, ``verify``, ``fingerprint``, ``report``: run directories.
- ``executor``, ``tasks``, ``dask_executor``: strategies run serially or as Dask tasks; ``splits``:
  the query splits.
"""
