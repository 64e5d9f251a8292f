"""The ``vaulteval`` command: picks the command group, parses, calls it, maps errors to exit codes.

Usage: ``vaulteval retrieve --vault V "query" --top 5 --no-rerank --explain``

Only the group that owns the command is imported and given a parser, so
``retrieve`` builds one small parser tree; ``vaulteval --help`` builds them all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib import import_module

from vaulteval.version import __version__
from vaulteval.cli.common import Parser, add_vault
from vaulteval.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, VaultevalError

# Command group module -> the commands it registers (keep in step with each module's NAMES).
GROUPS: dict[str, tuple[str, ...]] = {
    "vaulteval.cli.pipeline": ("prefix", "index", "provision", "retrieve", "rerank", "doctor", "bench", "demo",
                               "sample"),
    "vaulteval.cli.eval": ("queryset", "import", "eval", "notebooks"),
    "vaulteval.cli.notes": ("read", "search", "ledgers"),
    "vaulteval.cli.tune": ("tune",),
    "vaulteval.cli.serve": ("mcp",),
}


def _first_command(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return None


def build_parser(command: str | None = None) -> Parser:
    """The parser for ``command``'s group only, or for every group when ``command`` is None or unknown."""
    parser = Parser(prog="vaulteval", description="Read-only retrieval over an Obsidian vault, and its measurement.")
    parser.add_argument("--version", action="version", version=f"vaulteval {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    owners = [module for module, names in GROUPS.items() if command in names] or list(GROUPS)
    for module in owners:
        group = import_module(module)
        if command in GROUPS[module] and hasattr(group, "register_only"):
            group.register_only(sub, add_vault, command)  # just this command's parser
        else:
            group.register(sub, add_vault)
    return parser


def _setup_logging(verbose: bool) -> None:
    import logging

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="vaulteval: %(levelname)s: %(message)s", stream=sys.stderr)


_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOTO_NUM_THREADS")


def _one_blas_thread() -> None:
    """Give numpy a one-thread OpenBLAS in this process, unless the user chose a thread count.

    A BM25 query scores in plain Python and never imports numpy; dense, hybrid and rerank do, and use
    BLAS only for small products, yet OpenBLAS starts a thread pool on import, which costs time.
    ``retrieve`` starts no other program, so the setting reaches nothing else.
    """
    if "numpy" not in sys.modules and not any(v in os.environ for v in _BLAS_THREAD_VARS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def main(argv: Sequence[str] | None = None, *, process: bool = False) -> int:
    """Run one command; the exit code. ``process``: this call is the whole process (``vaulteval.cli.run``,
    which turned the cyclic collector off for start-up)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_first_command(argv))
    args = parser.parse_args(argv)
    if process:
        import gc

        gc.freeze()  # what start-up made lives until exit: later collections need not walk it
        gc.enable()
    # A BM25-only retrieve logs nothing, so it skips importing logging (a lean start).
    if args.verbose or not (args.command == "retrieve" and args.no_rerank):
        _setup_logging(args.verbose)
    if args.command == "retrieve":
        _one_blas_thread()
    if not args.command:
        sys.stderr.write("vaulteval: error: no command given (see vaulteval --help)\n")
        return EXIT_USAGE
    try:
        return args.handler(args)
    except VaultevalError as exc:
        sys.stderr.write(f"vaulteval: error: {_printable(str(exc))}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("vaulteval: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug, not a user mistake: still one line unless -v
        if args.verbose:
            raise
        sys.stderr.write(f"vaulteval: internal error: {type(exc).__name__}: {_printable(str(exc))} "
                         "(rerun with -v for details)\n")
        return EXIT_FAILED


def finish(code: int) -> None:
    """Exit the process with ``code``. A ``retrieve`` ends right away once its output is flushed: its
    process holds nothing that tearing the interpreter down would write or release (the work is a share of
    a cold query). Anything else, or a retrieve that left an exit handler or a thread, exits normally."""
    if _first_command(sys.argv[1:]) == "retrieve" and _nothing_left_to_run():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stream: the normal exit reports it as it always has
        else:
            os._exit(code)
    raise SystemExit(code)


def _nothing_left_to_run() -> bool:
    """True when no exit handler is registered and no other thread runs (an embedding client or a model
    library may start them); both would be skipped by ending the process at once."""
    import atexit

    pending = getattr(atexit, "_ncallbacks", None)  # CPython's count of registered handlers
    if pending is None or pending():
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def _printable(message: str) -> str:
    """The message on one safe line: a control character from a file or a name (a newline, ESC, a record
    separator) is written as an escape instead of breaking the line or reaching the terminal."""
    from vaulteval.vault.notefiles import printable

    return printable(message)
