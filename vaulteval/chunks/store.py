"""Chunk records on disk: the incremental ``prefix`` run.

Usage::

    report = run_prefix(vault, pages=None, rebuild=False, peek=False)

Records live at ``<meta>/chunks/<page-address>/chunk-NNN.json`` in claude-obsidian's
schema, so chunk sets written by claude-obsidian and by vaulteval are
interchangeable. A catalog (``chunk-catalog.json``) remembers each page's hash so
an unchanged page is skipped without reading its chunk files.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from collections.abc import Callable
from typing import TYPE_CHECKING

from vaulteval.chunks import chunking, obsidian
from vaulteval.chunks.catalog import CATALOG_NAME, CATALOG_SCHEMA, ChunkParams, chunk_file_name, \
    listing as _listing, load_catalog, prefix_key
from vaulteval.errors import DuplicateAddress, PageMissing
from vaulteval.vault.metadir import MetaDir, NotRegularFile, open_regular
from vaulteval.vault.testhooks import pause_point

if TYPE_CHECKING:
    from vaulteval.vault.vault import Page, Vault

log = logging.getLogger(__name__)

RECORD_SCHEMA = 1


@dataclass
class PrefixReport:
    pages_seen: int = 0
    pages_changed: int = 0
    pages_skipped: int = 0
    pages_empty: int = 0
    chunks_written: int = 0
    chunks_removed: int = 0
    pages_removed: int = 0
    tier: str = "synthetic"
    prefix_sources: dict[str, int] = field(default_factory=dict)
    peek: bool = False
    changed_pages: list[str] = field(default_factory=list)
    index_invalidated: bool = False
    # What a full run leaves under chunks/: lets provision skip a second directory scan.
    chunk_listing: list[tuple[str, str, int, int]] | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        # Not asdict(): it would deep-copy the chunk listing (a tuple per chunk) only to drop it.
        return {f.name: copy.copy(getattr(self, f.name)) for f in fields(self) if f.name != "chunk_listing"}


def read_pages(vault: "Vault", pages: list["Page"]) -> dict[str, bytes]:
    """Each page's bytes; a page that is not a regular file (a FIFO, a device) is skipped with a warning."""
    out = {}
    for page in pages:
        try:
            with open_regular(page.abspath, follow=True) as fh:
                out[page.rel] = fh.read()
        except NotRegularFile:
            log.warning("skipping %s: not a regular file", page.rel)
        except OSError as exc:
            raise PageMissing(f"cannot read {page.rel}: {exc.strerror}") from None
    return out


def _existing_addresses(chunks: MetaDir | None) -> set[str]:
    if chunks is None:
        return set()
    return {e.name for e in chunks.scandir() if e.is_dir(follow_symlinks=False)}


def _chunk_stats(chunks: MetaDir | None, address: str, count: int) -> list[list[int]] | None:
    """[size, mtime_ns] of chunk-000..count-1, or None when one is missing."""
    if count < 0 or chunks is None:
        return None
    out = []
    for idx in range(count):
        try:
            st = os.stat(f"{address}/chunk-{idx:03d}.json", dir_fd=chunks.fd, follow_symlinks=False)
        except OSError:
            return None
        out.append([st.st_size, st.st_mtime_ns])
    return out


def _record_intact(rec: dict) -> bool:
    """A record whose text still agrees with its own hash and prefix (not edited by hand)."""
    raw, text = rec.get("raw_text"), rec.get("contextualized_text")
    return (
        isinstance(raw, str)
        and isinstance(text, str)
        and text.endswith(raw)
        and chunking.sha256_text(raw) == rec.get("body_hash")
    )


def _existing_records(chunks: MetaDir | None, address: str) -> dict[int, dict]:
    out: dict[int, dict] = {}
    if chunks is None or not chunks.is_dir(address):
        return out
    with chunks.sub(address) as folder:
        for entry in list(folder.scandir()):
            if entry.name.startswith("chunk-") and entry.name.endswith(".json"):
                try:
                    rec = json.loads(folder.read_bytes(entry.name))
                    idx = rec["chunk_index"]
                    if isinstance(idx, int) and not isinstance(idx, bool):
                        out[idx] = rec
                except (OSError, ValueError, KeyError, TypeError, RecursionError):
                    continue
    return out


