"""Pipeline commands: ``prefix``, ``index``, ``provision``, ``retrieve``, ``rerank``, ``doctor``, ``bench``, ``demo``, ``sample``.

Usage: ``vaulteval retrieve --vault V "query" --top 5 --no-rerank --explain``

Each handler parses, calls one library function and prints; heavy modules are
imported inside handlers so ``retrieve`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from vaulteval.cli.common import emit as _emit, int_arg as _int_arg, select_vault as _vault
from vaulteval.errors import EXIT_FAILED, EXIT_OK, UsageError

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

        _emit(build(vault, analyzer=args.analyzer, k1=args.k1, b=args.b).to_dict())
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


@_cmd("provision")
def cmd_provision(args: argparse.Namespace) -> int:
    vault = _vault(args)
    from vaulteval.pipeline.embed import EmbeddingFailed
    from vaulteval.pipeline.provision import provision

    embed = None
    if args.embed:
        from vaulteval.rerank.config import resolve

        embed = resolve(_rerank_config(args))  # settings errors (exit 2) before any work
    elif args.embedder or args.model:
        raise UsageError("--embedder and --model choose the model for --embed; add --embed")
    elif not args.no_embed:
        from vaulteval.pipeline.provision import stored_embed_config

        embed = stored_embed_config(vault)  # a vault with stored embeddings keeps them current
    from vaulteval.chunks.store import ChunkParams
    from vaulteval.pipeline.tuned import tuned_index

    # Without --analyzer, the index keeps the settings `tune --write` chose (else the defaults).
    tuned = tuned_index(vault) if args.analyzer is None else None
    settings = {"analyzer": tuned["analyzer"], "k1": tuned["k1"], "b": tuned["b"],
                "params": ChunkParams(tuned["target"], tuned["overlap"], tuned["hard_max"])} if tuned else \
        {"analyzer": args.analyzer or "default"}
    try:
        report = provision(vault, rebuild=args.rebuild, prefix_settings=_prefix_settings(args), embed=embed,
                           progress=sys.stderr if embed is not None else None, **settings)
    except EmbeddingFailed as exc:
        if args.embed:
            raise
        # The refresh was implicit: the notes, chunks and index are current; say what is not.
        sys.stderr.write(f"vaulteval: warning: stored embeddings not refreshed ({exc}); dense and hybrid skip "
                         "changed chunks until `vaulteval provision --embed` succeeds\n")
        report = provision(vault, prefix_settings=_prefix_settings(args), **settings)
    _emit(report)
    return EXIT_OK


_EMBEDDERS = {"ollama": "ollama", "st": "sentence-transformers", "sentence-transformers": "sentence-transformers"}


def _rerank_config(args: argparse.Namespace):
    from vaulteval.rerank.stage import RerankConfig

    return RerankConfig(backend=_EMBEDDERS[args.embedder or "ollama"], model=args.model,
                        allow_remote=args.allow_remote_ollama, timeout=args.timeout)


def _first_stage(args: argparse.Namespace, vault):
    """--strategy, else the strategy `vaulteval tune --write` stored for the vault, else BM25."""
    from vaulteval.pipeline.tuned import tuned_strategy

    if args.strategy:
        from vaulteval.pipeline.firststage import FirstStage

        return FirstStage.parse(args.strategy), None
    tuned = tuned_strategy(vault)
    if tuned is None:
        return None, None  # plain BM25: the first-stage module (numpy fusion, dataclasses) is not loaded
    from vaulteval.pipeline.firststage import FirstStage

    return FirstStage.parse(tuned["strategy"]), tuned


def _check_tuned_index(vault, tuned: dict) -> None:
    """Say so when the index was built with other settings than the tuned strategy was measured on."""
    from vaulteval.pipeline.tuned import index_differs, tuned_index

    settings = tuned_index(vault)
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
    check_limit("--bm25-top", args.bm25_top)
    rerank = None if args.no_rerank else _rerank_config(args)
    vault = _vault(args)
    first, tuned = _first_stage(args, vault)
    if first is not None and first.uses_dense:
        first = first.with_embed(_rerank_config(args))  # host, timeout and remote permission for the query
    result = retrieve(vault, args.query, top=args.top, bm25_top=args.bm25_top, rerank=rerank,
                      explain=args.explain, first=first)
    out = result.with_min_score(args.min_score).to_dict()
    if tuned is not None:
        out["tuned"] = {"strategy": tuned["strategy"], "run_id": tuned.get("run_id")}
        _check_tuned_index(vault, out["tuned"])
    _emit(out)
    return EXIT_OK


def _score_arg(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"--min-score needs a number, got {text!r}")
    return value


@_cmd("rerank")
def cmd_rerank(args: argparse.Namespace) -> int:
    from vaulteval.pipeline.retrieve import retrieve
    from vaulteval.rerank.stage import peek

    config = _rerank_config(args)
    if args.peek:
        _emit(peek(config))
        return EXIT_OK
    if not args.query:
        raise UsageError("give a query to rerank, or pass --peek")
    result = retrieve(_vault(args), args.query, top=args.top, bm25_top=args.bm25_top, rerank=config,
                      explain=True)
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
        for problem in report.problems:
            print(f"  - {problem}")
        if report.rebuild:
            print(f"  fix: {report.rebuild}")
    return EXIT_OK if report.state == "verified" else EXIT_FAILED


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


def _add_rerank_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embedder", choices=sorted(_EMBEDDERS),
                   help="embedding backend (default: ollama; st = sentence-transformers, offline)")
    p.add_argument("--model", help="embedding model (default: nomic-embed-text-v2-moe for ollama)")
    p.add_argument("--allow-remote-ollama", action="store_true",
                   help="allow an OLLAMA_HOST that is not this machine (sends query and chunk text there)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds per embedding request (default: 30; a cold model can take a while to load)")


def _add_prefix_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-llm", action="store_true", help="synthetic prefixes only (the default tier)")
    p.add_argument("--prefix-tier", default="synthetic",
                   choices=["synthetic", "ollama", "anthropic-api", "claude-cli", "auto"],
                   help="who writes contextual prefixes (default: synthetic, computed locally)")
    p.add_argument("--allow-egress", action="store_true",
                   help="allow prefix tiers that send page text off this machine")


def _analyzer_arg(text: str) -> str:
    from vaulteval.index.tokenize import get_analyzer

    try:
        get_analyzer(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


AddVault = Callable[[argparse.ArgumentParser], None]
_PARSERS: dict[str, Callable[[Any, AddVault], None]] = {}


def _parser(name: str):
    def register(fn):
        _PARSERS[name] = fn
        return fn

    return register


@_parser("prefix")
def _parse_prefix(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("prefix", help="split pages into chunks with contextual prefixes (.vault-meta/chunks)")
    p.add_argument("page", nargs="?", help="one page, vault-relative (e.g. wiki/Note.md, or Note.md in a plain Obsidian vault)")
    p.add_argument("--all", action="store_true", help="every page; also removes chunks of deleted pages")
    p.add_argument("--rebuild", action="store_true", help="ignore existing chunks and rewrite them")
    p.add_argument("--peek", action="store_true", help="report what would change; write nothing")
    _add_prefix_flags(p)
    _add_vault(p)


@_parser("index")
def _parse_index(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("index", help="build, inspect or query the BM25 index")
    isub = p.add_subparsers(dest="index_cmd", metavar="ACTION", required=True, parser_class=type(p))
    b = isub.add_parser("build", help="index the chunk records (reuses unchanged ones)")
    b.add_argument("--analyzer", choices=["default", "english"], default="default")
    b.add_argument("--k1", type=float, default=1.5)
    b.add_argument("--b", type=float, default=0.75)
    _add_vault(b)
    s = isub.add_parser("stats", help="index statistics as JSON")
    _add_vault(s)
    v = isub.add_parser("verify", help="check every byte of the index against its checksums (exit 10 at the first bad block)")
    _add_vault(v)
    q = isub.add_parser("query", help="raw BM25 hits (no integrity checks, no dedupe)")
    q.add_argument("text")
    q.add_argument("--top", type=_int_arg, default=10)
    _add_vault(q)


@_parser("provision")
def _parse_provision(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("provision", help="prefix --all, then index build, under one lock")
    p.add_argument("--rebuild", action="store_true", help="rewrite every chunk")
    p.add_argument("--analyzer", type=_analyzer_arg, default=None,
                   help="default | english | english:stemmer=snowball|porter|none,stopwords=seed|lucene|none "
                        "(default: the one `tune --write` chose, else default)")
    p.add_argument("--embed", action="store_true",
                   help="also store chunk embeddings in .vault-meta/embeddings/ (only changed chunks are embedded)")
    p.add_argument("--no-embed", action="store_true",
                   help="leave stored embeddings as they are (by default a vault that has them gets them refreshed "
                        "with the same model)")
    _add_prefix_flags(p)
    _add_rerank_flags(p)
    _add_vault(p)


@_parser("retrieve")
def _parse_retrieve(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("retrieve", help="read-only retrieval; prints JSON")
    p.add_argument("query")
    p.add_argument("--top", type=_int_arg, default=5, help="results after dedupe by page, 1..1000 (default 5)")
    p.add_argument("--bm25-top", type=_int_arg, default=20, help="BM25 candidate chunks, 1..1000 (default 20)")
    p.add_argument("--no-rerank", action="store_true", help="keep the BM25 order; never contact a model")
    p.add_argument("--explain", action="store_true", help="add counts and per-stage timings")
    p.add_argument("--min-score", type=_score_arg, metavar="X",
                   help="drop results scoring below X (rerank cosine, else BM25), e.g. the threshold "
                        "`eval run` suggests; the JSON says how many were dropped")
    p.add_argument("--strategy", metavar="S",
                   help="first stage: bm25 | dense | hybrid:rrf[,k=60,w_bm25=1,w_dense=1] | hybrid:cc[,alpha=0.5]; "
                        "bm25 field weights: w_title, w_aliases, w_headings, w_code, w_body "
                        "(default: the vault's tuned strategy, else bm25)")
    _add_rerank_flags(p)
    _add_vault(p)


@_parser("rerank")
def _parse_rerank(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("rerank", help="rerank diagnostics (--peek) or a reranked retrieval")
    p.add_argument("query", nargs="?")
    p.add_argument("--peek", action="store_true", help="which backend and model would be used; embeds nothing")
    p.add_argument("--top", type=_int_arg, default=5)
    p.add_argument("--bm25-top", type=_int_arg, default=20)
    _add_rerank_flags(p)
    _add_vault(p)


@_parser("doctor")
def _parse_doctor(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("doctor", help="is retrieval available, configured, verified or degraded?")
    p.add_argument("--json", action="store_true")
    p.add_argument("--deep", action="store_true", help="also check every byte of the index (as index verify)")
    _add_vault(p)


@_parser("bench")
def _parse_bench(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("bench", help="time provisioning and retrieval on a copy of the vault")
    p.add_argument("--queries", type=_int_arg, default=20)
    p.add_argument("--edits", type=_int_arg, default=10)
    p.add_argument("--work-dir", help="where to put the copy (default: a temporary folder)")
    p.add_argument("--json", action="store_true")
    _add_vault(p)


@_parser("demo")
def _parse_demo(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("demo", help="copy the sample vault to a temporary folder, provision, retrieve, evaluate")
    p.add_argument("--out", help="folder for the demo (default: a new temporary folder)")
    p.add_argument("--layout", choices=["wiki", "plain"], default="wiki",
                   help="wiki: notes in wiki/ (claude-obsidian); plain: notes at the root beside .obsidian/")


@_parser("sample")
def _parse_sample(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("sample", help="copy the bundled sample vault to DEST")
    p.add_argument("dest")
    p.add_argument("--layout", choices=["wiki", "plain"], default="wiki",
                   help="wiki: notes in wiki/ (claude-obsidian); plain: notes at the root beside .obsidian/, "
                        "with an excluded folder, .trash/, attachments and a query set in querysets/")


def register_only(sub: Any, add_vault: AddVault, name: str) -> None:
    """Add one command's parser (what ``vaulteval NAME ...`` needs; keeps ``retrieve`` start-up small)."""
    _PARSERS[name](sub, add_vault)
    sub.choices[name].set_defaults(handler=_HANDLERS[name])


def register(sub: Any, add_vault: AddVault) -> None:
    """Add the pipeline commands to ``vaulteval``'s subparsers."""
    for name in NAMES:
        register_only(sub, add_vault, name)
