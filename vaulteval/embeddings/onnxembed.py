"""Query embedding without torch: the vault's ONNX export of its sentence-transformers model.

Usage::

    embedder = open_onnx(meta_dir / "onnx", resolved_config)   # None when there is no usable export
    vectors = embedder.embed(["descale the espresso machine"])

``provision`` writes the export (``vaulteval.embeddings.onnxexport``) next to the
stored embeddings when they were made with sentence-transformers: the model's
graph with its pooling and normalisation, its weights beside it, its
``tokenizer.json`` and ``export.json`` (what it was exported from, file
hashes, the settings of the tokenizer call; ``vaulteval.embeddings.onnxfiles``).
Here it is run with onnxruntime and the ``tokenizers`` library; neither
imports torch. The export is used only when it was made from the very model
the config names (same folder, same weight files by size and mtime) and its
files are the ones provisioning wrote (same stat signature, else the same
sha256); otherwise ``open_onnx`` returns None and the caller loads
sentence-transformers as before. A process remembers the verdict per export.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vaulteval.embeddings.embedders import Embedder, EmbedFailure, InputScheme, _as_vectors, input_scheme, open_embedder
from vaulteval.embeddings.models import st_model_name
from vaulteval.embeddings.onnxfiles import (  # re-exported: the export's names, for the exporter and tests
    EXPORT_FILE, EXPORT_KIND, EXPORT_VERSION, MODEL_FILE, ONNX_DIR, SOURCE_FILES, TOKENIZER_FILE, WEIGHTS_FILE,
    check_files, export_matches, exported_files, file_signature, read_export, source_signature, unchanged, usable,
)

if TYPE_CHECKING:
    from vaulteval.embeddings.config import RerankConfig

log = logging.getLogger(__name__)

__all__ = ["EXPORT_FILE", "EXPORT_KIND", "EXPORT_VERSION", "MODEL_FILE", "ONNX_DIR", "SOURCE_FILES",
           "TOKENIZER_FILE", "WEIGHTS_FILE", "OnnxEmbedder", "file_signature", "machine_threads", "open_bulk_onnx",
           "open_onnx", "open_query_embedder", "open_store_query_embedder", "read_export", "session_options",
           "source_signature"]

# The exports a process has opened, most recent last. Bounded: a long-lived process (the MCP server, a
# notebook, a test loop) that meets export after export keeps only the newest, not one model per export.
_SESSIONS: "OrderedDict[tuple, OnnxEmbedder | None]" = OrderedDict()
MAX_SESSIONS = 2
_LOCK = threading.Lock()


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
        # The export recorded it (its source files are still the ones it was made from); asking the package's
        # metadata instead imports importlib.metadata, a large share of a CLI query's own work.
        recorded = info.get("model_name")
        self.model_key = recorded if isinstance(recorded, str) and recorded else st_model_name(model)
        self.folder, self.info, self.output = folder, info, str(info.get("output", "sentence_embedding"))
        self.seen: dict[str, list[int]] = {}  # the files' signatures when they were checked
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

    @property
    def model_name(self) -> str:
        """What a store records as its model: the same name as ``model_key``, never the folder."""
        return self.model_key

    @property
    def form(self) -> str:
        """What computes the vectors: ``onnx-fp32``, or the fallback's form once the session could not open."""
        return "onnx-fp32" if self._opened is None or isinstance(self._opened, tuple) else self._opened.form

    def _open(self) -> tuple[Any, Any, set[str]] | Embedder:
        """(session, tokenizer, input names), opened once; or the fallback embedder when they cannot be."""
        if self._opened is None:
            with self._open_lock:
                if self._opened is None:
                    opened = _open_session(self.folder, self.info, self.seen)
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


def session_options(onnxruntime: Any, info: dict[str, Any]) -> Any:
    """How queries (and the export's own check at provision) run the graph.

    The export went through the basic rewrites (constant folding, dead nodes) when it was written, so the
    session applies none: the operations are the torch model's, without the fused kernels of the higher levels.
    """
    options = onnxruntime.SessionOptions()
    # One query is a few dozen tokens: one thread answers it sooner than a pool on a busy machine.
    options.intra_op_num_threads = int(info.get("threads", 1))
    options.inter_op_num_threads = 1
    if options.intra_op_num_threads > 1:
        # A pool's idle threads would spin between batches' operators, taking cores a busy machine lacks.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    levels = onnxruntime.GraphOptimizationLevel
    options.graph_optimization_level = levels.ORT_DISABLE_ALL
    return options


