"""The chunk catalog: what ``prefix`` last wrote for each page, keyed by everything that shapes a record.

Usage::

    catalog = load_catalog(meta, ChunkParams(), prefix_key("synthetic"))   # {} when absent or stale
    records = catalog_listing(meta)                                        # (location, size, crc, chunk id)

The catalog lets an unchanged page be skipped without reading it: it holds each
page's hash, its stat signature (size, mtime_ns, inode) and where its records
are in the packed store (``vaulteval.chunks.segments``). It is derived state
and untrusted: a file with other chunk parameters or prefix settings counts as
absent, and an entry of the wrong shape is dropped, so that page is simply
rescanned.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from vaulteval.chunks import chunking
from vaulteval.chunks.obsidian import CHUNKER_VERSION
from vaulteval.chunks.segments import segment_of

if TYPE_CHECKING:
    from vaulteval.vault.metadir import MetaDir

CATALOG_NAME = "chunk-catalog.json"
CATALOG_SCHEMA = 3
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


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _valid_entry(info: object, schema: int = CATALOG_SCHEMA) -> bool:
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
                                and isinstance(sig[2], int) and not isinstance(sig[2], bool)):
        return False
    return isinstance(records, list) and len(records) == chunks and all(
        isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and segment_of(r[0]) is not None
        and _whole(r[1]) and _whole(r[2]) for r in records)


def load_catalog(meta: "MetaDir | None", params: "ChunkParams", key: dict | None = None,
                 schema: int = CATALOG_SCHEMA) -> dict[str, dict]:
    """The stored catalog when it was written with these chunk and prefix settings; malformed entries dropped.

    ``schema=LEGACY_SCHEMA`` reads the catalog of the one-file-per-record layout (for its migration).
    """
    data = read_catalog(meta)
    if not isinstance(data, dict) or data.get("schema") != schema or data.get("params") != asdict(params):
        return {}
    if data.get("prefix") != (key or prefix_key("synthetic")):
        return {}
    if data.get("chunker") != CHUNKER_VERSION:
        return {}  # chunked by other text rules: every page is re-read (unchanged records are kept)
    pages = data.get("pages")
    if not isinstance(pages, dict):
        return {}
    return {rel: info for rel, info in pages.items() if _valid_entry(info, schema)}


def read_catalog(meta: "MetaDir | None") -> object:
    """The catalog file's JSON (any shape), or None when it is absent or unreadable."""
    if meta is None:
        return None
    try:
        return json.loads(meta.read_bytes(CATALOG_NAME))
    except (OSError, ValueError, RecursionError):
        return None


def written_ns(meta: "MetaDir | None") -> int:
    """When the catalog was last written (its mtime): a page modified since then may hide an edit in one tick."""
    st = meta.lstat(CATALOG_NAME) if meta is not None else None
    return st.st_mtime_ns if st is not None else 0


def segments_named(catalog: object) -> set[str]:
    """The segment files a catalog (any shape: it is untrusted) names."""
    pages = catalog.get("pages") if isinstance(catalog, dict) else None
    out: set[str] = set()
    if isinstance(pages, dict):
        for info in pages.values():
            for r in (info.get("records") if isinstance(info, dict) else None) or []:
                if isinstance(r, list) and r and isinstance(r[0], str) and (name := segment_of(r[0])):
                    out.add(name)
    return out


def catalog_listing(meta: "MetaDir | None") -> list[tuple[str, int, int, str]] | None:
    """Every record a packed-store catalog names, whatever settings wrote it, as (location, size, crc, chunk id)
    in (address, chunk index) order; None when there is no such catalog (``index build`` then scans loose files)."""
    data = read_catalog(meta)
    if not isinstance(data, dict) or data.get("schema") != CATALOG_SCHEMA or not isinstance(data.get("pages"), dict):
        return None
    entries = sorted((info for info in data["pages"].values() if _valid_entry(info)), key=lambda i: i["address"])
    return [(*r, f"{info['address']}:{i}") for info in entries for i, r in enumerate(info["records"])]
