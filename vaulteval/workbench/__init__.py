"""Evaluation: strategies, runs, metrics, misses, comparisons and reproducible run directories.

- ``strategy``: the strategy grammar (``bm25:analyzer=english``, ``rerank:st``).
- ``workspace``: each strategy's index, the vault's own or a build in the cache.
- ``runs``: ``Run`` (ranked pages per query) and ``run_strategy``.
- ``measures``, ``stats``, ``compare``, ``misses``, ``sweep``: metrics (ir-measures), tests, reports.
- ``api``: the workbench in three calls: ``run(qs, strategies)`` -> ``Runs``, ``compare(qs, runs)`` -> ``Report``.
- ``evaluate``: ``evaluate()`` -> ``EvalRun``; ``manifest``, ``verify``, ``fingerprint``, ``report``: run directories.
"""
