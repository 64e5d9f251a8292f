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
from collections import OrderedDict
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

# The exports a process has opened, most recent last. Bounded: a long-lived process (the MCP server, a
# notebook, a test loop) that meets export after export keeps only the newest, not one model per export.
_SESSIONS: "OrderedDict[tuple, OnnxEmbedder]" = OrderedDict()
MAX_SESSIONS = 2
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
    """A sentence-transformers model run by onnxruntime; presents the same identity as the torch one.

    The tokenizer and the session open on the first ``embed`` (a query whose vector is cached never waits
    for them); when they cannot open, ``fallback()`` (the torch model) embeds instead, as it would have
    had the export been refused up front.
    """

    source = "sentence-transformers"

    def __init__(self, model: str, folder: Path, info: dict[str, Any], fallback: Any = None):
        self.model, self.lower = model, info.get("do_lower_case") is True
        # As SentenceTransformerEmbedder names it (the shipped MiniLM by package and version): the store's key.
        self.model_key = st_model_name(model)
        self.folder, self.info, self.output = folder, info, str(info.get("output", "sentence_embedding"))
        self._fallback = fallback
        self._opened: tuple[Any, Any, set[str]] | Embedder | None = None
        self._open_lock = threading.Lock()

    @classmethod
    def with_session(cls, model: str, session: Any, tokenizer: Any, output: str, lower: bool) -> "OnnxEmbedder":
        """One over a session already open (the export's check against torch at provision time)."""
        embedder = cls(model, Path(), {"output": output, "do_lower_case": lower})
        embedder._opened = (session, tokenizer, {i.name for i in session.get_inputs()})
        return embedder

    @property
    def scheme(self) -> InputScheme:
        return input_scheme(self.model)

    def _open(self) -> tuple[Any, Any, set[str]] | Embedder:
        """(session, tokenizer, input names), opened once; or the fallback embedder when they cannot be."""
        if self._opened is None:
            with self._open_lock:
                if self._opened is None:
                    opened = _open_session(self.folder, self.info)
                    if opened is None:
                        if self._fallback is None:
                            raise EmbedFailure("backend-error", "the ONNX export could not be opened")
                        opened = self._fallback()
                    self._opened = opened
        return self._opened

    def embed(self, inputs: list[str]) -> list[np.ndarray]:
        """Usage: ``embedder.embed(texts)`` -> one float32 vector per text (what the torch model returns)."""
        opened = self._open()
        if not isinstance(opened, tuple):
            return opened.embed(inputs)
        session, tokenizer, names = opened
        try:
            texts = [t.lower() for t in inputs] if self.lower else list(inputs)
            encoded = tokenizer.encode_batch(texts)
            feed = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64)}
            (raw,) = session.run([self.output], {k: v for k, v in feed.items() if k in names})
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
            loaded = _load(folder, model, info, fallback=lambda: open_embedder(config))
            if loaded is None:
                return None
            _SESSIONS[key] = loaded
            while len(_SESSIONS) > MAX_SESSIONS:
                _SESSIONS.popitem(last=False)
        _SESSIONS.move_to_end(key)
        return _SESSIONS[key]


def _load(folder: Path, model: str, info: dict[str, Any], fallback: Any = None) -> OnnxEmbedder | None:
    """Check that onnxruntime and tokenizers import and the files are the export's (signature as written, else
    their hashes); None when not. The session itself opens on first use."""
    try:
        import onnxruntime  # noqa: F401 - importable, or sentence-transformers serves
        from tokenizers import Tokenizer  # noqa: F401
    except ImportError:
        return None
    try:
        if not (_unchanged_or_hashes_to(folder / MODEL_FILE, info, MODEL_FILE, "onnx_sha256")
                and _unchanged_or_hashes_to(folder / TOKENIZER_FILE, info, TOKENIZER_FILE, "tokenizer_sha256")):
            return None
        int(info["max_seq_length"])
    except Exception:  # noqa: BLE001 - an unusable export means: use sentence-transformers
        return None
    return OnnxEmbedder(model, folder, info, fallback)


def _open_session(folder: Path, info: dict[str, Any]) -> tuple[Any, Any, set[str]] | None:
    """The tokenizer and the onnxruntime session of an export already checked by ``_load``; None on failure."""
    try:
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        tokenizer.enable_truncation(max_length=int(info["max_seq_length"]))
        tokenizer.enable_padding(pad_id=int(info.get("pad_id", 0)), pad_token=str(info.get("pad_token", "[PAD]")))
        options = onnxruntime.SessionOptions()
        # One query is a few dozen tokens: one thread answers it sooner than a pool on a busy machine.
        options.intra_op_num_threads = int(info.get("threads", 1))
        options.inter_op_num_threads = 1
        options.graph_optimization_level = optimization_level(onnxruntime)
        session = onnxruntime.InferenceSession(str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        return session, tokenizer, {i.name for i in session.get_inputs()}
    except Exception:  # noqa: BLE001 - an unusable export means: use sentence-transformers
        return None
