"""Chunk records on disk: the incremental ``prefix`` run.

Usage::

    report = run_prefix(vault, pages=None, rebuild=False, peek=False)

Records live at ``<meta>/chunks/<page-address>/chunk-NNN.json`` in the seed's
schema, so chunk sets written by claude-obsidian and by vaulteval are
interchangeable. A catalog (``chunk-catalog.json``) remembers each page's hash so
an unchanged page is skipped without reading its chunk files.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

from vaulteval.chunks import chunking
from vaulteval.errors import DuplicateAddress, PageMissing
from vaulteval.vault.locking import atomic_write_bytes

if TYPE_CHECKING:
    from vaulteval.vault.vault import Page, Vault

log = logging.getLogger(__name__)

CATALOG_NAME = "chunk-catalog.json"
CATALOG_SCHEMA = 1
RECORD_SCHEMA = 1


@dataclass(frozen=True)
class ChunkParams:
    target: int = chunking.TARGET_CHARS
    overlap: int = chunking.OVERLAP_CHARS
    hard_max: int = chunking.HARD_MAX_CHARS


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
        out = asdict(self)
        del out["chunk_listing"]
        return out


def chunk_file_name(index: int) -> str:
    return f"chunk-{index:03d}.json"


def read_pages(vault: "Vault", pages: list["Page"]) -> dict[str, bytes]:
    out = {}
    for page in pages:
        try:
            with open(page.abspath, "rb") as fh:
                out[page.rel] = fh.read()
        except OSError as exc:
            raise PageMissing(f"cannot read {page.rel}: {exc.strerror}") from None
    return out


def load_catalog(meta_dir: Path, params: ChunkParams) -> dict[str, dict]:
    try:
        data = json.loads((meta_dir / CATALOG_NAME).read_bytes())
    except (OSError, ValueError):
        return {}
    if data.get("schema") != CATALOG_SCHEMA or data.get("params") != asdict(params):
        return {}
    pages = data.get("pages")
    return pages if isinstance(pages, dict) else {}


def _existing_addresses(chunks_dir: Path) -> set[str]:
    try:
        return {e.name for e in os.scandir(chunks_dir) if e.is_dir(follow_symlinks=False)}
    except FileNotFoundError:
        return set()


def _chunk_stats(chunk_dir: Path | str, count: int) -> list[list[int]] | None:
    """[size, mtime_ns] of chunk-000..count-1, or None when one is missing."""
    if count < 0:
        return None
    out = []
    base = str(chunk_dir)
    for idx in range(count):
        try:
            st = os.stat(f"{base}/chunk-{idx:03d}.json", follow_symlinks=False)
        except OSError:
            return None
        out.append([st.st_size, st.st_mtime_ns])
    return out


def _listing(catalog: dict[str, dict]) -> list[tuple[str, str, int, int]] | None:
    """Every chunk file the catalog vouches for, as (address, name, size, mtime_ns), sorted like a scan."""
    out = []
    for info in catalog.values():
        files = info.get("files")
        if files is None or len(files) != info.get("chunks"):
            return None
        out.extend((info["address"], chunk_file_name(i), size, mtime) for i, (size, mtime) in enumerate(files))
    out.sort(key=lambda item: (item[0], item[1]))
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


def _existing_records(chunk_dir: Path) -> dict[int, dict]:
    out: dict[int, dict] = {}
    try:
        entries = list(os.scandir(chunk_dir))
    except FileNotFoundError:
        return out
    for entry in entries:
        if entry.name.startswith("chunk-") and entry.name.endswith(".json"):
            try:
                rec = json.loads(Path(entry.path).read_bytes())
                out[int(rec["chunk_index"])] = rec
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return out


def build_records(
    parsed: chunking.ParsedPage,
    address: str,
    page_hash: str,
    params: ChunkParams,
    prefixer=None,
) -> list[dict]:
    """Chunk one parsed page into seed-schema records (prefix from ``prefixer`` or synthetic)."""
    pieces = chunking.split_chunks(parsed.body, params.target, params.overlap, params.hard_max)
    synthetic = chunking.synthetic_prefix(parsed.title, parsed.body)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    records = []
    for idx, raw in enumerate(pieces):
        prefix, source = synthetic, "synthetic"
        if prefixer is not None:
            generated, source = prefixer.prefix(parsed.title, parsed.body, raw)
            prefix = generated if generated else synthetic
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


def _progress(iterable, total: int, desc: str):
    from tqdm import tqdm

    # Only runs longer than a couple of seconds show a bar, on stderr, and only on a terminal.
    return tqdm(iterable, total=total, desc=desc, unit="page", delay=2.0, leave=False, disable=None)


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
) -> PrefixReport:
    """Chunk pages into records under the meta dir; the caller holds the vault lock unless ``peek``.

    ``before_change`` runs once, before the first chunk file is written or
    removed; the pipeline passes one that moves the index aside, so an index
    that no longer matches the chunks is never served. It returns whether it
    invalidated anything (reported as ``index_invalidated``).
    """
    meta = vault.meta_dir
    chunks_dir = meta / "chunks"
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
            raise PageMissing(f"page {page} does not exist under wiki/; check the path")
        selected = [p for p in all_pages if p.rel == page.replace("\\", "/")]
        if not selected:
            raise PageMissing(f"page {page} is not a note vaulteval can read (must end in .md inside wiki/)")
    else:
        selected = all_pages
    if page_bytes is None:
        page_bytes = read_pages(vault, selected)
    stored = load_catalog(meta, params)
    catalog = {} if rebuild else stored
    # A single-page run keeps every other page's entry; a full run rebuilds the catalog.
    new_catalog = dict(stored) if page is not None else {}

    # Plan every page first so a conflict aborts before anything is written.
    plans: list[tuple[str, chunking.ParsedPage | None, str, str]] = []
    owner: dict[str, str] = {}
    for entry in _progress(selected, len(selected), "scan"):
        raw = page_bytes[entry.rel]
        page_hash = chunking.sha256_bytes(raw)
        cached = catalog.get(entry.rel)
        unchanged = bool(cached) and cached.get("hash") == page_hash
        # Trust the catalog only while every chunk file is exactly as this tool left it.
        if unchanged and _chunk_stats(f"{chunks_dir}/{cached['address']}", cached.get("chunks", -1)) == cached.get("files"):
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

    present = _existing_addresses(chunks_dir)
    surplus = sorted(present - set(owner)) if page is None else []
    report.pages_seen = len(plans)
    work = [(rel, parsed, address, h) for rel, parsed, address, h in plans if parsed is not None]
    report.pages_skipped = len(plans) - len(work)
    report.pages_removed = len(surplus)

    written_any = False
    invalidated = False
    for rel, parsed, address, page_hash in _progress(work, len(work), "prefix"):
        records = build_records(parsed, address, page_hash, params, prefixer)
        chunk_dir = chunks_dir / address
        existing = {} if rebuild else _existing_records(chunk_dir)
        changed = []
        for rec in records:
            old = existing.get(rec["chunk_index"])
            same = (
                old is not None
                and old.get("body_hash") == rec["body_hash"]
                and old.get("page_body_hash") == page_hash
                and old.get("page_path") == rel
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
            new_catalog[rel]["files"] = _chunk_stats(chunk_dir, len(records))
            continue
        if not invalidated:
            report.index_invalidated = before_change()
            invalidated = True
        for rec in changed:
            data = json.dumps(rec, ensure_ascii=False, indent=1).encode("utf-8")
            atomic_write_bytes(chunk_dir / chunk_file_name(rec["chunk_index"]), data)
            report.chunks_written += 1
        for idx in extra:
            (chunk_dir / chunk_file_name(idx)).unlink(missing_ok=True)
            report.chunks_removed += 1
        new_catalog[rel]["files"] = _chunk_stats(chunk_dir, len(records))
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
            target = chunks_dir / address
            report.chunks_removed += sum(1 for _ in target.glob("chunk-*.json"))
            shutil.rmtree(target, ignore_errors=True)
        written_any = True
    if page is None:
        report.chunk_listing = _listing(new_catalog)
    if written_any or page is None or not (meta / CATALOG_NAME).is_file():
        payload = {"schema": CATALOG_SCHEMA, "params": asdict(params), "pages": new_catalog}
        atomic_write_bytes(meta / CATALOG_NAME, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
    return report
