"""Provisioning: ``prefix --all`` then ``index build``, under one vault lock.

Usage: ``report = provision(vault)``; ``report["index"]["docs"]``.

Nothing a reader uses is moved aside: new records go to a new segment of the
packed store, the index names its segments, and the atomic rename of
``bm25/index.vti`` publishes the new generation. A reader keeps the generation
it opened; a killed writer leaves the previous one in service, and the next
writer removes its leftovers (``vaulteval.pipeline.storegc``).
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from vaulteval.pipeline.bulk import bulk_work
from vaulteval.index import bm25
from vaulteval.chunks.catalog import ChunkParams, segments_named
from vaulteval.chunks.packing import run_prefix
from vaulteval.index.params import check_bm25_params, check_chunk_params
from vaulteval.pipeline.storegc import collect, segments_in_service
from vaulteval.errors import UsageError, WriteFailed
from vaulteval.vault.locking import vault_lock
from vaulteval.vault.notesrecord import write_notes_record

SCHEMA = "vaulteval.provision.v1"

if TYPE_CHECKING:
    from vaulteval.pipeline.stages.embedder import EmbedderSettings
    from vaulteval.vault.vault import Vault


@contextlib.contextmanager
def _writing(vault: "Vault") -> Iterator[Any]:
    """The vault lock, with a write failure turned into one line; the previous generation stays in service.
    Garbage is collected less often meanwhile (``bulk_work``).
    """
    try:
        with vault_lock(vault) as meta, bulk_work():
            yield meta
    except OSError as exc:
        raise WriteFailed(f"cannot write derived state in {vault.meta_dir}: {exc.strerror or exc}; "
                          "nothing in your notes changed and the previous index, if any, is still served") from None


def prefix(vault: "Vault", *, page: str | None = None, rebuild: bool = False, peek: bool = False,
           params: ChunkParams = ChunkParams(), prefix_settings=None):
    """Usage: ``prefix(vault, peek=True).to_dict()``; writes only when ``peek`` is false."""
    if page is not None:
        target = vault.linked_note(page)  # PathEscape (exit 2) for a link that leads out of the notes
        if target is not None:
            raise UsageError(f"{page} is a symlink to {target}, which is indexed under its own path; "
                             f"run vaulteval prefix {vault.vault_args} {shlex.quote(target)}")
    if peek:
        return run_prefix(vault, page=page, rebuild=rebuild, peek=True, params=params,
                          prefix_settings=prefix_settings)
    vault.require_writable()
    with _writing(vault) as meta:
        before = segments_in_service(meta)
        report = run_prefix(vault, page=page, rebuild=rebuild, params=params, prefix_settings=prefix_settings,
                            meta=meta)
        _collect(meta, before)
        return report


def _collect(meta: Any, before: set[str], cataloged: set[str] | None = None) -> dict[str, int]:
    """Remove what neither the index in service, the one served when the run started, nor the catalog needs
    (``cataloged``: the segments the catalog just written names)."""
    if cataloged is None:
        cataloged = segments_named(meta)
    keep = before | segments_in_service(meta) | cataloged
    return collect(meta, keep)


def build(vault: "Vault", *, analyzer: str = "default", k1: float = bm25.K1, b: float = bm25.B,
          page_hashes: dict[str, str] | None = None, chunk_params: ChunkParams | None = None):
    """Usage: ``build(vault, analyzer="english")``: rebuild the index under the vault lock."""
    from dataclasses import asdict

    from vaulteval.index.build import build_index
    from vaulteval.index.fieldbuild import FieldCollector

    vault.require_writable()
    check_bm25_params(k1, b)
    with _writing(vault) as meta:
        before = segments_in_service(meta)
        fields = FieldCollector(vault, analyzer)
        report = build_index(vault, analyzer=analyzer, k1=k1, b=b, page_hashes=page_hashes,
                             chunk_params=asdict(chunk_params or ChunkParams()), meta=meta, fields=fields)
        _build_fields(vault, meta, report.doc_rows, fields, report.unchanged)
        _collect(meta, before)
    vault._index = None
    return report


def ensure_fields(vault: "Vault") -> bool:
    """Build the field index beside an index that lacks it (an older provision); True when one was built."""
    from vaulteval.index.fields import fields_path

    if fields_path(vault.meta_dir).is_file():
        return False
    with _writing(vault) as meta:
        _build_fields(vault, meta)
    return True


def _build_fields(vault: "Vault", meta: Any, docs: list | None = None, collected: Any = None,
                  kept: bool = False) -> None:
    """The title/aliases/headings/code postings beside the index just built (field-weighted BM25);
    ``docs`` are its rows when the build just made them (else they are read from the index), ``collected``
    the field terms the build took from the chunks it read. ``kept``: the build kept the index in service
    (``BuildReport.unchanged``); a field file that a build would write again as it is stays too."""
    from vaulteval.index.fieldbuild import build_fields, fields_current
    from vaulteval.index.reader import BM25Index, index_path, open_index_file

    # Through the folder pinned when the lock was taken, never the path again (it may now lead elsewhere).
    index = BM25Index(index_path(vault.meta_dir), open_index_file(meta))
    if kept and docs is not None and fields_current(meta, index, docs):
        return
    build_fields(vault, index, meta, docs, collected)


def provision(
    vault: "Vault",
    *,
    rebuild: bool = False,
    analyzer: str = "default",
    k1: float = bm25.K1,
    b: float = bm25.B,
    params: ChunkParams = ChunkParams(),
    prefix_settings=None,
    embed: "EmbedderSettings | None" = None,
    embed_required: bool = True,
    progress: "IO[str] | None" = None,
) -> dict[str, Any]:
    """Prefix every page and build the index in one locked step; returns both reports and timings.

    A notes folder named by ``--notes-dir`` (``vault.notes_origin == "flag"``) is recorded in
    ``.vault-meta/vaulteval/notes-folder.json``, so every later command finds it without the flag.

    With ``embed`` (``EmbedderSettings`` naming backend and model), the chunk vectors
    are then stored in ``.vault-meta/vaulteval/embeddings/`` under the same lock; only
    chunks whose text changed are embedded. With ``embed_required=False`` an
    embedding failure leaves the store as it was and is returned under
    ``embeddings_not_refreshed`` instead of raised (the notes, chunks and index
    are current either way).
    """
    from dataclasses import asdict

    from vaulteval.index.analysis import lookup
    from vaulteval.index.build import build_index
    from vaulteval.index.fieldbuild import FieldCollector

    check_bm25_params(k1, b)
    check_chunk_params(params.target, params.overlap, params.hard_max)
    vault.require_writable()
    with _writing(vault) as meta:
        t0 = time.perf_counter()
        before = segments_in_service(meta)
        signatures: dict[str, tuple[int, int, int]] = {}  # each note's stat, taken by the walk
        pages = list(vault.iter_pages(signatures))
        # The analyzer's optional pre-analysis (auto: Kiwi on the second core) takes each record as it is written.
        pre = lookup(analyzer).pre_analyze()
        try:
            prefix_report = run_prefix(vault, rebuild=rebuild, params=params, prefix_settings=prefix_settings,
                                       pages=pages, meta=meta, signatures=signatures,
                                       on_record=pre.offer_record if pre is not None else None)
            t1 = time.perf_counter()
            # The field index takes its terms in the build's pass, titles and aliases from the bytes just read.
            fields = FieldCollector(vault, analyzer, prefix_report.page_bytes, prefix_report.parsed)
            index_report = build_index(vault, analyzer=analyzer, k1=k1, b=b, page_hashes=prefix_report.page_hashes,
                                       chunk_params=asdict(params), listing=prefix_report.chunk_listing, meta=meta,
                                       fields=fields, written=prefix_report.written, keep_unchanged=True,
                                       pre=pre)
        finally:
            if pre is not None:  # the fields take its terms below: closed, it keeps what it gave back
                pre.close()
        refused = {prefix_report.addresses.get(cid.partition(":")[0]) for cid in index_report.rejected_ids} - {None}
        # A page skipped on the catalog's word (its stat unchanged, not read) whose records turn out stale: the
        # catalog's hash was wrong, so read it.
        refused |= {rel for rel in index_report.stale_pages if rel not in prefix_report.page_bytes
                    and rel in prefix_report.page_hashes}
        if refused:  # records the build could not use (damaged or malformed in place): chunk those pages again
            again = run_prefix(vault, rebuild=rebuild, params=params, prefix_settings=prefix_settings,
                               pages=pages, meta=meta, distrust=frozenset(refused), signatures=signatures)
            prefix_report.chunks_written += again.chunks_written
            prefix_report.segments = again.segments
            fields = FieldCollector(vault, analyzer, again.page_bytes, again.parsed)
            index_report = build_index(vault, analyzer=analyzer, k1=k1, b=b, page_hashes=again.page_hashes,
                                       chunk_params=asdict(params), listing=again.chunk_listing, meta=meta,
                                       fields=fields, written=again.written, keep_unchanged=True)
        _build_fields(vault, meta, index_report.doc_rows, fields, index_report.unchanged)
        prefix_report.page_bytes, prefix_report.written, prefix_report.parsed = {}, {}, {}
        del fields
        t2 = time.perf_counter()
        embed_report, embed_failure = None, None
        if embed is not None:
            from vaulteval.pipeline.embed import EmbeddingFailed, embed_vault

            try:
                embed_report = embed_vault(vault, embed, meta, progress=progress).to_dict()
            except EmbeddingFailed as exc:
                if embed_required:
                    raise
                embed_failure = str(exc)
        if vault.notes_origin == "flag":
            write_notes_record(meta, vault.notes_rel)
        collected = _collect(meta, before, prefix_report.segments)
        t3 = time.perf_counter()
    vault._index = None
    out = {
        "schema": SCHEMA,
        "prefix": prefix_report.to_dict(),
        "index": index_report.to_dict(),
        "seconds": {"prefix": round(t1 - t0, 3), "index": round(t2 - t1, 3), "total": round(t3 - t0, 3)},
    }
    if embed_report is not None:
        out["embeddings"] = embed_report
        out["seconds"]["embed"] = round(t3 - t2, 3)
    if embed_failure is not None:
        out["embeddings_not_refreshed"] = embed_failure
    out["store"] = collected
    return out


def summarized(report: dict[str, Any], limit: int | None) -> dict[str, Any]:
    """The provision report with at most ``limit`` (None: all) of ``prefix.changed_pages``, and
    ``prefix.changed_pages_more`` counting the rest (0 when all are listed): a first provision of a large vault
    changes every page."""
    prefix_report = dict(report["prefix"])
    pages = prefix_report.get("changed_pages", [])
    listed = pages if limit is None else pages[:limit]
    prefix_report["changed_pages"], prefix_report["changed_pages_more"] = listed, len(pages) - len(listed)
    return {**report, "prefix": prefix_report}


def index_kwargs(settings: dict[str, Any]) -> dict[str, Any]:
    """``provision`` keywords for checked index settings (``tuned.check_index_settings``)."""
    return {"analyzer": settings["analyzer"], "k1": settings["k1"], "b": settings["b"],
            "params": ChunkParams(settings["target"], settings["overlap"], settings["hard_max"])}


def provision_tuned(vault: "Vault", settings: dict[str, Any], *, progress: "IO[str] | None" = None) -> dict[str, Any]:
    """Rebuild the vault's index with a tuned strategy's index settings; re-embed changed chunks when a store exists.

    Usage: ``provision_tuned(vault, {"analyzer": "english", "k1": 1.5, "b": 0.75, "target": 2000, ...})``
    """
    embed, why_not = stored_embedder(vault)
    report = provision(vault, embed=embed, embed_required=False, progress=progress, **index_kwargs(settings))
    if why_not is not None:
        report["embeddings_not_refreshed"] = why_not
    return report


def stored_embedder(vault: "Vault", *, allow_remote: bool = False) -> "tuple[EmbedderSettings | None, str | None]":
    """(the backend and model of the vault's stored embeddings, to keep them current; why they cannot be).

    No usable store gives (None, None). A store whose backend may not be used from here (an
    ``OLLAMA_HOST`` on another machine without ``allow_remote``) gives (None, the reason).
    """
    from vaulteval.embeddings.store import StoreError, open_store
    from vaulteval.hosts import RerankConfigError
    from vaulteval.pipeline.stages.embedder import EmbedderSettings

    try:
        store = open_store(vault.meta_dir)
    except StoreError:
        return None, None
    try:
        return EmbedderSettings.of_store(store, allow_remote=allow_remote).checked(), None
    except RerankConfigError as exc:
        return None, str(exc)


def embed_refresh_command(vault: "Vault") -> str:
    """The command that refreshes the vault's stored embeddings with the backend and model that made them (a bare
    ``--embed`` would embed with Ollama's default model), with ``--allow-remote-ollama`` when Ollama is remote."""
    import shlex

    from vaulteval.embeddings.models import DEFAULT_OLLAMA_MODEL, is_shipped_name
    from vaulteval.embeddings.store import StoreError, open_store
    from vaulteval.hosts import host_is_local, host_setting

    try:
        store = open_store(vault.meta_dir)
    except StoreError:
        return "vaulteval provision --embed"
    parts = ["vaulteval provision --embed"]
    if store.backend == "sentence-transformers":
        parts.append("--embedder st")
        if store.model and not is_shipped_name(store.model):
            parts.append(f"--model {shlex.quote(store.model)}")
    else:
        parts.append("--embedder ollama")
        if store.model and store.model not in (DEFAULT_OLLAMA_MODEL, f"{DEFAULT_OLLAMA_MODEL}:latest"):
            parts.append(f"--model {shlex.quote(store.model)}")
        if not host_is_local(host_setting(None)):
            parts.append("--allow-remote-ollama")
    return " ".join(parts)