def build_records(
    parsed: chunking.ParsedPage,
    address: str,
    page_hash: str,
    params: ChunkParams,
    prefixer=None,
) -> list[dict]:
    """Chunk one parsed page into records of claude-obsidian's chunk schema (prefix from ``prefixer`` or synthetic).

    The text is what Obsidian shows (no %%comments%%, link labels, callout titles);
    the page's tags and aliases follow every prefix so a query can find them.
    """
    body = obsidian.visible_text(parsed.body)
    pieces = chunking.split_chunks(body, params.target, params.overlap, params.hard_max)
    terms = obsidian.page_terms(parsed.frontmatter, body)
    synthetic = chunking.synthetic_prefix(parsed.title, body)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    records = []
    for idx, raw in enumerate(pieces):
        prefix, source = synthetic, "synthetic"
        if prefixer is not None:
            generated, source = prefixer.prefix(parsed.title, body, raw)
            prefix = generated if generated else synthetic
        if terms:
            prefix = f"{prefix} {terms}"
        prefix = prefix[: chunking.MAX_PREFIX_CHARS]
        records.append(
            {
                "schema_version": RECORD_SCHEMA,
                "chunk_id": f"{address}:{idx}",
                "page_path": parsed.rel,
                "page_address": address,
                "chunk_index": idx,
                "raw_text": raw,
                "contextualized_text": chunking.contextualize(prefix, raw),
                "prefix": prefix,
                "prefix_source": source,
                "char_count": len(raw),
                "body_hash": chunking.sha256_text(raw),
                "page_body_hash": page_hash,
                "created_at": now,
            }
        )
    return records


def progress_bar(iterable, total: int | None, desc: str, unit: str = "page"):
    """Usage: ``for x in progress_bar(items, len(items), "index", "chunk")``: provisioning's progress."""
    from tqdm import tqdm

    # Only runs longer than a couple of seconds show a bar, on stderr, and only on a terminal.
    return tqdm(iterable, total=total, desc=desc, unit=unit, delay=2.0, leave=False, disable=None)


def _duplicate(address: str, first: str, second: str) -> DuplicateAddress:
    return DuplicateAddress(f"address {address} is declared by both {first} and {second}; "
                            "give one of them a unique address (nothing was changed)")


def run_prefix(
    vault: "Vault",
    *,
    page: str | None = None,
    rebuild: bool = False,
    peek: bool = False,
    params: ChunkParams = ChunkParams(),
    prefix_settings=None,
    page_bytes: dict[str, bytes] | None = None,
    pages: list["Page"] | None = None,
    before_change: Callable[[], bool] = lambda: False,
    meta: MetaDir | None = None,
) -> PrefixReport:
    """Chunk pages into records under the meta dir; the caller holds the vault lock unless ``peek``.

    ``before_change`` runs once, before the first chunk file is written or
    removed; the pipeline passes one that moves the index aside, so an index
    that no longer matches the chunks is never served. It returns whether it
    invalidated anything (reported as ``index_invalidated``). ``meta`` is the
    opened meta folder (``vault_lock`` yields it); every change goes through it.
    """
    own = None
    if meta is None:
        try:
            own = meta = MetaDir.open(vault, create=not peek)
            if not peek:
                meta.check_tree()
        except FileNotFoundError:
            meta = None
    try:
        return _run_prefix(vault, meta, page=page, rebuild=rebuild, peek=peek, params=params,
                           prefix_settings=prefix_settings, page_bytes=page_bytes, pages=pages,
                           before_change=before_change)
    finally:
        if own is not None:
            own.close()


def _run_prefix(vault: "Vault", meta: MetaDir | None, *, page, rebuild, peek, params, prefix_settings,
                page_bytes, pages, before_change) -> PrefixReport:
    chunks = meta.sub("chunks") if meta is not None and meta.is_dir("chunks") else None
    try:
        return _prefix_pages(vault, meta, chunks, page=page, rebuild=rebuild, peek=peek, params=params,
                             prefix_settings=prefix_settings, page_bytes=page_bytes, pages=pages,
                             before_change=before_change)
    finally:
        if chunks is not None:
            chunks.close()


