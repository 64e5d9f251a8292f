"""The chunk catalog: what ``prefix`` last wrote for each page, keyed by everything that shapes a record.

Usage::

    catalog = load_catalog(meta, ChunkParams(), prefix_key("synthetic"))   # {} when absent or stale
    files = listing(catalog)                                               # what it vouches for

The catalog lets an unchanged page be skipped without reading its chunk files.
It is derived state and untrusted: a file with other chunk parameters or prefix
settings counts as absent, and an entry of the wrong shape is dropped, so that
page is simply rescanned.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from vaulteval.chunks import chunking
from vaulteval.chunks.obsidian import CHUNKER_VERSION

if TYPE_CHECKING:
    from vaulteval.vault.metadir import MetaDir

CATALOG_NAME = "chunk-catalog.json"
CATALOG_SCHEMA = 2


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


def _valid_entry(info: object) -> bool:
    """A catalog entry as this tool writes it; anything else is rescanned, never trusted."""
    if not isinstance(info, dict):
        return False
    address, chunks, files = info.get("address"), info.get("chunks"), info.get("files")
    if not (isinstance(info.get("hash"), str) and isinstance(address, str) and chunking.ADDRESS_RE.match(address)):
        return False
    if not isinstance(chunks, int) or isinstance(chunks, bool) or not 0 <= chunks <= 100_000:
        return False
    if files is None:
        return True
    return isinstance(files, list) and len(files) == chunks and all(
        isinstance(f, list) and len(f) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in f)
        for f in files)


def load_catalog(meta: "MetaDir | None", params: "ChunkParams", key: dict | None = None) -> dict[str, dict]:
    """The stored catalog when it was written with these chunk and prefix settings; malformed entries dropped."""
    if meta is None:
        return {}
    try:
        data = json.loads(meta.read_bytes(CATALOG_NAME))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != CATALOG_SCHEMA or data.get("params") != asdict(params):
        return {}
    if data.get("prefix") != (key or prefix_key("synthetic")):
        return {}
    if data.get("chunker") != CHUNKER_VERSION:
        return {}  # chunked by other text rules: every page is re-read (unchanged records are kept)
    pages = data.get("pages")
    if not isinstance(pages, dict):
        return {}
    return {rel: info for rel, info in pages.items() if _valid_entry(info)}


def listing(catalog: dict[str, dict]) -> list[tuple[str, str, int, int]] | None:
    """Every chunk file the catalog vouches for, as (address, name, size, mtime_ns), sorted like a scan."""
    out = []
    for info in catalog.values():
        files = info.get("files")
        if files is None or len(files) != info.get("chunks"):
            return None
        out.extend((info["address"], chunk_file_name(i), size, mtime) for i, (size, mtime) in enumerate(files))
    out.sort(key=lambda item: (item[0], item[1]))
    return out
