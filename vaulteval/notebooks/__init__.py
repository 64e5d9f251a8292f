"""The bundled notebooks (``*.ipynb``, package data) and the helpers they call.

- ``support``: notebook parameters -> vault, query set and strategies.
- ``views``, ``explore``, ``plots``: tables and figures (plot helpers return their data).
- ``run``: execute notebooks with papermill into a run directory.
"""
