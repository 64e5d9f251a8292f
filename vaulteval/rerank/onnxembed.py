"""Query embedding without torch: the vault's ONNX export of its sentence-transformers model.

Usage::

    embedder = open_onnx(meta_dir / "onnx", resolved_config)   # None when there is no usable export
    vectors = embedder.embed(["descale the espresso machine"])

``provision`` writes the export (``vaulteval.rerank.onnxexport``) next to the
stored embeddings when they were made with sentence-transformers: the model's
graph with its pooling and normalisation, its ``tokenizer.json`` and
``export.json`` (what it was exported from, file hashes, the settings of the
tokenizer call). Here it is run with onnxruntime and the ``tokenizers``
library; neither imports torch. The export is used only when it was made from
the very model the config names (same folder, same weight files by size and
mtime) and its files hash to what ``export.json`` says; otherwise ``open_onnx``
returns None and the caller loads sentence-transformers as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import numpy as np

from vaulteval.rerank.embedders import Embedder, EmbedFailure, InputScheme, _as_vectors, input_scheme, open_embedder
from vaulteval.rerank.models import st_model_name

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
if TYPE_CHECKING:
    from typing import Any

    from vaulteval.rerank.config import RerankConfig

ONNX_DIR = "onnx"
EXPORT_KIND = "vaulteval-onnx-embedder"
EXPORT_VERSION = 1
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
EXPORT_FILE = "export.json"
# The model files whose size and mtime identify the weights an export was made from.
SOURCE_FILES = ("config.json", "modules.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin",
                "sentence_bert_config.json", "1_Pooling/config.json")

_SESSIONS: dict[tuple, "OnnxEmbedder"] = {}
_LOCK = threading.Lock()


def source_signature(model: str) -> dict[str, list[int]]:
    """Usage: ``source_signature(folder)`` -> {file: [size, mtime_ns]} of the model's identifying files."""
    folder = Path(model)
    out: dict[str, list[int]] = {}
    if not folder.is_absolute() or not folder.is_dir():
        return out  # a hub id: identified by its name alone
    for name in SOURCE_FILES:
        try:
            st = os.stat(folder / name)
        except OSError:
            continue
        out[name] = [st.st_size, st.st_mtime_ns]
    return out


def file_signature(st: os.stat_result | None) -> list[int] | None:
    """(inode, size, mtime_ns) of a file: the same three mean the bytes written then are the bytes there now."""
    return None if st is None else [st.st_ino, st.st_size, st.st_mtime_ns]


def _unchanged_or_hashes_to(path: Path, info: dict[str, Any], name: str, digest_key: str) -> bool:
    """The file is the one provisioning wrote (by its stat signature), or else its bytes hash to the recorded digest."""
    written = (info.get("written") or {}).get(name)
    if written is not None and file_signature(os.stat(path)) == written:
        return True
    return file_sha256(path) == info.get(digest_key)


def file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()


def read_export(folder: Path) -> dict[str, Any] | None:
    """The export's description when it is one of this version, else None (never raises)."""
    try:
        info = json.loads((folder / EXPORT_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(info, dict) or info.get("kind") != EXPORT_KIND or info.get("version") != EXPORT_VERSION:
        return None
    return info


def export_matches(info: dict[str, Any] | None, model: str) -> bool:
    """Was this export made from ``model`` as it is on disk now?"""
    return (info is not None and info.get("model_key") == model
            and info.get("source") == source_signature(model))


class OnnxEmbedder:
    """A sentence-transformers model run by onnxruntime; presents the same identity as the torch one."""

    source = "sentence-transformers"

    def __init__(self, model: str, session: Any, tokenizer: Any, output: str, lower: bool = False):
        self.model, self.lower = model, lower
        # As SentenceTransformerEmbedder names it (the shipped MiniLM by package and version): the store's key.
        self.model_key = st_model_name(model)
        self.session, self.tokenizer, self.output = session, tokenizer, output
        self.inputs = {i.name for i in session.get_inputs()}

    @property
    def scheme(self) -> InputScheme:
        return input_scheme(self.model)

    def embed(self, inputs: list[str]) -> list[np.ndarray]:
        """Usage: ``embedder.embed(texts)`` -> one float32 vector per text (what the torch model returns)."""
        try:
            texts = [t.lower() for t in inputs] if self.lower else list(inputs)
            encoded = self.tokenizer.encode_batch(texts)
            feed = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64)}
            (raw,) = self.session.run([self.output], {k: v for k, v in feed.items() if k in self.inputs})
        except Exception as exc:  # noqa: BLE001 - a failed run is a fallback, never a crash
            raise EmbedFailure("backend-error", f"onnxruntime: {type(exc).__name__}: {exc}"[:200]) from None
        return _as_vectors(raw, len(inputs))

    def close(self) -> None:
        """Usage: ``embedder.close()``; the session stays loaded for the next call."""


def optimization_level(onnxruntime: Any) -> Any:
    """Basic graph rewrites only (constant folding, dead nodes): the session opens sooner than with the fused
    kernels, and computes the torch model's operations as they are."""
    return onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC


def open_query_embedder(config: "RerankConfig", onnx_dir: Path | None = None) -> Embedder:
    """``open_embedder``, except that a sentence-transformers model with a matching export in ``onnx_dir``
    runs without torch. Raises EmbedFailure as ``open_embedder`` does."""
    exported = open_onnx(onnx_dir, config)
    return exported if exported is not None else open_embedder(config)


def open_onnx(folder: Path | None, config: "RerankConfig") -> OnnxEmbedder | None:
    """The export in ``folder`` for ``config.model``, loaded once per process; None when it cannot serve."""
    if folder is None or config.backend != "sentence-transformers":
        return None
    folder = Path(folder)
    info = read_export(folder)
    model = str(config.model)
    if not export_matches(info, model):
        return None
    try:
        st = os.stat(folder / MODEL_FILE)
        key = (str(folder), model, st.st_ino, st.st_size, st.st_mtime_ns, info.get("onnx_sha256"))
    except OSError:
        return None
    with _LOCK:
        if key not in _SESSIONS:
            loaded = _load(folder, model, info)
            if loaded is None:
                return None
            _SESSIONS[key] = loaded
        return _SESSIONS[key]


def _load(folder: Path, model: str, info: dict[str, Any]) -> OnnxEmbedder | None:
    """Check the files (signature as written, else their hashes), then open the session and tokenizer (None when
    anything fails)."""
    try:
        import onnxruntime
        from tokenizers import Tokenizer
    except ImportError:
        return None
    try:
        if not (_unchanged_or_hashes_to(folder / MODEL_FILE, info, MODEL_FILE, "onnx_sha256")
                and _unchanged_or_hashes_to(folder / TOKENIZER_FILE, info, TOKENIZER_FILE, "tokenizer_sha256")):
            return None
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        tokenizer.enable_truncation(max_length=int(info["max_seq_length"]))
        tokenizer.enable_padding(pad_id=int(info.get("pad_id", 0)), pad_token=str(info.get("pad_token", "[PAD]")))
        options = onnxruntime.SessionOptions()
        # One query is a few dozen tokens: one thread answers it sooner than a pool on a busy machine.
        options.intra_op_num_threads = int(info.get("threads", 1))
        options.inter_op_num_threads = 1
        options.graph_optimization_level = optimization_level(onnxruntime)
        session = onnxruntime.InferenceSession(str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        return OnnxEmbedder(model, session, tokenizer, str(info.get("output", "sentence_embedding")),
                            lower=info.get("do_lower_case") is True)
    except Exception:  # noqa: BLE001 - an unusable export means: use sentence-transformers
        return None
