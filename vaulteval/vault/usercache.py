"""The user's cache folder, outside every vault: evaluation's index variants and the query path's vectors.

Usage::

    cache_root()                  # $VAULTEVAL_CACHE, else $XDG_CACHE_HOME/vaulteval, else ~/.cache/vaulteval
    query_embed_cache(vault)      # <cache root>/query/<16 hex of the vault's path>/embeddings.sqlite, or None

Retrieval never writes under the vault: the vectors a query computes (its own
and, for a rerank, its candidates') are cached here, one folder per vault.
The folder is keyed by the vault's resolved path, not its content: a query's
vector depends only on the model and the text (the cache's own key), so the
folder only keeps each vault's queries apart, and naming it costs no read of
the notes. A folder that cannot be created, or that would lie inside the
vault, means nothing is cached; retrieval goes on.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.vault.paths import home_path, is_inside

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

log = logging.getLogger(__name__)

QUERY_FOLDER = "query"
CACHE_FILE = "embeddings.sqlite"


def cache_root() -> Path:
    """Usage: ``cache_root()``: $VAULTEVAL_CACHE, else $XDG_CACHE_HOME/vaulteval, else ~/.cache/vaulteval."""
    if os.environ.get("VAULTEVAL_CACHE"):
        return home_path(os.environ["VAULTEVAL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vaulteval"


def vault_key(vault: "Vault") -> str:
    """Usage: ``vault_key(vault)`` -> 16 hex digits of the SHA-256 of the vault's resolved root path."""
    return hashlib.sha256(os.fsencode(vault.root)).hexdigest()[:16]


def query_embed_cache(vault: "Vault") -> Path | None:
    """The query path's embedding cache file for ``vault``, its folder created; None when it cannot be used."""
    try:
        folder = cache_root() / QUERY_FOLDER / vault_key(vault)
        if is_inside(vault.root, folder):
            log.info("the cache folder %s is inside the vault; not caching query vectors", folder)
            return None
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = folder / CACHE_FILE
        if not os.access(folder, os.W_OK | os.X_OK) or (os.path.lexists(path) and not os.access(path, os.W_OK)):
            raise PermissionError(f"{folder} is not writable")
    except (OSError, RuntimeError, ValueError) as exc:  # no home, read-only home, a file in the way
        log.info("no query cache (%s); not caching query vectors", exc)
        return None
    return path
