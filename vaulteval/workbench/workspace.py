"""Where each strategy's index comes from: the vault's own, or a build in the cache.

Usage::

    ws = Workspace(vault)                      # cache: $VAULTEVAL_CACHE or ~/.cache/vaulteval
    env = ws.env(Strategy.parse("bm25:target=800"))
    env.retriever.retrieve("query", top=10)    # reads the cache build; never writes the vault

The vault's own index is used when it opens, was built with the strategy's
analyzer and chunk parameters (and synthetic prefixes if the strategy insists),
and the vault is not the bundled sample. Anything else is provisioned under
``<cache>/<vault fingerprint>/<analyzer>-t<target>-o<overlap>-h<hard_max>/``
through a ``Vault(root, meta_dir=...)`` outside the vault. k1 and b never
need a build: the index is rescored with ``index.with_params``. Each index is
opened once per workspace.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.errors import NotProvisioned, UsageError
from vaulteval.workbench.fingerprint import VaultFingerprint, index_fingerprint, vault_fingerprint
from vaulteval.vault.locking import wait_lock
from vaulteval.vault.paths import home_path, is_inside
from vaulteval.vault.usercache import cache_root
from vaulteval.pipeline.provision import ensure_fields, provision
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.chunks.obsidian import CHUNKER_VERSION
from vaulteval.index.analysis import built_with_installed_libraries
from vaulteval.embeddings.store import store_path
from vaulteval.vault.vault import Vault

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index
    from vaulteval.workbench.strategy import Strategy

log = logging.getLogger(__name__)

# How long a build waits for another process building the same variant.
BUILD_WAIT_SECONDS = 1800.0


@dataclass
class StrategyEnv:
    """A strategy's vault view: ``retriever`` reads ``meta_dir``; ``index`` carries the strategy's k1/b."""

    retriever: Retriever
    index: "BM25Index"
    source: str  # "vault" or "cache"
    meta_dir: Path
    fingerprint: str

    @property
    def vault(self) -> Vault:
        """The view of the vault whose derived state is ``meta_dir``."""
        return self.retriever.vault

    def describe(self) -> dict:
        h = self.index.header
        return {"source": self.source, "meta_dir": str(self.meta_dir), "fingerprint": self.fingerprint,
                "analyzer": self.index.analyzer_name, "k1": self.index.k1, "b": self.index.b,
                "chunk_params": h.get("chunk_params"), "n_docs": self.index.n_docs, "n_pages": h.get("n_pages"),
                "built_at": h.get("built_at"), "analyzer_libraries": h.get("analyzer_libraries") or {}}


class Workspace:
    """Indexes for one vault's strategies, opened once and shared across strategies."""

    def __init__(self, vault: Vault, cache_dir: str | os.PathLike[str] | None = None, *, use_vault_index: bool = True):
        self.vault = vault
        self.cache_dir = home_path(cache_dir) if cache_dir else cache_root()
        self.use_vault_index = use_vault_index
        self._fp: VaultFingerprint | None = None
        self._bases: dict[str, Retriever] = {}
        self._own: Retriever | None = None
        self._index_fp: dict[str, str] = {}

    @property
    def fingerprint(self) -> VaultFingerprint:
        if self._fp is None:
            self._fp = vault_fingerprint(self.vault)
        return self._fp

    def env(self, strategy: "Strategy") -> StrategyEnv:
        """Usage: ``ws.env(strategy)``: the vault view and index the strategy runs against."""
        key = self._base_key(strategy)
        base = self._bases.get(key)
        if base is None:
            base = self._bases[key] = self._open_base(strategy, key)
        index = base.index()
        if (index.k1, index.b) != (strategy.index.k1, strategy.index.b):
            index = index.with_params(strategy.index.k1, strategy.index.b)
        meta_dir = base.vault.meta_dir
        view = self.vault.with_meta(meta_dir)
        # One index and one integrity checker per meta dir, whatever the k1/b.
        # Dense and hybrid read the stored embeddings of this build, else the vault's own (rows whose
        # chunk text differs from this build's are never served).
        store_meta = meta_dir if store_path(meta_dir).exists() else self.vault.meta_dir
        retriever = Retriever(view, index=index, integrity=base.integrity(), store_meta=store_meta)
        if key not in self._index_fp:
            self._index_fp[key] = index_fingerprint(base.index())
        source = "vault" if key == "vault" else "cache"
        return StrategyEnv(retriever, index, source, meta_dir, self._index_fp[key])

    @property
    def own(self) -> Retriever:
        """The vault's own index and checker (``.vault-meta/vaulteval``), opened once."""
        if self._own is None:
            self._own = Retriever(self.vault)
        return self._own

    def uses_vault_index(self, strategy: "Strategy") -> bool:
        """True when ``strategy`` runs on the vault's own index (``.vault-meta``), not on a cache build.

        A cache build is made from the notes as the fingerprint read them, so only the vault's own
        index can be stale (``vaulteval.pipeline.doctor.stale_pages``)."""
        return self._base_key(strategy) == "vault"

    def _base_key(self, strategy: "Strategy") -> str:
        if "vault" in self._bases and self._fits(self._bases["vault"], strategy):
            return "vault"
        if "vault" not in self._bases and self._vault_usable() and self._fits(self.own, strategy):
            self._bases["vault"] = self.own
            return "vault"
        # The chunker version keeps a cache built by another vaulteval (other chunk text) from being reused.
        settings = strategy.index
        return (f"{settings.index_analyzer}-t{settings.target}-o{settings.overlap}-h{settings.hard_max}"
                f"-c{CHUNKER_VERSION}")

    def _vault_usable(self) -> bool:
        if not self.use_vault_index or self.vault.is_bundled:
            return False
        try:
            self.own.index()
        except NotProvisioned as exc:
            log.info("building in the cache: the vault's index is not usable (%s)", exc)
            return False
        return True

    def _fits(self, base: Retriever, strategy: "Strategy") -> bool:
        header = base.index().header
        if header.get("analyzer") != strategy.index.index_analyzer:
            return False
        if header.get("chunk_params") != asdict(strategy.index.chunk_params):
            return False
        return strategy.index.prefix != "synthetic" or _all_synthetic(base)

    def _open_base(self, strategy: "Strategy", key: str) -> Retriever:
        if key == "vault":
            return self.own
        meta = self.cache_dir / self.fingerprint.digest.removeprefix("sha256:")[:16] / key
        if is_inside(self.vault.root, meta):
            raise UsageError(f"the evaluation cache {self.cache_dir} is inside the vault; set VAULTEVAL_CACHE to a folder outside it")
        variant = self.vault.with_meta(meta)
        # Workers of a distributed run (or two evaluations) may reach here for one variant at
        # once: the first builds, the others wait on the lock and then open its build.
        with wait_lock(meta.parent / f"{key}.build-lock", timeout=BUILD_WAIT_SECONDS):
            try:
                index = Retriever(variant).index()
                if built_with_installed_libraries(index.header, index.analyzer_name):
                    ensure_fields(variant)  # a cache build made before field indexes existed
                    return Retriever(variant, index=index)
                log.info("rebuilding %s: its analyzer libraries changed since it was built", key)
            except NotProvisioned:
                pass
            log.info("building %s in %s", key, meta)
            provision(variant, analyzer=strategy.index.index_analyzer, params=strategy.index.chunk_params)
        retriever = Retriever(variant)
        retriever.index()
        return retriever


def _all_synthetic(base: Retriever) -> bool:
    """True when every indexed chunk record carries a synthetic prefix (a default build would match it)."""
    checker = base.integrity()
    return all((rec := checker.record(doc)) is not None and rec.get("prefix_source") == "synthetic"
               for doc in base.index().iter_docs())

