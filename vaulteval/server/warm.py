"""A vault kept open for many queries, and still verified on every one.

Usage::

    warm = WarmVault(vault, Served(Pipeline(depth=20)))     # vaulteval.pipeline.spec.Pipeline
    warm.start_warm_up()                               # loads behind the server; calls wait for their parts only
    out = warm.search(query="descale", limit=5)        # the retrieve JSON (docs/json.md)
    warm.read(page="[[Descaling#How often]]")          # the read JSON
    warm.status()                                      # doctor's report and the index's age

The ``Retriever`` holds the index, the field index, the stored vectors and its
integrity checker (which remembers each chunk record's and note's verdict by
its stat signature and re-reads a file whose signature changed). The query
embedder stays loaded in the process (``vaulteval.embeddings``). Before each call
one stat per published file (index, field index, stored vectors, ONNX
export) tells whether provisioning published new ones; if so a new
``Retriever`` replaces the old one, while calls already running finish on the
old one. Every call may run on its own thread.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.pipeline.retrieve import Retriever, check_limit, check_query
from vaulteval.pipeline.spec import Pipeline
from vaulteval.server.args import checked
from vaulteval.server.opening import Opening

if TYPE_CHECKING:
    from vaulteval.pipeline.querylog import QueryLog
    from vaulteval.pipeline.stages.embedder import EmbedderSettings
    from vaulteval.server.links import LinkTable
    from vaulteval.vault.vault import Vault

# The files provisioning publishes by rename: a new one has a new inode.
PUBLISHED = ("bm25/index.vti", "bm25/fields.vti", "embeddings/vectors.vtv", "onnx/export.json")
STATUS_SCHEMA = "vaulteval.mcp.status.v1"
READ_MANY_SCHEMA = "vaulteval.mcp.read_many.v1"


@dataclass(frozen=True)
class Served:
    """What a search runs when the caller names no strategy: ``pipeline``, what ``retrieve`` runs with the
    server's flags (``vaulteval.cli.pipeline.chosen_pipeline``), and what is not part of a pipeline.

    ``embedder`` (``vaulteval.pipeline.stages.embedder``) carries the host, timeout and remote permission a
    dense query a call names is embedded with;
    ``tuned`` is the tuned entry the pipeline came from; ``source`` is default, tuned or strategy. A call that
    names its own strategy runs exactly that pipeline (a reranker only when the strategy names one).
    """

    pipeline: Pipeline = field(default_factory=Pipeline)
    embedder: "EmbedderSettings | None" = None
    tuned: dict[str, Any] | None = None
    source: str = "default"  # default, tuned or strategy

    @property
    def label(self) -> str:
        """The pipeline's text, as ``status`` reports it."""
        return self.pipeline.text()


def _published(meta_dir: Path) -> tuple[str, ...]:
    """The paths of the published files, joined once (a call stats them all)."""
    return tuple(os.path.join(meta_dir, rel) for rel in PUBLISHED)


def _signature(paths: tuple[str, ...]) -> tuple:
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


