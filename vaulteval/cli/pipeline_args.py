"""The argument parsers of the pipeline commands (``vaulteval.cli.pipeline`` holds their handlers).

Usage: ``PARSERS["retrieve"](sub, add_vault)`` adds one command's parser; ``vaulteval.cli.pipeline``
builds only the one a command line names.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from vaulteval.cli.common import int_arg as _int_arg
from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    AddVault = Callable[[argparse.ArgumentParser], None]  # subscripting Callable at run time imports typing

EMBEDDERS = {"ollama": "ollama", "st": "sentence-transformers", "sentence-transformers": "sentence-transformers"}


def _score_arg(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"--min-score needs a number, got {text!r}")
    return value


def _add_rerank_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embedder", choices=sorted(EMBEDDERS),
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
    from vaulteval.index.analysis import lookup

    try:
        lookup(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


PARSERS: dict[str, Callable[[Any, AddVault], None]] = {}


def _parser(name: str):
    def register(fn):
        PARSERS[name] = fn
        return fn

    return register


@_parser("prefix")
def _parse_prefix(sub: Any, _add_vault: "AddVault") -> None:
    p = sub.add_parser("prefix", help="split pages into chunks with contextual prefixes (.vault-meta/vaulteval/chunks)")
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
    b.add_argument("--analyzer", type=_analyzer_arg, default=None,
                   help="as provision --analyzer (default: the current index's, else as provision picks)")
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
                   help="default | english | english:stemmer=snowball|porter|none,stopwords=short|lucene|none "
                        "| auto (each chunk in its own language) | a language analyzer: german, spanish, russian, "
                        "chinese, japanese, korean, ... with :fold=yes|no, :compounds=yes|no, :stopwords=none "
                        "(vaulteval[languages]; default: the one `tune --write` chose, else the current index's, else auto when the "
                        "languages extra is installed, else default)")
    p.add_argument("--embed", action="store_true",
                   help="also store chunk embeddings in .vault-meta/vaulteval/embeddings/ (only changed chunks are embedded)")
    p.add_argument("--no-embed", action="store_true",
                   help="leave stored embeddings as they are (by default a vault that has them gets them refreshed "
                        "with the same model)")
    p.add_argument("--verbose", action="store_true",
                   help="list every changed page in the report (by default it lists the first 20 and counts the rest)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar on stderr (there is one, with rate and ETA, while chunks are embedded and "
                        "stderr is a terminal)")
    _add_prefix_flags(p)
    _add_rerank_flags(p)
    _add_vault(p)


@_parser("retrieve")
def _parse_retrieve(sub: Any, _add_vault: "AddVault") -> None:
    from vaulteval.pipeline.stages import FIRST_STAGE_MODULES  # names only: neither a stage nor the registry

    p = sub.add_parser("retrieve", help="read-only retrieval; prints JSON")
    p.add_argument("query")
    p.add_argument("--top", type=_int_arg, default=5, help="results after dedupe by page, 1..1000 (default 5)")
    p.add_argument("--bm25-top", type=_int_arg, help="first-stage candidate chunks, 1..1000 "
                                                      "(default: the pipeline's depth, 100 unless it says)")
    p.add_argument("--no-rerank", action="store_true", help="keep the first-stage order; never contact a model")
    p.add_argument("--explain", action="store_true", help="add counts and per-stage timings")
    p.add_argument("--min-score", type=_score_arg, metavar="X",
                   help="drop results scoring below X (rerank cosine, else BM25), e.g. the threshold "
                        "`eval run` suggests; the JSON says how many were dropped")
    p.add_argument("--strategy", metavar="S",
                   help=f"the pipeline, run exactly as written: {' | '.join(FIRST_STAGE_MODULES)} or rerank:st, "
                        "with their keys as in `eval run --strategy` (e.g. hybrid:cc,alpha=0.3, "
                        "hybrid:cc,rerank=st, bm25_top=50) (default: the vault's tuned pipeline, else the "
                        "default: hybrid:cc with stored vectors, bm25 without)")
    p.add_argument("--log", metavar="FILE",
                   help="append the query, time, strategy and returned pages to FILE (JSONL, outside the vault); "
                        "nothing is logged without it")
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
