"""The command line: thin layers that parse, call one API function and map errors to exit codes;
``main`` routes a command to its group (``pipeline``, ``eval``, ``notes``, ``tune``, ``serve``).

- ``run``: the process entry of ``vaulteval`` and ``python -m vaulteval`` (start-up and exit, below).
- ``main``: parsing, the command groups and exit-code mapping (``main(argv)`` returns the exit code).
- ``pipeline`` (its parsers in ``pipeline_args``), ``eval``, ``notes``, ``tune``, ``serve``: the groups.
- ``demo``, ``sample``: the demo and the bundled sample vault.
"""


def run() -> None:
    """Run one ``vaulteval`` command as the whole process and exit with its code.

    Start-up (imports, the parser) makes no cyclic garbage, so the cyclic collector is off until the
    command's own work begins (``main`` then freezes what start-up made and turns it back on). A
    ``retrieve`` whose output is flushed ends without tearing the interpreter down (``main.finish``).
    """
    import gc

    gc.disable()
    from vaulteval.cli.main import finish, main

    finish(main(process=True))