class WarmVault:
    """The server's vault: one warm Retriever, replaced when provisioning publishes new files."""

    def __init__(self, vault: "Vault", served: Served, log: "QueryLog | None" = None):
        self.vault, self.served = vault, served
        self.log = log  # ``mcp --log FILE``: each search's question and pages, as ``retrieve --log`` writes them
        self.log_failed = False
        self._lock = threading.Lock()
        self._published = _published(vault.meta_dir)
        self._signature = _signature(self._published)
        self._retriever = Retriever(vault)
        self.reopened = 0
        self.started_at = time.time()
        self._links: "LinkTable | None" = None
        self._opening = Opening(vault)
        self._warming: threading.Thread | None = None
        self._stopping = False

    def check_vault(self) -> None:
        """Open the vault again as the CLI would when what opening reads changed (``vaulteval.server.opening``):
        raises the CLI's error while it would refuse. New exclusions replace the old ones in place (the warm
        index and link table stay; every walk and check reads the rules anew); another notes folder gets a new
        Retriever and link table."""
        fresh = self._opening.check()
        if fresh is None:
            return
        with self._lock:
            vault = self.vault
            if (fresh.root, fresh.notes_dir, fresh.meta_dir) == (vault.root, vault.notes_dir, vault.meta_dir):
                vault.ignore = fresh.ignore
                return
            self.vault, self._retriever, self._links = fresh, Retriever(fresh), None
            self._published = _published(fresh.meta_dir)
            self._signature = _signature(self._published)
            self.reopened += 1

    def retriever(self) -> Retriever:
        """The current Retriever; a new one when the index or its companions were republished (one stat each)."""
        now = _signature(self._published)
        if now != self._signature:
            with self._lock:
                if now != self._signature:
                    self._retriever = Retriever(self.vault)
                    self._signature = now
                    self.reopened += 1
        return self._retriever

    def start_warm_up(self) -> threading.Thread:
        """Start ``warm_up`` on a background thread and return it: the server answers ``initialize`` and
        ``tools/list`` meanwhile, and a call waits only for the parts it needs (``Retriever``: the first
        caller of a part loads it, the others wait for that load). What fails here is left to the calls,
        which load it again and report it with the CLI's message."""
        thread = self._warming = threading.Thread(target=self._warm_up_quietly, name="vaulteval-warm-up",
                                                  daemon=True)
        thread.start()
        return thread

    def end_warm_up(self) -> None:
        """Stop the background warm-up after its current step and wait for it: a process must not exit while
        that thread is inside a native library (onnxruntime aborts the process then)."""
        self._stopping = True
        if self._warming is not None:
            self._warming.join()

    def _warm_up_quietly(self) -> None:
        try:
            self.warm_up()
        except Exception as exc:  # noqa: BLE001 - never a traceback: the call that needs the part reports it
            import logging

            logging.getLogger(__name__).info("warm-up stopped (the calls load what they need): %s: %s",
                                              type(exc).__name__, exc)

    def warm_up(self) -> None:
        """Open the index (its scorer and preload too), field index and stored vectors, then the query embedder
        with its session, in the order a BM25 search, then a dense one, needs them (missing ones are fine)."""
        from vaulteval.errors import VaultevalError

        retriever = self.retriever()
        try:  # each step only while the server runs (``end_warm_up``)
            # The segmenters stay lazy here: Kiwi holds the GIL for most of its load (about a second), which would
            # stall whatever search runs meanwhile; a query in a CJK script loads its own when it first comes.
            for step in (lambda: retriever.open(analyzers=False), retriever.fields):
                if self._stopping:
                    return
                step()
            store = None if self._stopping else retriever.optional_store()
            if store is None or self._stopping:
                return
            retriever.store_docs()
        except VaultevalError:
            return  # reported by the first search, with the CLI's message
        if store.backend == "sentence-transformers" and not self._stopping:
            from vaulteval.embeddings.embedders import EmbedFailure
            from vaulteval.embeddings.onnxembed import open_store_query_embedder

            # The query embedder (the ONNX export when there is one) stays in the process. One text through it
            # opens its tokenizer and session here rather than in the first query whose vector is not cached.
            try:
                open_store_query_embedder(store, retriever.onnx_dir()).embed(["warm-up"])
            except (EmbedFailure, VaultevalError):
                pass  # the first dense query reports the fallback

    # -- tools ---------------------------------------------------------------
    def search(self, **arguments: Any) -> dict[str, Any]:
        args = checked("search", arguments)
        query = check_query(args["query"])
        limit = check_limit("limit", args.get("limit", 5))
        depth = args.get("bm25_top")
        if depth is not None:
            check_limit("bm25_top", depth)
        pipeline, tuned = self._pipeline(args.get("strategy"))
        depth = depth or pipeline.depth
        first, rerank = pipeline._first, pipeline.reranker
        result = self.retriever().retrieve(query, top=limit, bm25_top=depth, rerank=rerank, first=first)
        result = result.with_min_score(args.get("min_score"))
        if self.log is not None:
            self._log(result)
        out = result.to_dict()
        out["pipeline"] = {"text": Pipeline(first, rerank, depth).text(), "source": self.served.source
                           if args.get("strategy") is None else "strategy"}
        if tuned is not None:
            out["tuned"] = {"strategy": tuned["strategy"], "run_id": tuned.get("run_id")}
        return out

    def _log(self, result: Any) -> None:
        """Append the search to the log; a log that cannot be written is said once on stderr, and the search
        is served all the same (the agent asked a question, not for the log)."""
        from vaulteval.errors import UsageError

        try:
            self.log.append(result)
        except UsageError as exc:
            if not self.log_failed:
                self.log_failed = True
                print(f"vaulteval mcp: {exc}; searches are served but not logged until it can be written",
                      file=sys.stderr, flush=True)

    def _pipeline(self, strategy: str | None) -> tuple[Pipeline, dict[str, Any] | None]:
        """(pipeline, tuned entry) for a call: the server's pipeline, or the named one."""
        served = self.served
        if strategy is None:
            return served.pipeline, served.tuned
        named = Pipeline.parse(strategy)
        named.check_served(self.vault)  # index settings it names must be the vault's index's own
        if served.embedder is not None:
            named = named.with_embedder(served.embedder)
        return named, None

    def links(self) -> "LinkTable":
        """The vault's link table, kept between reads (checked against the notes on every use)."""
        if self._links is None:
            with self._lock:
                if self._links is None:
                    from vaulteval.server.links import LinkTable

                    self._links = LinkTable(self.vault)
        return self._links

    def read(self, **arguments: Any) -> dict[str, Any]:
        args = checked("read", arguments)
        from vaulteval.notes.read import read_note

        resolver, backlinks_of = self.links().current()
        view = read_note(self.vault, args["page"], heading=args.get("heading"), resolver=resolver,
                         backlinks_of=backlinks_of)
        return _line_range(view, args.get("start_line"), args.get("end_line"))

    def read_many(self, **arguments: Any) -> dict[str, Any]:
        args = checked("read_many", arguments)
        from vaulteval.errors import VaultevalError
        from vaulteval.notes.read import read_note

        resolver, backlinks_of = self.links().current()  # one check of the vault for the whole batch
        notes = []
        for page in args["pages"]:
            try:
                notes.append(read_note(self.vault, page, resolver=resolver, backlinks_of=backlinks_of))
            except VaultevalError as exc:
                notes.append({"page": page, "error": str(exc), "exit_code": exc.exit_code})
        return {"schema": READ_MANY_SCHEMA, "notes": notes}

    def status(self, **arguments: Any) -> dict[str, Any]:
        checked("status", arguments)
        from vaulteval.pipeline.doctor import doctor

        report = doctor(self.vault, self.retriever()).to_dict()
        built = (report.get("stats") or {}).get("built_at")
        age = None
        if built:
            when = datetime.strptime(built, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
            age = max(0, round(time.time() - when.timestamp()))
        return {"schema": STATUS_SCHEMA, "state": report["state"], "index_built_at": built,
                "index_age_seconds": age, "server": self.describe(), "doctor": report}

    def describe(self) -> dict[str, Any]:
        return {"strategy": self.served.label, "bm25_top": self.served.pipeline.depth, "reopened": self.reopened,
                "started_at": datetime.fromtimestamp(self.started_at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def _line_range(view: dict[str, Any], start: int | None, end: int | None) -> dict[str, Any]:
    """Keep the lines of ``text`` whose file line numbers are in [start, end] (both optional, from 1)."""
    if start is None and end is None:
        return view
    from vaulteval.errors import UsageError

    first = view["section"]["first_line"] if "section" in view else view["body_first_line"]
    lines = view["text"].split("\n")
    last = first + len(lines) - 1
    lo, hi = start or first, end or last
    if lo > hi:
        raise UsageError(f"start_line {lo} is after end_line {hi}")
    kept = lines[max(lo, first) - first: max(0, min(hi, last) - first + 1)]
    view["text"] = "\n".join(kept)
    view["lines"] = {"first": max(lo, first), "last": min(hi, last), "of_text": [first, last]}
    return view
