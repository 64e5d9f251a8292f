"""The cross-encoder reranker: a local model reads the query and each candidate together and scores the pair.

Usage: ``rerank:cross,model=/models/my-cross-encoder`` (dense's or hybrid's candidates:
``hybrid:cc,rerank=cross,model=...``). The model is a folder on this machine, never a download:

- ``model.onnx`` with ``tokenizer.json``: run by onnxruntime and the ``tokenizers`` library (torch is not
  imported); preferred when the folder holds it;
- else a sentence-transformers ``CrossEncoder`` folder (``config.json``, weights, tokenizer), run by torch.

A candidate's score is the model's relevance logit for (query, passage); the model must have one output
label. A process loads each folder once. A folder that is missing, unreadable or holds neither form is one
UsageError before any work; so is a model that cannot be loaded or has more than one label.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.errors import UsageError
from vaulteval.pipeline.stages.base import Reranker, folder_digest, register
from vaulteval.pipeline.stages.params import Param

ONNX_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MAX_MODELS = 2  # folders a long-lived process (the MCP server, a notebook) keeps loaded at once
_MODELS: dict[tuple, Any] = {}  # (folder, form, its files' signature, max_length) -> scorer, oldest first
_LOCK = threading.Lock()


class CrossOutcome:
    """What ``rerank`` returns: scores in input order (the pipeline's rerank step reads these fields)."""

    __slots__ = ("scores", "source", "model", "fallback_reason", "seconds")

    def __init__(self, scores: list[float] | None, source: str, model: str, fallback_reason: str | None = None,
                 seconds: float = 0.0):
        self.scores, self.source, self.model = scores, source, model
        self.fallback_reason, self.seconds = fallback_reason, seconds


@register
class CrossRerank(Reranker):
    name = "cross"
    refines = "rerank"
    selector = "cross"
    summary = ("reranks the first stage's candidates by a local cross-encoder's relevance score for each "
               "(query, passage) pair (BM25's as `rerank:cross,model=PATH`; dense's or hybrid's with the key "
               "`rerank=cross`)")
    needs = frozenset({"cross-encoder"})  # a model folder the strategy names; tune never proposes it
    semantic = True
    params = (
        Param("model", str, None, "the cross-encoder's folder", default_text="none: required",
              note="a local folder: `model.onnx` with `tokenizer.json`, or a sentence-transformers CrossEncoder"),
        Param("batch_size", int, 32, "(query, passage) pairs per forward pass", low=1, high=4096),
        Param("max_length", int, 512, "tokens per pair; longer pairs lose their passage's end", low=8, high=8192),
    )
    runs_over = frozenset({"bm25", "dense", "hybrid"})
    key_params = ("model", "batch_size", "max_length")

    def checked(self) -> "CrossRerank":
        model_folder(self["model"])
        return self

    def describe(self) -> dict[str, Any]:
        """The form that would run and the sha256 of the folder's files; loads nothing."""
        try:
            folder, form = model_folder(self["model"])
        except UsageError as exc:
            return {**super().describe(), "backend": "cross-encoder", "error": str(exc)}
        return {**super().describe(), "backend": f"cross-encoder:{form}", "model": str(folder),
                "digest": folder_digest(str(folder))}

    def rerank(self, query: str, texts: list[str], cache_path: Any, store: Any = None,
               onnx_dir: Any = None) -> CrossOutcome:
        """Logits in input order; nothing is cached (a pair's score needs its query). A model that fails on
        these inputs keeps the first stage's order (``fallback_reason`` ``model-error``) and logs why."""
        import time

        started = time.perf_counter()
        folder, form = model_folder(self["model"])
        scorer = _scorer(folder, form, self["max_length"])
        source = f"cross-encoder:{form}"
        scores: list[float] = []
        try:
            for at in range(0, len(texts), self["batch_size"]):
                scores += scorer.scores(query, texts[at:at + self["batch_size"]])
        except UsageError:
            raise
        except Exception as exc:  # onnxruntime and torch raise many kinds on inputs a model cannot take
            import logging

            logging.getLogger(__name__).warning("rerank:cross kept the first stage's order: %s: %s",
                                                type(exc).__name__, exc)
            return CrossOutcome(None, source, str(folder), "model-error", time.perf_counter() - started)
        return CrossOutcome(scores, source, str(folder), None, time.perf_counter() - started)


def model_folder(model: Any) -> tuple[Any, str]:
    """``(folder, form)`` of a cross-encoder folder (``onnx`` or ``sentence-transformers``), or one UsageError."""
    import os
    from pathlib import Path

    if not model:
        raise UsageError("rerank:cross needs model=PATH, the folder of a local cross-encoder")
    folder = Path(str(model)).expanduser()
    try:
        if not folder.is_dir():
            raise UsageError(f"rerank:cross model {str(model)!r} is not a folder; give the folder of a local "
                             "cross-encoder (model.onnx with tokenizer.json, or a sentence-transformers CrossEncoder)")
        if not os.access(folder, os.R_OK | os.X_OK):
            raise UsageError(f"rerank:cross model folder {str(model)!r} cannot be read; check its permissions")
        if folder.joinpath(ONNX_FILE).is_file():
            if not folder.joinpath(TOKENIZER_FILE).is_file():
                raise UsageError(f"rerank:cross model folder {str(model)!r} has {ONNX_FILE} but no "
                                 f"{TOKENIZER_FILE}; save the model's fast tokenizer beside it")
            return folder.resolve(), "onnx"
        if folder.joinpath("config.json").is_file():
            return folder.resolve(), "sentence-transformers"
    except OSError as exc:
        raise UsageError(f"rerank:cross model folder {str(model)!r} cannot be read ({exc.strerror or exc})") from None
    raise UsageError(f"rerank:cross model folder {str(model)!r} holds neither {ONNX_FILE} nor a config.json; "
                     "give the folder of a local cross-encoder")


def _signature(folder: Any) -> tuple:
    """Name, size and mtime of the folder's files: a model saved again over the folder is loaded again."""
    try:
        return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file()))
    except OSError as exc:
        raise UsageError(f"rerank:cross model folder {str(folder)!r} cannot be read ({exc.strerror or exc})") from None


