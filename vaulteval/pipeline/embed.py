"""Provisioning step: store the vector of every current chunk in ``.vault-meta/vaulteval/embeddings/``.

Usage (under the vault lock, after the index build; ``meta`` is the lock's MetaDir)::

    report = embed_vault(vault, EmbedderSettings("sentence-transformers"), meta, progress=sys.stderr)

The chunks are the index's documents whose record and page are current; each
is embedded from the same text the rerank stage uses, so rerank and dense
retrieval then only embed the query. A sentence-transformers model is first
exported to ONNX (once; the only step that needs torch) and the chunks are
then embedded through that export, the very files queries use, on all the
machine's cores; without a usable export they are embedded with torch. Opening the store for retrieval
(``open_vault_store``) turns a corrupt or missing store into exit 10 naming
the command that rebuilds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from vaulteval.errors import NotProvisioned, VaultevalError
from vaulteval.chunks.integrity import IntegrityChecker
from vaulteval.index.reader import BM25Index, open_index
from vaulteval.embeddings.store import EmbeddingStore, StoreError, open_store

if TYPE_CHECKING:
    from vaulteval.embeddings.storebuild import StoreReport
    from vaulteval.pipeline.stages.embedder import EmbedderSettings
    from vaulteval.vault.vault import Vault


class EmbeddingFailed(VaultevalError):
    """The embedding backend could not embed the vault's chunks (provisioning stops, nothing is published)."""


# The ``--embedder`` that names each backend on the command line (``vaulteval.cli.pipeline_args.EMBEDDERS``).
EMBEDDER_FLAGS = {"ollama": "ollama", "sentence-transformers": "st"}


def embed_command(vault: "Vault") -> str:
    """The exact command that (re)builds the stored embeddings: with the backend and model the store was built
    with (read from its checked header, so a store whose vectors are damaged still names them); plain ``--embed``
    (the default model) when there is no store or its header is unreadable."""
    return f"vaulteval provision {vault.vault_args} --embed{_embedder_args(vault)}"


def _embedder_args(vault: "Vault") -> str:
    import shlex

    from vaulteval.index.file import IndexFileError, read_header
    from vaulteval.embeddings.store import store_path

    try:
        header = read_header(store_path(vault.meta_dir))
    except (IndexFileError, OSError):
        return ""
    backend, model = header.get("backend"), header.get("model")
    if backend not in EMBEDDER_FLAGS or not isinstance(model, str) or not model.isprintable() or not model.strip() \
            or model.startswith("-"):
        return ""
    return f" --embedder {EMBEDDER_FLAGS[backend]} --model {shlex.quote(model)}"


def chunk_items(vault: "Vault") -> list[tuple[str, str, str]]:
    """(chunk id, context hash, text to embed) for every indexed chunk that is still current."""
    index = open_index(vault)
    checker = IntegrityChecker(vault)
    items = []
    for doc in index.all_docs():
        rec = checker.current_record(doc)
        if rec is not None:
            items.append((doc.chunk_id, doc.context_hash, rec.get("contextualized_text") or rec["raw_text"]))
    return items


def embed_vault(vault: "Vault", embedder: "EmbedderSettings", meta: Any, *,
                progress: IO[str] | None = None) -> "StoreReport":
    """Embed the chunks that changed and publish the store; the caller holds the vault lock."""
    from vaulteval.embeddings.embedders import EmbedFailure
    from vaulteval.embeddings.onnxembed import ONNX_DIR, open_bulk_onnx
    from vaulteval.embeddings.storebuild import build_store

    config = embedder.checked().config()
    export = ensure_export(meta, config)
    try:
        report = build_store(meta, chunk_items(vault), config, cache_path=vault.meta_dir / "embeddings.sqlite",
                             progress=progress, embedder=open_bulk_onnx(meta.path / ONNX_DIR, config))
    except EmbedFailure as exc:
        raise EmbeddingFailed(f"could not embed the chunks with {config.backend} {config.model}: {exc}") from None
    if export is not None:
        report.onnx = export
    return report


def ensure_export(meta: Any, config: Any) -> dict[str, Any] | None:
    """A sentence-transformers model gets its ONNX export (what provisioning and queries embed with); the
    export's state, or None for another backend. ``config``: ``EmbedderSettings.config()``, checked."""
    if config.backend != "sentence-transformers":
        return None
    from vaulteval.embeddings.onnxexport import ensure_onnx_export

    return ensure_onnx_export(meta, config)


def open_vault_store(vault: "Vault", meta_dir: Path | None = None) -> EmbeddingStore:
    """The verified store for dense or hybrid retrieval, or NotProvisioned (exit 10) with the rebuild command."""
    try:
        return open_store(meta_dir or vault.meta_dir)
    except StoreError as exc:
        raise NotProvisioned(str(exc), rebuild=embed_command(vault)) from None


def stored_docs(index: "BM25Index", store: EmbeddingStore) -> list[int]:
    """Index document of each stored row; -1 when its chunk is gone or its text changed (never served)."""
    by_chunk = {d.chunk_id: (i, d.context_hash) for i, d in enumerate(index.all_docs())}
    docs = []
    for row in store.rows:
        hit = by_chunk.get(row.chunk_id)
        docs.append(hit[0] if hit is not None and hit[1] == row.context_hash else -1)
    return docs
