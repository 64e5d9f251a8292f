"""The retrieval strategy chosen for a vault by ``vaulteval tune --write``, kept in its ``.vaulteval.json``.

Usage::

    tuned = tuned_strategy(vault)     # {"strategy": "hybrid:rrf", "rerank": None, "bm25_top": 100, ...} or None
    settings = tuned_index(vault)     # {"analyzer": "english", "k1": 1.5, ...}: what provision builds
    write_tuned(vault, "hybrid:rrf", run_id="20261201-...", evidence={...}, index=settings)  # atomic, locked

``retrieve`` runs the stored pipeline by default: the first stage, the
reranker (``null``: none, so no Ollama rerank is added) and the candidate
depth. The analyzer, BM25 parameters and chunk sizes belong to the index. ``tune --write`` therefore also
stores them under ``index``, and ``provision`` builds with them unless it is
given ``--analyzer``.

The file is the user's: other keys are kept as they are. It is untrusted
input, so a value that is not a valid first-stage strategy is ignored with a
warning (``retrieve`` then uses BM25) rather than failing every query.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.vault.atomic import write_atomic

if TYPE_CHECKING:
    from typing import Any

    from vaulteval.vault.vault import Vault



def _warn(message: str, *args: object) -> None:
    # Imported only with something to say: every retrieve reads this file, and its start stays lean.
    import logging

    logging.getLogger(__name__).warning(message, *args)


CONFIG_NAME = ".vaulteval.json"
KEY = "retrieve"
MAX_CONFIG_BYTES = 1 << 20


def _read_config(vault: "Vault") -> dict[str, Any] | None:
    from vaulteval.vault.bounded import Refused, load_json
    from vaulteval.vault.metadir import TooLarge, read_capped

    path = vault.root / CONFIG_NAME
    try:
        if path.is_symlink() or not path.is_file():
            return None
        raw = read_capped(path, MAX_CONFIG_BYTES)  # regular files only: a FIFO swapped in is never waited on
    except TooLarge:
        _warn("%s is over %d bytes; ignoring it", path, MAX_CONFIG_BYTES)
        return None
    except OSError:
        return None
    try:
        data = load_json(raw) if raw.strip() else {}
    except Refused as exc:
        _warn("%s is not valid JSON (%s); ignoring it", path, exc)
        return None
    return data if isinstance(data, dict) else None


def tuned_strategy(vault: "Vault") -> dict[str, Any] | None:
    """The stored ``{"strategy", "run_id", ...}`` when present and valid, else None."""
    data = _read_config(vault)
    entry = (data or {}).get(KEY)
    if not isinstance(entry, dict) or not isinstance(entry.get("strategy"), str):
        return None
    from vaulteval.pipeline.stages.registry import parse_first_stage

    try:
        parse_first_stage(entry["strategy"])
        check_pipeline(entry.get("rerank"), entry.get("bm25_top"))
    except UsageError as exc:
        _warn("ignoring the tuned strategy in %s: %s", vault.root / CONFIG_NAME, exc)
        return None
    return entry


def check_pipeline(rerank: Any, bm25_top: Any) -> None:
    """The tuned reranker (None, ``{"backend", "model"}`` of the embedding reranker, or another reranker's
    ``{"stage": NAME, KEY: VALUE}``) and candidate depth are what retrieve can run."""
    if isinstance(rerank, dict) and "stage" in rerank:
        from vaulteval.pipeline.stages import registry

        values = {k: v for k, v in rerank.items() if k != "stage"}
        found = registry.stage(str(rerank["stage"]))
        if found.role != "rerank":
            raise UsageError(f"rerank names {found.name!r}, which is not a reranker")
        found(**values).checked()
    elif rerank is not None:
        from vaulteval.pipeline.stages.embedder import BACKENDS, EmbedderSettings

        if (not isinstance(rerank, dict) or set(rerank) - {"backend", "model"} or rerank.get("backend") not in BACKENDS
                or not isinstance(rerank.get("model"), (str, type(None)))):
            raise UsageError(f"rerank must be null or {{\"backend\": {' | '.join(BACKENDS)}, \"model\": name}}")
        EmbedderSettings(rerank["backend"], rerank.get("model")).checked()
    if bm25_top is not None and (isinstance(bm25_top, bool) or not isinstance(bm25_top, int)
                                 or not 1 <= bm25_top <= 1000):
        raise UsageError(f"bm25_top must be a whole number from 1 to 1000, got {bm25_top!r}")


def tuned_index(vault: "Vault") -> dict[str, Any] | None:
    """The stored index settings of the tuned strategy when present and valid, else None."""
    return entry_index(vault, tuned_strategy(vault))


def entry_index(vault: "Vault", entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The valid index settings of a tuned entry already read with ``tuned_strategy``, else None."""
    settings = (entry or {}).get("index")
    if settings is None:
        return None
    try:
        return check_index_settings(settings)
    except UsageError as exc:
        _warn("ignoring the tuned index settings in %s: %s", vault.root / CONFIG_NAME, exc)
        return None