def _prefix_pages(vault: "Vault", meta: MetaDir | None, chunks: MetaDir | None, *, page, rebuild, peek, params,
                  prefix_settings, page_bytes, pages, before_change) -> PrefixReport:
    prefixer = None
    report = PrefixReport(peek=peek)
    if prefix_settings is not None and prefix_settings.tier != "synthetic":
        from vaulteval.chunks.prefix_llm import PrefixGenerator

        prefixer = PrefixGenerator(prefix_settings)
        report.tier = prefixer.tier
        # A preview never calls a provider: no page text leaves the machine on --peek.
        if prefixer.tier == "synthetic" or peek:
            prefixer = None

    all_pages = list(pages) if pages is not None else list(vault.iter_pages())
    if page is not None:
        target = vault.page_path(page)
        if not target.is_file():
            raise PageMissing(f"page {page} does not exist under {vault.notes_label}; check the path")
        selected = [p for p in all_pages if p.rel == page.replace("\\", "/")]
        if not selected:
            raise PageMissing(f"page {page} is not a note vaulteval can read (a .md file under {vault.notes_label}, "
                              "not hidden or excluded)")
    else:
        selected = all_pages
    if page_bytes is None:
        page_bytes = read_pages(vault, selected)
    selected = [p for p in selected if p.rel in page_bytes]  # special files were skipped
    key = prefix_key(report.tier, prefix_settings)
    stored = load_catalog(meta, params, key)
    catalog = {} if rebuild else stored
    # A single-page run keeps every other page's entry; a full run rebuilds the catalog.
    new_catalog = dict(stored) if page is not None else {}

    # Plan every page first so a conflict aborts before anything is written.
    plans: list[tuple[str, chunking.ParsedPage | None, str, str]] = []
    owner: dict[str, str] = {}
    for entry in progress_bar(selected, len(selected), "scan"):
        raw = page_bytes[entry.rel]
        page_hash = chunking.sha256_bytes(raw)
        cached = catalog.get(entry.rel)
        unchanged = bool(cached) and cached.get("hash") == page_hash
        # Trust the catalog only while every chunk file is exactly as this tool left it.
        if unchanged and _chunk_stats(chunks, cached["address"], cached["chunks"]) == cached.get("files"):
            address, parsed = cached["address"], None
        else:
            parsed = chunking.parse_page(raw, entry.rel)
            address = parsed.address or chunking.synthetic_address(entry.rel)
        if address in owner:
            raise _duplicate(address, owner[address], entry.rel)
        owner[address] = entry.rel
        plans.append((entry.rel, parsed, address, page_hash))
    if page is not None:
        # A single-page run must still not collide with pages already in the catalog.
        for rel, info in new_catalog.items():
            if rel != page and info.get("address") in owner and owner[info["address"]] != rel:
                raise _duplicate(info["address"], rel, owner[info["address"]])

    present = _existing_addresses(chunks)
    surplus = sorted(present - set(owner)) if page is None else []
    report.pages_seen = len(plans)
    work = [(rel, parsed, address, h) for rel, parsed, address, h in plans if parsed is not None]
    report.pages_skipped = len(plans) - len(work)
    report.pages_removed = len(surplus)

    written_any = False
    invalidated = False
    for rel, parsed, address, page_hash in progress_bar(work, len(work), "prefix"):
        records = build_records(parsed, address, page_hash, params, prefixer)
        existing = {} if rebuild else _existing_records(chunks, address)
        changed = []
        for rec in records:
            old = existing.get(rec["chunk_index"])
            # Every field but the timestamp: an address, index or prefix edited by hand is rewritten too.
            same = (
                old is not None
                and {k: v for k, v in old.items() if k != "created_at"}
                == {k: v for k, v in rec.items() if k != "created_at"}
                and _record_intact(old)
            )
            if not same:
                changed.append(rec)
        extra = sorted(set(existing) - {r["chunk_index"] for r in records})
        if not records:
            report.pages_empty += 1
        if changed or extra:
            report.pages_changed += 1
            report.changed_pages.append(rel)
        for rec in records:
            report.prefix_sources[rec["prefix_source"]] = report.prefix_sources.get(rec["prefix_source"], 0) + 1
        new_catalog[rel] = {"hash": page_hash, "address": address, "chunks": len(records)}
        if peek:
            report.chunks_written += len(changed)
            report.chunks_removed += len(extra)
            continue
        if not (changed or extra):
            new_catalog[rel]["files"] = _chunk_stats(chunks, address, len(records))
            continue
        if not invalidated:
            report.index_invalidated = before_change()
            invalidated = True
            pause_point("index-invalidated")
        if chunks is None:
            chunks = meta.sub("chunks", create=True)
        with chunks.sub(address, create=True) as folder:
            for rec in changed:
                data = json.dumps(rec, ensure_ascii=False, indent=1).encode("utf-8")
                folder.write_bytes(chunk_file_name(rec["chunk_index"]), data)
                report.chunks_written += 1
                pause_point("chunk-written")
            for idx in extra:
                folder.unlink(chunk_file_name(idx))
                report.chunks_removed += 1
        new_catalog[rel]["files"] = _chunk_stats(chunks, address, len(records))
        written_any = True
    for rel, parsed, address, page_hash in plans:
        if parsed is None:
            new_catalog[rel] = catalog[rel]
    if peek:
        return report
    if surplus:
        if not invalidated:
            report.index_invalidated = before_change()
        for address in surplus:
            with chunks.sub(address) as folder:
                report.chunks_removed += sum(1 for e in folder.scandir()
                                             if e.name.startswith("chunk-") and e.name.endswith(".json"))
            chunks.rmtree(address)
            pause_point("surplus-removed")
        written_any = True
    if page is None:
        report.chunk_listing = _listing(new_catalog)
    if written_any or page is None or not meta.exists(CATALOG_NAME):
        payload = {"schema": CATALOG_SCHEMA, "params": asdict(params), "prefix": key,
                   "chunker": obsidian.CHUNKER_VERSION, "pages": new_catalog}
        meta.write_bytes(CATALOG_NAME, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        pause_point("catalog-written")
    return report