def _scorer(folder: Any, form: str, max_length: int) -> Any:
    """The loaded model of ``folder`` (once per process and files), or one UsageError naming why it cannot load."""
    key = (str(folder), form, _signature(folder), max_length)
    with _LOCK:
        if key in _MODELS:
            _MODELS[key] = _MODELS.pop(key)  # most recently used last
            return _MODELS[key]
        try:
            scorer = _OnnxScorer(folder, max_length) if form == "onnx" else _TorchScorer(folder, max_length)
        except UsageError:
            raise
        except Exception as exc:  # a damaged or foreign folder: the loaders raise many kinds
            raise UsageError(f"rerank:cross cannot load the {form} cross-encoder in {str(folder)!r}: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
        _MODELS[key] = scorer
        while len(_MODELS) > MAX_MODELS:
            _MODELS.pop(next(iter(_MODELS)))
        return scorer


def _single_label(labels: int, folder: Any) -> None:
    if labels != 1:
        raise UsageError(f"rerank:cross model in {str(folder)!r} has {labels} output labels; a reranking "
                         "cross-encoder has one (its relevance logit)")


class _OnnxScorer:
    """``model.onnx`` under onnxruntime, its inputs made by ``tokenizer.json`` as (query, passage) pairs."""

    def __init__(self, folder: Any, max_length: int):
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        own = (self.tokenizer.truncation or {}).get("max_length")  # the model's own limit, when the file keeps one
        self.tokenizer.enable_truncation(max_length=min(max_length, own) if own else max_length)
        if self.tokenizer.padding is None:
            self.tokenizer.enable_padding()  # padded positions are masked; their id does not change a score
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about the graph are not the user's business
        self.session = onnxruntime.InferenceSession(str(folder / ONNX_FILE), options,
                                                    providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        unknown = set(self.inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown:
            raise UsageError(f"rerank:cross {ONNX_FILE} in {str(folder)!r} takes inputs {sorted(unknown)}; it must "
                             "take input_ids, attention_mask and optionally token_type_ids")
        shape = self.session.get_outputs()[0].shape
        if len(shape) == 2 and isinstance(shape[1], int):
            _single_label(shape[1], folder)
        self.folder = folder

    def scores(self, query: str, texts: list[str]) -> list[float]:
        import numpy as np

        encoded = self.tokenizer.encode_batch([(query, text) for text in texts])
        arrays = {"input_ids": [e.ids for e in encoded], "attention_mask": [e.attention_mask for e in encoded],
                  "token_type_ids": [e.type_ids for e in encoded]}
        feed = {name: np.asarray(arrays[name], dtype=np.int64) for name in self.inputs}
        logits = np.asarray(self.session.run(None, feed)[0], dtype=np.float64)
        logits = logits.reshape(len(texts), -1)
        _single_label(logits.shape[1], self.folder)
        return [float(v) for v in logits[:, 0]]


class _TorchScorer:
    """A sentence-transformers ``CrossEncoder`` folder, on the CPU, its logits taken before any activation."""

    def __init__(self, folder: Any, max_length: int):
        import torch
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(folder), device="cpu", local_files_only=True, max_length=max_length,
                                  activation_fn=torch.nn.Identity())
        _single_label(int(self.model.config.num_labels), folder)

    def scores(self, query: str, texts: list[str]) -> list[float]:
        logits = self.model.predict([(query, text) for text in texts], batch_size=len(texts) or 1,
                                    show_progress_bar=False, convert_to_numpy=True)
        return [float(v) for v in logits.reshape(len(texts), -1)[:, 0]]
