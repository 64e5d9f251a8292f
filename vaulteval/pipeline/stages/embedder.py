"""The embedder settings of the stages that embed: backend and model, with the command's host, timeout and permission.

Usage::

    settings = EmbedderSettings("sentence-transformers", timeout=30.0)   # --embedder st --timeout 30
    settings.checked()                      # defaults filled in, host and model checked; no connection
    pipeline.with_embedder(settings)        # dense and hybrid embed the query with its host, timeout, permission
    EmbeddingRerank.of(settings)            # the embedding reranker they name (``--embedder``, ``--model``)
    provision(vault, embed=settings)        # provision --embed stores chunk vectors made with them
    EmbedderSettings.of_store(store).checked().model   # the stored vectors' model, resolved here

The command line, the MCP server and provisioning speak this value. The
embeddings package's own settings type (``vaulteval.embeddings.config``) is
built here and in the stage modules only; ``config()`` hands it to the
embeddings functions (tests/test_architecture.py holds the rule).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from vaulteval.embeddings.config import BACKENDS, RerankConfig, resolve

if TYPE_CHECKING:
    from typing import Any

__all__ = ["BACKENDS", "EmbedderSettings"]


class EmbedderSettings:
    """Which embedding backend and model, and how they are reached; frozen, equal by its settings."""

    __slots__ = ("_config",)

    def __init__(self, backend: str = "ollama", model: str | None = None, *, host: str | None = None,
                 timeout: float = 30.0, allow_remote: bool = False, batch_size: int = 64):
        object.__setattr__(self, "_config", RerankConfig(backend=backend, model=model, host=host,
                                                         allow_remote=allow_remote, timeout=timeout,
                                                         batch_size=batch_size))

    @classmethod
    def _of(cls, config: RerankConfig) -> "EmbedderSettings":
        out = cls.__new__(cls)
        object.__setattr__(out, "_config", config)
        return out

    @classmethod
    def of_store(cls, store: Any, *, allow_remote: bool = False) -> "EmbedderSettings":
        """The backend and model a store of chunk vectors was made with (``vaulteval.embeddings.store``)."""
        return cls(store.backend, store.model, allow_remote=allow_remote)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("EmbedderSettings are frozen")

    backend = property(lambda self: self._config.backend)
    model = property(lambda self: self._config.model)
    host = property(lambda self: self._config.host)
    timeout = property(lambda self: self._config.timeout)
    allow_remote = property(lambda self: self._config.allow_remote)
    batch_size = property(lambda self: self._config.batch_size)

    def checked(self) -> "EmbedderSettings":
        """Defaults filled in (the host from ``OLLAMA_HOST``, the default model) and every setting checked, with
        no connection; a bad one raises ``RerankConfigError`` (exit 2) naming it."""
        return EmbedderSettings._of(resolve(self._config))

    def for_store(self, store: Any) -> "EmbedderSettings":
        """This host, timeout and permission with the store's backend and model (what a dense query embeds with)."""
        return EmbedderSettings._of(replace(self._config, backend=store.backend, model=store.model))

    def config(self) -> RerankConfig:
        """The embeddings package's settings, for its functions (``vaulteval.embeddings``)."""
        return self._config

    def peek(self) -> dict[str, Any]:
        """Which backend, host and model would be used, and whether they are there (``rerank --peek``)."""
        from vaulteval.embeddings.rerank import peek

        return peek(self._config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmbedderSettings) and self._config == other._config

    def __hash__(self) -> int:
        return hash(self._config)

    def __repr__(self) -> str:
        c = self._config
        return (f"EmbedderSettings({c.backend!r}, {c.model!r}, host={c.host!r}, timeout={c.timeout!r}, "
                f"allow_remote={c.allow_remote!r}, batch_size={c.batch_size!r})")
