"""The retrieval strategy chosen for a vault by ``vaulteval tune --write``, kept in its ``.vaulteval.json``.

Usage::

    tuned = tuned_strategy(vault)     # {"strategy": "hybrid:rrf", "run_id": "...", ...} or None
    write_tuned(vault, "hybrid:rrf", run_id="20261201-...", evidence={...})   # atomic, under the vault lock

The file is the user's: other keys are kept as they are. It is untrusted
input, so a value that is not a valid first-stage strategy is ignored with a
warning (``retrieve`` then uses BM25) rather than failing every query.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.vault.locking import vault_lock

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

log = logging.getLogger(__name__)

CONFIG_NAME = ".vaulteval.json"
KEY = "retrieve"
MAX_CONFIG_BYTES = 1 << 20


def _read_config(vault: "Vault") -> dict[str, Any] | None:
    path = vault.root / CONFIG_NAME
    try:
        if path.is_symlink() or not path.is_file():
            return None
        raw = path.read_bytes()[: MAX_CONFIG_BYTES + 1]
    except OSError:
        return None
    if len(raw) > MAX_CONFIG_BYTES:
        log.warning("%s is over %d bytes; ignoring it", path, MAX_CONFIG_BYTES)
        return None
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        log.warning("%s is not valid JSON (%s); ignoring it", path, exc)
        return None
    return data if isinstance(data, dict) else None


def tuned_strategy(vault: "Vault") -> dict[str, Any] | None:
    """The stored ``{"strategy", "run_id", ...}`` when present and valid, else None."""
    from vaulteval.pipeline.firststage import FirstStage

    data = _read_config(vault)
    entry = (data or {}).get(KEY)
    if not isinstance(entry, dict) or not isinstance(entry.get("strategy"), str):
        return None
    try:
        FirstStage.parse(entry["strategy"])
    except UsageError as exc:
        log.warning("ignoring the tuned strategy in %s: %s", vault.root / CONFIG_NAME, exc)
        return None
    return entry


def write_tuned(vault: "Vault", strategy: str, *, run_id: str, evidence: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store the chosen first-stage strategy with the run that justified it; returns the entry written."""
    from vaulteval.pipeline.firststage import FirstStage

    FirstStage.parse(strategy)  # never write what retrieve could not read
    vault.require_writable()
    with vault_lock(vault):
        data = _read_config(vault)
        if data is None and (vault.root / CONFIG_NAME).exists():
            raise UsageError(f"{vault.root / CONFIG_NAME} is not a JSON object; fix or remove it before --write")
        data = dict(data or {})
        entry = {"strategy": strategy, "run_id": run_id,
                 "tuned_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **(evidence or {})}
        data[KEY] = entry
        _atomic_write(vault.root / CONFIG_NAME, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return entry


def _atomic_write(path: Path, data: bytes) -> None:
    """Temporary sibling, fsync, rename: a reader sees the old file or the new one, never a part."""
    if path.is_symlink():
        raise UsageError(f"{path} is a symlink; replace it with a regular file before --write")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
