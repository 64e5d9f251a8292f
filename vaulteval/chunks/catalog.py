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
absent, and a damaged one (or one of another format) is refused whole (one warning),
so every page is read again.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from vaulteval.chunks import catalogfile, chunking
from vaulteval.chunks.catalogfile import CatalogFileError, Table
from vaulteval.chunks.obsidian import CHUNKER_VERSION

if TYPE_CHECKING:
    from vaulteval.vault.metadir import MetaDir

log = logging.getLogger(__name__)

CATALOG_NAME = "chunk-catalog.vcc"
CATALOG_SCHEMA = catalogfile.SCHEMA


@dataclass(frozen=True)
class ChunkParams:
    """How pages are cut into chunks (characters); ``vaulteval.index.params`` validates them."""

    target: int = chunking.TARGET_CHARS
    overlap: int = chunking.OVERLAP_CHARS
    hard_max: int = chunking.HARD_MAX_CHARS


def prefix_key(tier: str, settings=None) -> dict:
    """What, besides the chunk parameters, shapes a record: the prefix tier and its model."""
    model = None
    if settings is not None:
        model = {"ollama": settings.ollama_model, "anthropic-api": settings.anthropic_model}.get(tier)
    return {"tier": tier, "model": model}


def settings_of(params: "ChunkParams", key: dict | None) -> dict:
    """What a catalog is keyed by: the chunk parameters, the prefix settings and the chunker version."""
    return {"params": asdict(params), "prefix": key or prefix_key("synthetic"), "chunker": CHUNKER_VERSION}


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
    """The catalog's pages when it was written with these settings; an empty table otherwise."""
    loaded = _read_table(meta, warn=True)
    if loaded is not None and loaded[0] == settings_of(params, key):
        return loaded[1]
    return Table.from_entries({})


def write_catalog(meta: "MetaDir", settings: dict, rows: list[tuple]) -> Table:
    """Publish a new catalog (atomically); returns its table."""
    data, table = catalogfile.encode(settings, rows)
    meta.write_bytes(CATALOG_NAME, data, staged="catalog-staged")  # a kill there leaves the old catalog
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
    st = meta.lstat(CATALOG_NAME)
    return st.st_mtime_ns if st is not None else 0


def segments_named(meta: "MetaDir | None") -> set[str]:
    """The segment files the catalog (untrusted) names."""
    if meta is None:
        return set()
    try:
        return set(catalogfile.read_segments(meta.read_bytes(CATALOG_NAME)))
    except (OSError, CatalogFileError):
        return set()


def catalog_listing(meta: "MetaDir | None") -> list[tuple[str, int, int, str]] | None:
    """Every record a packed-store catalog names, whatever settings wrote it, as (location, size, crc, chunk id)
    in (address, chunk index) order; None when there is no usable catalog."""
    loaded = _read_table(meta)
    return loaded[1].listing() if loaded is not None else None
