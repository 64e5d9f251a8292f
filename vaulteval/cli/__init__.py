"""The command line: thin layers that parse, call one API function and map errors to exit codes.

- ``main``: ``vaulteval`` entry point, the pipeline commands and exit-code mapping.
- ``eval``: ``queryset``, ``eval``, ``import`` and ``notebooks`` commands.
- ``demo``, ``sample``: the demo and the bundled sample vault.
"""
