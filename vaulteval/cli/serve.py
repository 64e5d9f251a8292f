"""``vaulteval mcp``: the vault as an MCP server for agents (stdio, or Streamable HTTP on loopback).

Usage::

    vaulteval mcp --vault V                       # stdio: what an agent's MCP config starts
    vaulteval mcp --vault V --http --port 8765    # http://127.0.0.1:8765/mcp, with a bearer token (docs/mcp.md)

The search pipeline is what ``vaulteval retrieve`` would run with the same
flags (``--strategy``, the tuned pipeline, ``--no-rerank``, ``--embedder``...);
a call may name another strategy. Needs ``vaulteval[mcp]``. Nothing is
written outside ``.vault-meta/``, and nothing is logged unless ``-v`` (diagnostics) or
``--log FILE`` (the questions, for ``queryset from-log``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from vaulteval.cli.common import int_arg, select_vault
from vaulteval.errors import EXIT_OK, UsageError

NAMES = ("mcp",)
NEEDS_MCP = "the MCP server needs the mcp package: pip install 'vaulteval[mcp]'"


# Optional modules the SDK's imports load when they are installed, for features this server never uses; each is
# skipped as if absent (the importer catches the ImportError), which keeps it off the start-up before
# ``initialize``. jsonschema loads a checker library per string format (rfc3987_syntax builds a grammar at
# import, isoduration loads arrow); formats are checked only with a FormatChecker, which nothing here passes
# (vaulteval checks the tools' arguments itself). httpx loads its command-line client (rich, pygments).
UNUSED_OPTIONAL = ("rfc3987", "rfc3987_syntax", "rfc3986_validator", "rfc3339_validator", "webcolors", "jsonpointer",
                   "uri_template", "isoduration", "fqdn", "httpx._main")


def cmd_mcp(args: argparse.Namespace) -> int:
    for name in UNUSED_OPTIONAL:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    import importlib.util

    if importlib.util.find_spec("mcp") is None:  # (importing the SDK is most of the start-up: done below)
        raise UsageError(NEEDS_MCP)
    from vaulteval.cli.pipeline import _embedder, chosen_pipeline
    from vaulteval.pipeline.retrieve import check_limit
    from vaulteval.server.warm import Served, WarmVault

    if args.bm25_top is not None:
        check_limit("--bm25-top", args.bm25_top)
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be from 0 to 65535, got {args.port}")
    vault = select_vault(args)
    chosen, source, tuned = chosen_pipeline(args, vault)  # what `retrieve` runs with the same flags
    served = Served(chosen, embedder=_embedder(args), tuned=tuned, source=source)
    log = None
    if args.log:
        from vaulteval.pipeline.querylog import QueryLog

        log = QueryLog(args.log, vault)  # refused inside the vault before the server starts
    folder = None
    if args.eval_dir:
        from vaulteval.server.evaltools import eval_folder

        folder = eval_folder(args.eval_dir, vault)  # refused inside the vault before the server starts
    warm = WarmVault(vault, served, log)
    # The index, the stored vectors and the embedder load on a thread from here on, beside the SDK's import and
    # the server: initialize and tools/list are answered as soon as the SDK is in, and a first search by then
    # mostly finds its parts loaded (a call waits only for the parts it needs).
    warm.start_warm_up()
    try:
        try:
            import mcp  # noqa: F401
        except ImportError:
            raise UsageError(NEEDS_MCP) from None
        evals = None
        if folder is not None:
            from vaulteval.server.evaltools import EvalTools

            evals = EvalTools(warm, folder)
        from vaulteval.server.app import build_server

        server = build_server(warm, evals)
        if args.http:
            from vaulteval.server.http import serve

            serve(server, port=args.port, token_file=args.token_file)
        else:
            import anyio

            from vaulteval.server.app import run_stdio

            anyio.run(run_stdio, server)
    finally:
        warm.end_warm_up()
    return EXIT_OK


def register(sub: Any, add_vault: Any) -> None:
    """Add ``mcp`` to ``vaulteval``'s subparsers."""
    from vaulteval.cli.pipeline_args import _add_rerank_flags

    p = sub.add_parser("mcp", help="serve the vault to agents over MCP: search, read, read_many, status "
                                   "(read-only; stdio, or --http on 127.0.0.1)")
    p.add_argument("--strategy", metavar="S", help="the search tool's pipeline, as retrieve --strategy "
                                                   "(default: the vault's tuned pipeline, else its default)")
    p.add_argument("--bm25-top", type=int_arg, help="first-stage candidate chunks, 1..1000 (default: the "
                                                     "pipeline's depth, 100 unless it says)")
    p.add_argument("--no-rerank", action="store_true", help="keep the first-stage order; never contact a model")
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=int_arg, default=8765, help="port for --http (default 8765; 0 picks a free one)")
    p.add_argument("--token-file", metavar="FILE", help="with --http: write this launch's bearer token to FILE "
                                                        "(mode 0600; default $XDG_RUNTIME_DIR/vaulteval/mcp-PORT.token, "
                                                        "else ~/.cache/vaulteval/mcp-PORT.token)")
    p.add_argument("--log", metavar="FILE", help="append each search's question and returned pages to FILE, as "
                                                 "retrieve --log does (outside the vault; nothing is logged without it)")
    p.add_argument("--eval-dir", metavar="DIR", help="also serve the evaluation tools (eval_worksheet, "
                   "eval_add_questions, eval_run, tune), which read and write files only under DIR (outside the "
                   "vault; created when missing)")
    _add_rerank_flags(p)
    add_vault(p)
    p.set_defaults(handler=cmd_mcp)