def open_query_embedder(config: "RerankConfig", onnx_dir: Path | None = None) -> Embedder:
    """``open_embedder``, except that a sentence-transformers model with a matching export in ``onnx_dir``
    runs without torch. Raises EmbedFailure as ``open_embedder`` does."""
    exported = open_onnx(onnx_dir, config)
    return exported if exported is not None else open_embedder(config)


def open_store_query_embedder(store: Any, onnx_dir: Path | None = None) -> Embedder:
    """``open_query_embedder`` for the backend and model a store's vectors were made with (what its dense
    queries embed with). Raises RerankConfigError for a model that cannot be used here, else as it does."""
    from vaulteval.embeddings.config import RerankConfig, resolve

    return open_query_embedder(resolve(RerankConfig(backend=store.backend, model=store.model)), onnx_dir)


def machine_threads() -> int:
    """The cores this process may run on (its affinity where the platform says, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def open_bulk_onnx(folder: Path | None, config: "RerankConfig", threads: int | None = None) -> OnnxEmbedder | None:
    """The export in ``folder`` for embedding many chunks: its own session with ``threads`` intra-op threads
    (default: the machine's), not the query's one-thread session and not kept after the provision.
    None when there is no usable, current export for ``config.model`` (the caller embeds with torch)."""
    if folder is None or config.backend != "sentence-transformers":
        return None
    info = read_export(Path(folder))
    if not export_matches(info, str(config.model)):
        return None
    embedder = _load(Path(folder), str(config.model), info, fallback=lambda: open_embedder(config))
    if embedder is not None:  # (after the check: the description's digest covers what provisioning wrote)
        embedder.info = {**info, "threads": threads or machine_threads()}
    return embedder


def open_onnx(folder: Path | None, config: "RerankConfig") -> OnnxEmbedder | None:
    """The export in ``folder`` for ``config.model``, loaded once per process; None when it cannot serve.

    An export made from another model (or an older copy of it) is quietly passed over; one whose files are
    damaged is reported in one warning line, and the query goes on with sentence-transformers.
    """
    if folder is None or config.backend != "sentence-transformers":
        return None
    folder = Path(folder)
    info = read_export(folder)
    model = str(config.model)
    if not export_matches(info, model):
        return None
    # The export as it is now: every file's stat signature (a missing one is None, and _load says so).
    key = (str(folder), model, str(info.get("onnx_sha256")),
           *(_lstat_signature(folder / name) for name in exported_files(info)))
    with _LOCK:
        if key not in _SESSIONS:
            # A refused export is remembered too: a server or a query loop neither re-hashes it nor repeats
            # the warning on every query.
            _SESSIONS[key] = _load(folder, model, info, fallback=lambda: open_embedder(config))
            while len(_SESSIONS) > MAX_SESSIONS:
                _SESSIONS.popitem(last=False)
        _SESSIONS.move_to_end(key)
        return _SESSIONS[key]


def _lstat_signature(path: Path) -> tuple[int, ...] | None:
    try:
        return tuple(file_signature(os.lstat(path)) or ())
    except OSError:
        return None


def _load(folder: Path, model: str, info: dict[str, Any], fallback: Any = None) -> OnnxEmbedder | None:
    """Check that onnxruntime and tokenizers are installed and the files are the export's (signature as written,
    else their hashes); None when not. Nothing is imported yet: the tokenizer and session open on first use, so
    a query whose vector is cached never loads them (a runtime that is there but fails to import then means the
    fallback embeds)."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("tokenizers") is None:
        return None
    problem, seen = usable(folder, info)
    if problem is not None:
        log.warning("the ONNX export in %s cannot be used: %s; queries embed with sentence-transformers until "
                    "`vaulteval provision` writes it again", folder, problem)
        return None
    embedder = OnnxEmbedder(model, folder, info, fallback)
    embedder.seen = seen
    return embedder


def _open_session(folder: Path, info: dict[str, Any], seen: dict[str, list[int]] | None = None,
                  ) -> tuple[Any, Any, set[str]] | None:
    """The tokenizer and the onnxruntime session of an export already checked by ``_load``; None on failure,
    or when a file changed between that check and the session's reading it (a provision publishing)."""
    try:
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        tokenizer.enable_truncation(max_length=int(info["max_seq_length"]))
        tokenizer.enable_padding(pad_id=int(info.get("pad_id", 0)), pad_token=str(info.get("pad_token", "[PAD]")))
        session = onnxruntime.InferenceSession(str(folder / MODEL_FILE), session_options(onnxruntime, info),
                                               providers=["CPUExecutionProvider"])
        if seen and not unchanged(folder, seen):
            return None
        return session, tokenizer, {i.name for i in session.get_inputs()}
    except Exception:  # noqa: BLE001 - an unusable export means: use sentence-transformers
        return None
