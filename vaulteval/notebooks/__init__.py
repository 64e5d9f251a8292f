"""The bundled notebooks (``*.ipynb``, package data), their parameter handling, views and plots,
and the papermill runner.

- ``support``: notebook parameters -> vault, query set and strategies.
- ``views``, ``explore``, ``plots``: tables and figures (plot helpers return their data).
- ``run``: execute notebooks with papermill into a run directory.
"""
