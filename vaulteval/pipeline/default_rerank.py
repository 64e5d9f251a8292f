"""The rerank a plain ``retrieve`` runs: the one the vault's stored embeddings were made with, or none.

Usage::

    config = store_rerank(vault, allow_remote=False, timeout=30.0)   # a RerankConfig, or None

Ollama is tried only when the store or the user names it: a vault without
stored embeddings gets no rerank unless ``--embedder``/``--model`` ask for one.
A store that cannot be used (unreadable, or its model is gone) is said in one
warning line and the first-stage order is kept: never a silent change of order,
never a failed query.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the start-up budget test keeps typing off the served retrieve
if TYPE_CHECKING:
    from vaulteval.rerank.config import RerankConfig
    from vaulteval.vault.vault import Vault

# vaulteval.rerank.store.store_path, spelled out: that module loads numpy, which a vault without a store never needs.
STORE_PARTS = ("embeddings", "vectors.vtv")


def _warn(why: str, vault: "Vault") -> None:
    sys.stderr.write(f"vaulteval: warning: no rerank: the stored embeddings {why}; the BM25 order is kept "
                     f"(fix: vaulteval provision --vault {vault.root} --embed, or pass --no-rerank)\n")


def store_rerank(vault: "Vault", *, allow_remote: bool, timeout: float) -> "RerankConfig | None":
    """The stored embeddings' backend and model as a rerank config; None without a usable store."""
    if not vault.meta_dir.joinpath(*STORE_PARTS).is_file():
        return None
    from vaulteval.rerank.config import RerankConfig, RerankConfigError, resolve
    from vaulteval.rerank.store import StoreError, open_store

    try:
        store = open_store(vault.meta_dir)
    except StoreError as exc:
        _warn(f"cannot be read ({exc})", vault)
        return None
    config = RerankConfig(backend=store.backend, model=store.model, allow_remote=allow_remote, timeout=timeout)
    try:
        return resolve(config)
    except RerankConfigError as exc:
        if store.backend == "ollama":
            raise  # the host is the user's setting (OLLAMA_HOST): the usage error --embedder ollama gives
        _warn(f"name a model that cannot be used here ({exc})", vault)
        return None
