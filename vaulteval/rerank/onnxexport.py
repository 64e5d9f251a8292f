"""Provision step: export the stored embeddings' sentence-transformers model to ONNX, checked against torch.

Usage (the caller holds the vault lock; torch is loaded anyway at this point)::

    report = ensure_onnx_export(meta, resolved_config)   # {"state": "current" | "exported" | "skipped", ...}

The model (transformer, pooling and normalisation as sentence-transformers
runs them) is traced once with ``torch.onnx.export`` into
``.vault-meta/vaulteval/onnx/model.onnx``, beside the tokenizer the model uses
and ``export.json``. Before it is published the export embeds a fixed set of
probe texts (short, long enough to be truncated, non-Latin, padded in a batch)
and every vector must have a cosine of at least ``1 - MAX_COSINE_GAP`` with
torch's; otherwise nothing is written and queries keep loading
sentence-transformers. ``export.json`` is written last, so a reader never
takes a half-written export for a whole one (it also checks both files' hashes).
"""

from __future__ import annotations

import hashlib
import io
import json
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from vaulteval.rerank.onnxembed import (
    EXPORT_FILE, EXPORT_KIND, EXPORT_VERSION, MODEL_FILE, ONNX_DIR, TOKENIZER_FILE, export_matches, file_signature,
    read_export, source_signature,
)

if TYPE_CHECKING:
    from vaulteval.rerank.config import RerankConfig
    from vaulteval.vault.metadir import MetaDir

MAX_COSINE_GAP = 1e-5
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
PROBES = (
    "descale the espresso machine",
    "How do I reset the router to factory settings?",
    "  leading and trailing spaces  ",
    "普洱茶怎么冲泡",
    "京都の紅葉はいつが見頃ですか",
    "Ünïcödé, punctuation — and numbers 1,234.5!",
    " ".join(["a long paragraph that the tokenizer has to cut at the model's maximum length"] * 40),
)


def ensure_onnx_export(meta: "MetaDir", config: "RerankConfig") -> dict[str, Any]:
    """Export when the vault has none for this model (or an outdated one); never raises for a failed export."""
    if config.backend != "sentence-transformers":
        return {"state": "skipped", "reason": "the stored embeddings are not from sentence-transformers"}
    model = str(config.model)
    if export_matches(read_export(meta.path / ONNX_DIR), model):
        return {"state": "current"}
    try:
        import onnxruntime  # noqa: F401  (only to say so when queries could not use the export)
        import tokenizers  # noqa: F401
    except ImportError as exc:
        return {"state": "skipped", "reason": f"onnxruntime or tokenizers is not installed ({exc})"}
    try:
        files, info = _export(model)
    except Exception as exc:  # noqa: BLE001 - the export is an accelerator; queries still work with torch
        return {"state": "failed", "reason": f"{type(exc).__name__}: {exc}"[:300]}
    if info["min_cosine"] < 1.0 - MAX_COSINE_GAP:
        return {"state": "failed", "reason": f"the export differs from torch (cosine {info['min_cosine']:.7f})"}
    with meta.sub(ONNX_DIR, create=True) as folder:
        folder.unlink(EXPORT_FILE)  # the old description goes first: never one that names the old files
        for name, data in files.items():
            folder.write_bytes(name, data, durable=True)
        # The files as written: a reader that finds them unchanged by this signature skips hashing 90 MB.
        info["written"] = {name: file_signature(folder.lstat(name)) for name in files}
        folder.write_bytes(EXPORT_FILE, json.dumps(info, indent=2).encode("utf-8"), durable=True)
    return {"state": "exported", "min_cosine": round(info["min_cosine"], 7),
            "size_bytes": len(files[MODEL_FILE])}


def _export(model: str) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The export's files and its description (with the probes' smallest cosine against torch)."""
    import torch

    from vaulteval.rerank.embedders import load_st_model

    st = load_st_model(model)
    first = st[0]
    tokenizer = st.tokenizer
    tokenizer_json = tokenizer.backend_tokenizer.to_str().encode("utf-8")
    wrapper = _Wrapper(st).eval()
    # sentence-transformers 6 renamed tokenize to preprocess (the old name logs a warning); both give the tensors.
    preprocess = getattr(st, "preprocess", None)
    sample = preprocess(inputs=list(PROBES[:2])) if preprocess is not None else st.tokenize(list(PROBES[:2]))
    names = [n for n in INPUTS if n in sample]
    buffer = io.BytesIO()
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on constant shapes; the probes check the result
        torch.onnx.export(wrapper, tuple(sample[n] for n in names), buffer, dynamo=False, input_names=names,
                          output_names=["sentence_embedding"], dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                          opset_version=17)
    model_bytes = buffer.getvalue()
    info = {
        "kind": EXPORT_KIND, "version": EXPORT_VERSION, "model_key": model, "source": source_signature(model),
        "max_seq_length": int(st.max_seq_length), "do_lower_case": bool(getattr(first, "do_lower_case", False)),
        "pad_id": int(tokenizer.pad_token_id or 0), "pad_token": str(tokenizer.pad_token or "[PAD]"),
        "output": "sentence_embedding", "inputs": names,
        "onnx_sha256": "sha256:" + hashlib.sha256(model_bytes).hexdigest(),
        "tokenizer_sha256": "sha256:" + hashlib.sha256(tokenizer_json).hexdigest(),
    }
    info["min_cosine"] = _compare(st, model_bytes, tokenizer_json, info)
    return {MODEL_FILE: model_bytes, TOKENIZER_FILE: tokenizer_json}, info


class _Wrapper:
    """Tokens in, the sentence-transformers embedding out (what ``st.encode`` computes after tokenizing)."""

    def __new__(cls, st: Any) -> Any:
        import torch

        class Wrapper(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.st = st

            def forward(self, *tensors: Any) -> Any:
                features = dict(zip(INPUTS, tensors))
                return self.st(features)["sentence_embedding"]

        return Wrapper()


def _compare(st: Any, model_bytes: bytes, tokenizer_json: bytes, info: dict[str, Any]) -> float:
    """The smallest cosine between torch's and the export's vectors over the probes, one at a time and batched."""
    import onnxruntime
    from tokenizers import Tokenizer

    from vaulteval.rerank.onnxembed import OnnxEmbedder, optimization_level

    tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    tokenizer.enable_truncation(max_length=info["max_seq_length"])
    tokenizer.enable_padding(pad_id=info["pad_id"], pad_token=info["pad_token"])
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = optimization_level(onnxruntime)  # as queries will run it
    session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    onnx = OnnxEmbedder("probe", session, tokenizer, info["output"], lower=info["do_lower_case"])
    expected = st.encode(list(PROBES), convert_to_numpy=True, show_progress_bar=False)
    got = np.stack(onnx.embed(list(PROBES)) + [onnx.embed([text])[0] for text in PROBES])
    want = np.concatenate([expected, expected])
    cos = (got * want).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    return float(cos.min())