def check_index_settings(settings: Any) -> dict[str, Any]:
    """Usage: ``check_index_settings({"analyzer": "english", ...})`` -> the settings, or UsageError."""
    from vaulteval.index.params import check_bm25_params, check_chunk_params
    from vaulteval.index.analysis import lookup

    keys = ("analyzer", "k1", "b", "target", "overlap", "hard_max")
    if not isinstance(settings, dict) or set(settings) != set(keys):
        raise UsageError(f"index settings must name exactly {', '.join(keys)}")
    if not isinstance(settings["analyzer"], str):
        raise UsageError("index settings: analyzer must be a string")
    lookup(settings["analyzer"])
    k1, b = check_bm25_params(settings["k1"], settings["b"])
    target, overlap, hard_max = check_chunk_params(settings["target"], settings["overlap"], settings["hard_max"])
    return {"analyzer": settings["analyzer"], "k1": k1, "b": b, "target": target, "overlap": overlap,
            "hard_max": hard_max}


def write_tuned(vault: "Vault", strategy: str, *, run_id: str, evidence: dict[str, Any] | None = None,
                index: dict[str, Any] | None = None, rerank: dict[str, Any] | None = None,
                bm25_top: int | None = None) -> dict[str, Any]:
    """Store the chosen pipeline (first stage, reranker or none, depth; and its index settings) with the run
    that justified it. ``retrieve`` then runs exactly that pipeline by default."""
    from datetime import datetime, timezone

    from vaulteval.pipeline.stages.registry import parse_first_stage
    from vaulteval.vault.locking import vault_lock

    parse_first_stage(strategy)  # never write what retrieve could not read
    check_pipeline(rerank, bm25_top)
    if index is not None:
        index = check_index_settings(index)
    vault.require_writable()
    with vault_lock(vault) as meta:
        data = _read_config(vault)
        if data is None and (vault.root / CONFIG_NAME).exists():
            raise UsageError(f"{vault.root / CONFIG_NAME} is not a JSON object; fix or remove it before --write")
        data = dict(data or {})
        entry = {"strategy": strategy, "rerank": rerank, "run_id": run_id,
                 "tuned_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **(evidence or {})}
        if bm25_top is not None:
            entry["bm25_top"] = bm25_top
        if index is not None:
            entry["index"] = index
        data[KEY] = entry
        if meta.guard is not None:
            meta.guard()  # the vault path still names the folder locked (not moved or replaced meanwhile)
        _atomic_write(vault.root / CONFIG_NAME, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return entry


def _atomic_write(path: Path, data: bytes) -> None:
    """Temporary sibling, fsync, rename: a reader sees the old file or the new one, never a part."""
    if path.is_symlink():
        raise UsageError(f"{path} is a symlink; replace it with a regular file before --write")
    write_atomic(path, data, durable=True)


def index_differs(vault: "Vault", settings: dict[str, Any]) -> bool:
    """True when the vault's index was built with other settings than ``settings`` (or is missing)."""
    current = built_index_settings(vault)
    return any(current.get(key) != value for key, value in settings.items())


def built_index_settings(vault: "Vault") -> dict[str, Any]:
    """What the vault's index header says it was built with (analyzer, k1, b, chunk sizes); {} without one.

    Values come from an untrusted file: a caller compares them, it does not build with them.
    """
    from vaulteval.index.reader import peek_header

    header = peek_header(vault.meta_dir) or {}
    chunk_params = header.get("chunk_params") if isinstance(header.get("chunk_params"), dict) else {}
    return {"analyzer": header.get("analyzer"), "k1": header.get("k1"), "b": header.get("b"), **chunk_params}
