"""The chunk catalog: what ``prefix`` last wrote for each page, keyed by everything that shapes a record.

Usage::

    table = load_table(meta, ChunkParams(), prefix_key("synthetic"))  # empty when absent, stale or damaged
    records = catalog_listing(meta)                                       # (location, size, crc, chunk id)
    write_catalog(meta, settings, rows)                               # under the vault lock

The catalog lets an unchanged page be skipped without reading it: it holds each
page's hash, its stat signature (size, mtime_ns, inode) and where its records
are in the packed store (``vaulteval.chunks.segments``). It is a binary table
(``vaulteval.chunks.catalogfile``) checked by one CRC-32. It is derived state
and untrusted: a file with other chunk parameters or prefix settings counts as
absent, and a damaged one is refused whole (one warning), so every page is read again.
The JSON catalog of earlier versions (``chunk-catalog.json``, schema 3, and
schema 2 of the one-file-per-record layout) is read once to migrate, then removed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from vaulteval.chunks import catalogfile, chunking
from vaulteval.chunks.catalogfile import CatalogFileError, Table
from vaulteval.chunks.obsidian import CHUNKER_VERSION
from vaulteval.chunks.segments import segment_of

if TYPE_CHECKING:
    from vaulteval.vault.metadir import MetaDir

log = logging.getLogger(__name__)

CATALOG_NAME = "chunk-catalog.vcc"
JSON_NAME = "chunk-catalog.json"  # the catalog before the binary table: read to migrate, then removed
CATALOG_SCHEMA = catalogfile.SCHEMA
JSON_SCHEMA = 3
LEGACY_SCHEMA = 2  # one chunk file per record under chunks/<address>/ (migrated by provision)


@dataclass(frozen=True)
class ChunkParams:
    """How pages are cut into chunks (characters); ``vaulteval.index.params`` validates them."""

    target: int = chunking.TARGET_CHARS
    overlap: int = chunking.OVERLAP_CHARS
    hard_max: int = chunking.HARD_MAX_CHARS


def chunk_file_name(index: int) -> str:
    return f"chunk-{index:03d}.json"


def prefix_key(tier: str, settings=None) -> dict:
    """What, besides the chunk parameters, shapes a record: the prefix tier and its model."""
    model = None
    if settings is not None:
        model = {"ollama": settings.ollama_model, "anthropic-api": settings.anthropic_model}.get(tier)
    return {"tier": tier, "model": model}


def _whole(v: object, top: int = (1 << 63) - 1) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= top


def _valid_entry(info: object, schema: int = JSON_SCHEMA) -> bool:
    """A catalog entry as this tool writes it; anything else is rescanned, never trusted."""
    if not isinstance(info, dict):
        return False
    address, chunks = info.get("address"), info.get("chunks")
    if not (isinstance(info.get("hash"), str) and isinstance(address, str) and chunking.ADDRESS_RE.match(address)):
        return False
    if not _whole(chunks) or chunks > 100_000:
        return False
    if schema == LEGACY_SCHEMA:
        files = info.get("files")
        return files is None or (isinstance(files, list) and len(files) == chunks and all(
            isinstance(f, list) and len(f) == 2 and all(_whole(v) for v in f) for f in files))
    sig, records = info.get("stat"), info.get("records")
    # [size, mtime_ns, inode]; the inode is negative for a note read through a symlink.
    if sig is not None and not (isinstance(sig, list) and len(sig) == 3 and _whole(sig[0]) and _whole(sig[1])
                                and isinstance(sig[2], int) and not isinstance(sig[2], bool)
                                and -(1 << 63) <= sig[2] < 1 << 63):
        return False
    return isinstance(records, list) and len(records) == chunks and all(
        isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and segment_of(r[0]) is not None
        and _whole(r[1], 0xFFFFFFFF) and _whole(r[2], 0xFFFFFFFF) for r in records)


def load_catalog(meta: "MetaDir | None", params: "ChunkParams", key: dict | None = None,
                 schema: int = JSON_SCHEMA) -> dict[str, dict]:
    """The JSON catalog of an earlier version when it was written with these chunk and prefix settings; malformed
    entries dropped. ``schema=LEGACY_SCHEMA`` reads the one of the one-file-per-record layout (for its migration).
    """
    data = _read_json(meta)
    if not isinstance(data, dict) or data.get("schema") != schema or not _same_settings(data, params, key):
        return {}
    pages = data.get("pages")
    if not isinstance(pages, dict):
        return {}
    return {rel: info for rel, info in pages.items() if _valid_entry(info, schema)}


def settings_of(params: "ChunkParams", key: dict | None) -> dict:
    """What a catalog is keyed by: the chunk parameters, the prefix settings and the chunker version."""
    return {"params": asdict(params), "prefix": key or prefix_key("synthetic"), "chunker": CHUNKER_VERSION}


def _same_settings(data: dict, params: "ChunkParams", key: dict | None) -> bool:
    # Other text rules (chunker), prefixes or sizes: every page is re-read (unchanged records are kept).
    return all(data.get(k) == v for k, v in settings_of(params, key).items())


def _read_json(meta: "MetaDir | None") -> object:
    if meta is None:
        return None
    try:
        return json.loads(meta.read_bytes(JSON_NAME))
    except (OSError, ValueError, RecursionError):
        return None


def _read_table(meta: "MetaDir | None", warn: bool = False) -> tuple[dict, Table] | None:
    """The binary catalog, or None when it is absent or refused (``warn``: say why, once, in one line)."""
    if meta is None:
        return None
    try:
        return catalogfile.decode(meta.read_bytes(CATALOG_NAME))
    except FileNotFoundError:
        return None
    except (OSError, CatalogFileError) as exc:
        if warn:
            log.warning("the chunk catalog %s/%s is unusable (%s); every note is read again and the catalog "
                        "rewritten", meta.path, CATALOG_NAME, exc.strerror if isinstance(exc, OSError) else exc)
        return None


def load_table(meta: "MetaDir | None", params: "ChunkParams", key: dict | None = None) -> Table:
    """The catalog's pages when it was written with these settings; an empty table otherwise. A JSON catalog of
    an earlier version is read instead when there is no binary one."""
    loaded = _read_table(meta, warn=True)
    if loaded is not None:
        settings, table = loaded
        return table if settings == settings_of(params, key) else Table.from_entries({})
    return Table.from_entries(load_catalog(meta, params, key))


def write_catalog(meta: "MetaDir", settings: dict, rows: list[tuple]) -> Table:
    """Publish a new catalog (atomically) and remove the JSON one of an earlier version; returns its table."""
    data, table = catalogfile.encode(settings, rows)
    meta.write_bytes(CATALOG_NAME, data, staged="catalog-staged")  # a kill there leaves the old catalog
    meta.unlink(JSON_NAME)
    return table


def read_entries(meta: "MetaDir") -> tuple[dict, dict[str, dict]]:
    """(settings, page -> entry) of the binary catalog: a test's or a tool's view, one dict per page."""
    loaded = _read_table(meta)
    if loaded is None:
        return {}, {}
    settings, table = loaded
    return settings, {rel: table.entry(i) for i, rel in enumerate(table.rels)}


def write_entries(meta: "MetaDir", settings: dict, entries: dict[str, dict]) -> None:
    """Write a catalog of dict entries as given (as another tool, or a test forging one, could)."""
    rows = [(rel, info["address"], info["hash"], tuple(info["stat"]) if info.get("stat") is not None else None,
             info["chunks"], info["records"]) for rel, info in entries.items()]
    write_catalog(meta, settings, sorted(rows, key=lambda row: row[1]))


def written_ns(meta: "MetaDir | None") -> int:
    """When the catalog was last written (its mtime): a page modified since then may hide an edit in one tick."""
    if meta is None:
        return 0
    st = meta.lstat(CATALOG_NAME) or meta.lstat(JSON_NAME)
    return st.st_mtime_ns if st is not None else 0


def segments_named(meta: "MetaDir | None") -> set[str]:
    """The segment files the catalog (binary, and a JSON one not yet migrated: both untrusted) names."""
    out: set[str] = set()
    if meta is None:
        return out
    try:
        out |= set(catalogfile.read_segments(meta.read_bytes(CATALOG_NAME)))
    except (OSError, CatalogFileError):
        pass
    data = _read_json(meta)
    pages = data.get("pages") if isinstance(data, dict) else None
    if isinstance(pages, dict):
        for info in pages.values():
            for r in (info.get("records") if isinstance(info, dict) else None) or []:
                if isinstance(r, list) and r and isinstance(r[0], str) and (name := segment_of(r[0])):
                    out.add(name)
    return out


def catalog_listing(meta: "MetaDir | None") -> list[tuple[str, int, int, str]] | None:
    """Every record a packed-store catalog names, whatever settings wrote it, as (location, size, crc, chunk id)
    in (address, chunk index) order; None when there is no such catalog (``index build`` then scans loose files)."""
    loaded = _read_table(meta)
    if loaded is not None:
        return loaded[1].listing()
    data = _read_json(meta)
    if not isinstance(data, dict) or data.get("schema") != JSON_SCHEMA or not isinstance(data.get("pages"), dict):
        return None
    return Table.from_entries({rel: info for rel, info in data["pages"].items() if _valid_entry(info)}).listing()
