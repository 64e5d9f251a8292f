"""Pipeline commands: ``prefix``, ``index``, ``provision``, ``retrieve``, ``rerank``, ``doctor``, ``bench``, ``demo``, ``sample``.

Usage: ``vaulteval retrieve --vault V "query" --top 5 --no-rerank --explain``

Each handler parses, calls one library function and prints; heavy modules are
imported inside handlers so ``retrieve`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from vaulteval.cli.common import emit as _emit, select_vault as _vault
from vaulteval.cli.pipeline_args import EMBEDDERS, PARSERS
from vaulteval.errors import EXIT_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from vaulteval.cli.pipeline_args import AddVault
    from vaulteval.pipeline.spec import Pipeline

NAMES = ("prefix", "index", "provision", "retrieve", "rerank", "doctor", "bench", "demo", "sample")
_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {}


def _cmd(name: str):
    def register(fn: Callable[[argparse.Namespace], int]):
        _HANDLERS[name] = fn
        return fn

    return register


# -- commands --------------------------------------------------------------

@_cmd("prefix")
def cmd_prefix(args: argparse.Namespace) -> int:
    from vaulteval.chunks.store import ChunkParams
    from vaulteval.pipeline.provision import prefix

    if not args.all and not args.page:
        raise UsageError("name a page (its vault-relative path, e.g. wiki/Note.md) or pass --all")
    if args.all and args.page:
        raise UsageError("pass either a page or --all, not both")
    settings = _prefix_settings(args)
    report = prefix(_vault(args), page=args.page, rebuild=args.rebuild, peek=args.peek,
                    params=ChunkParams(), prefix_settings=settings)
    _emit(report.to_dict())
    return EXIT_OK


def _prefix_settings(args: argparse.Namespace):
    tier = "synthetic" if args.no_llm else args.prefix_tier
    if tier == "synthetic" and not args.allow_egress:
        return None
    from vaulteval.chunks.prefix_llm import PrefixSettings, choose_tier, egress_notice

    settings = PrefixSettings(tier=tier, allow_egress=args.allow_egress)
    try:
        chosen = choose_tier(settings)
    except ValueError as exc:  # EgressNotAllowed, or a non-local Ollama host
        raise UsageError(str(exc)) from None
    notice = egress_notice(chosen)
    if notice:
        sys.stderr.write(f"vaulteval: egress: {notice}\n")
    return settings


@_cmd("index")
def cmd_index(args: argparse.Namespace) -> int:
    if args.index_cmd == "build":
        from vaulteval.index.params import check_bm25_params

        check_bm25_params(args.k1, args.b)  # a NaN or negative k1 would rank nonsense with exit 0
    vault = _vault(args)
    if args.index_cmd == "build":
        from vaulteval.pipeline.provision import build

        analyzer = _build_analyzer(args, vault)
        _emit(build(vault, analyzer=analyzer, k1=args.k1, b=args.b).to_dict())
    elif args.index_cmd == "verify":
        from vaulteval.pipeline.doctor import verify_index

        _emit(verify_index(vault))
    elif args.index_cmd == "stats":
        from vaulteval.pipeline.retrieve import Retriever

        _emit(Retriever(vault).index().stats())
    else:
        from vaulteval.pipeline.retrieve import Retriever, check_limit, check_query

        check_query(args.text)
        check_limit("--top", args.top)
        index = Retriever(vault).index()
        hits = index.search(args.text, k=args.top)
        _emit([{"chunk_id": index.doc(h.doc).chunk_id, "score": round(h.score, 6),
                "page_path": index.doc(h.doc).page_path} for h in hits])
    return EXIT_OK


LISTED = 20  # changed pages a provision report lists without --verbose


@_cmd("provision")
def cmd_provision(args: argparse.Namespace) -> int:
    vault = _vault(args, notes_dir_change=args.rebuild)  # --rebuild may move the recorded notes folder
    from vaulteval.pipeline.provision import index_kwargs, provision

    embed, why_not = None, None
    if args.embed:
        embed = _embedder(args).checked()  # settings errors (exit 2) before any work
    elif args.embedder or args.model:
        raise UsageError("--embedder and --model choose the model for --embed; add --embed")
    elif not args.no_embed:
        from vaulteval.pipeline.provision import stored_embedder

        # A vault with stored embeddings keeps them current (with the same backend and model).
        embed, why_not = stored_embedder(vault, allow_remote=args.allow_remote_ollama)
    from vaulteval.pipeline.tuned import tuned_index

    # Without --analyzer, the index keeps the settings `tune --write` chose, else the current index's analyzer,
    # else the default.
    tuned = tuned_index(vault) if args.analyzer is None else None
    if tuned:
        settings = index_kwargs(tuned)
    else:
        settings = {"analyzer": _build_analyzer(args, vault)}
    # An implicit refresh (no --embed) that fails is a warning: the notes, chunks and index are current.
    # A bar redrawn in place belongs on a terminal; in a log or a pipe it is noise.
    bar = embed is not None and not args.quiet and sys.stderr is not None and sys.stderr.isatty()
    report = provision(vault, rebuild=args.rebuild, prefix_settings=_prefix_settings(args), embed=embed,
                       embed_required=args.embed, progress=sys.stderr if bar else None, **settings)
    failure = report.pop("embeddings_not_refreshed", None) or why_not
    if failure is not None:
        from vaulteval.pipeline.provision import embed_refresh_command

        sys.stderr.write(f"vaulteval: warning: stored embeddings not refreshed ({failure}); dense and hybrid skip "
                         f"changed chunks until `{embed_refresh_command(vault)}` succeeds\n")
    from vaulteval.pipeline.provision import summarized

    _emit(summarized(report, None if args.verbose else LISTED))
    return EXIT_OK




def _build_analyzer(args: argparse.Namespace, vault) -> str:
    """``--analyzer``, else the analyzer of the vault's current index (building again keeps it, and the postings
    it can reuse, instead of switching a provisioned vault to another analyzer unasked), else the default."""
    if args.analyzer:
        return args.analyzer
    from vaulteval.errors import NotProvisioned
    from vaulteval.index.reader import open_index
    from vaulteval.pipeline.spec import default_analyzer

    try:
        kept = open_index(vault).analyzer_name
    except (NotProvisioned, OSError, ValueError, KeyError):
        kept = None
    return kept or default_analyzer()


def _embedder(args: argparse.Namespace):
    """The embedder settings the flags name (``--embedder``, ``--model``, ``--timeout``, ``--allow-remote-ollama``),
    as the stages that embed take them (``vaulteval.pipeline.stages.embedder``)."""
    from vaulteval.pipeline.stages.embedder import EmbedderSettings

    return EmbedderSettings(EMBEDDERS[args.embedder or "ollama"], args.model, allow_remote=args.allow_remote_ollama,
                            timeout=args.timeout)


def chosen_pipeline(args: argparse.Namespace, vault) -> "tuple[Pipeline, str, dict | None]":
    """``(pipeline, source, tuned entry)`` for retrieve and the MCP server: ``--strategy`` exactly as written
    (source ``strategy``), else the tuned pipeline, else the vault's default (``vaulteval.pipeline.spec``,
    whose warning, when its stored vectors cannot be read, is one line on stderr); then ``--bm25-top``,
    ``--no-rerank`` and ``--embedder``/``--model`` (a rerank asked for by name) apply."""
    from vaulteval.pipeline.spec import vault_pipeline

    if args.strategy:
        from vaulteval.pipeline.spec import Pipeline

        pipeline, source, tuned = Pipeline.parse(args.strategy), "strategy", None
        pipeline.check_served(vault)  # index settings it names must be the vault's index's own
    else:
        pipeline, source, tuned, warning = vault_pipeline(vault)
        if warning is not None:
            sys.stderr.write(warning + "\n")
    if args.bm25_top is not None:
        pipeline = pipeline.replace(depth=args.bm25_top)
    if args.no_rerank:
        pipeline = pipeline.replace(reranker=None)
    elif args.embedder or args.model:
        from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank

        pipeline = pipeline.replace(reranker=EmbeddingRerank.of(_embedder(args)))
    elif pipeline.reranker is not None:
        # The command's remote permission and timeout reach a reranker the strategy or the tuned pipeline names.
        pipeline = pipeline.replace(reranker=pipeline.reranker.with_embedder(_embedder(args)))
    # The settings are built only for a stage that embeds (a plain query stays lean).
    return (pipeline.with_embedder(_embedder(args)) if pipeline.embeds_query else pipeline), source, tuned


def _check_tuned_index(vault, entry: dict, tuned: dict) -> None:
    """Say so when the index was built with other settings than the tuned strategy was measured on."""
    from vaulteval.pipeline.tuned import entry_index, index_differs

    settings = entry_index(vault, entry)
    if settings is not None:
        tuned["index_matches"] = not index_differs(vault, settings)
        if not tuned["index_matches"]:
            sys.stderr.write("vaulteval: warning: the index was built with other settings than `tune` measured "
                             f"({settings}); run `vaulteval provision` without --analyzer to use them\n")


@_cmd("retrieve")
def cmd_retrieve(args: argparse.Namespace) -> int:
    from vaulteval.pipeline.retrieve import check_limit, check_query, retrieve

    # Usage errors come before vault selection so they are reported as such.
    check_query(args.query)
    check_limit("--top", args.top)
    if args.bm25_top is not None:
        check_limit("--bm25-top", args.bm25_top)
    vault = _vault(args)
    log = None
    if args.log:
        from vaulteval.pipeline.querylog import QueryLog

        log = QueryLog(args.log, vault)  # refused inside the vault before anything runs
    pipeline, source, tuned = chosen_pipeline(args, vault)
    result = retrieve(vault, args.query, top=args.top, pipeline=pipeline, explain=args.explain)
    out = result.with_min_score(args.min_score).to_dict()
    out["pipeline"] = {"text": pipeline.text(), "source": source}
    if tuned is not None:
        out["tuned"] = {"strategy": tuned["strategy"], "run_id": tuned.get("run_id")}
        _check_tuned_index(vault, tuned, out["tuned"])
    if log is not None:
        log.append(result)
    _emit(out)
    return EXIT_OK


@_cmd("rerank")
def cmd_rerank(args: argparse.Namespace) -> int:
    from vaulteval.pipeline.retrieve import check_limit, check_query, retrieve

    embedder = _embedder(args)
    if args.peek:
        _emit(embedder.peek())
        return EXIT_OK
    if not args.query:
        raise UsageError("give a query to rerank, or pass --peek")
    vault = _vault(args)
    check_query(args.query)  # the request's own errors before the embedder's settings, as retrieve orders them
    check_limit("--top", args.top)
    check_limit("--bm25-top", args.bm25_top)
    from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank

    reranker = EmbeddingRerank.of(embedder.checked())
    result = retrieve(vault, args.query, top=args.top, bm25_top=args.bm25_top, rerank=reranker, explain=True)
    sys.stdout.write(result.to_json() + "\n")
    return EXIT_OK


@_cmd("doctor")
def cmd_doctor(args: argparse.Namespace) -> int:
    from vaulteval.pipeline.doctor import doctor

    report = doctor(_vault(args), deep=args.deep)
    if args.json:
        _emit(report.to_dict())
    else:
        print(f"retrieve: {report.state}")
        if report.coexistence:
            print(f"  note: {report.coexistence}")
        for problem in report.problems:
            print(f"  - {problem}")
        for note in report.skipped_notes:
            print(f"  skipped: {note['page_path']}: {note['reason']}")
        if report.exclusions and report.exclusions["configured"]:
            from vaulteval.vault.notefiles import printable

            print(f"  exclusions: {', '.join(map(printable, report.exclusions['configured']))} (.obsidian/app.json)")
        elif report.exclusions and report.exclusions["settings_ignored"]:
            print("  exclusions: none (--ignore-obsidian-settings)")
        if report.empty_pages:
            from vaulteval.vault.notefiles import printable

            shown = ", ".join(printable(p) for p in report.empty_pages[:10])
            more = f" and {len(report.empty_pages) - 10} more" if len(report.empty_pages) > 10 else ""
            print(f"  empty: {len(report.empty_pages)} note(s) with no visible text, not indexed: {shown}{more}")
        _print_unfindable(report.unfindable_notes)
        if report.rebuild:
            print(f"  fix: {report.rebuild}")
    return EXIT_OK if report.state == "verified" else EXIT_FAILED


def _print_unfindable(notes: list[dict]) -> None:
    """One line per note with text that no query can be served from (the first LISTED; --json has them all)."""
    from vaulteval.vault.notefiles import printable

    for note in notes[:LISTED]:
        print(f"  unfindable: {printable(note['page_path'])}: {note['reason']}")
    if len(notes) > LISTED:
        print(f"  unfindable: {len(notes) - LISTED} more note(s) (doctor --json lists every one)")


@_cmd("bench")
def cmd_bench(args: argparse.Namespace) -> int:
    from vaulteval.pipeline.bench import run_bench

    report = run_bench(_vault(args), queries=args.queries, edits=args.edits, work_dir=args.work_dir)
    _emit(report) if args.json else print(report["table"])
    return EXIT_OK


@_cmd("demo")
def cmd_demo(args: argparse.Namespace) -> int:
    from vaulteval.cli.demo import run_demo

    run_demo(args.out, layout=args.layout)
    return EXIT_OK


@_cmd("sample")
def cmd_sample(args: argparse.Namespace) -> int:
    from vaulteval.cli.sample import copy_sample

    print(copy_sample(args.dest, layout=args.layout))
    return EXIT_OK


def register_only(sub: Any, add_vault: AddVault, name: str) -> None:
    """Add one command's parser (what ``vaulteval NAME ...`` needs; keeps ``retrieve`` start-up small)."""
    PARSERS[name](sub, add_vault)
    sub.choices[name].set_defaults(handler=_HANDLERS[name])


def register(sub: Any, add_vault: AddVault) -> None:
    """Add the pipeline commands to ``vaulteval``'s subparsers."""
    for name in NAMES:
        register_only(sub, add_vault, name)
