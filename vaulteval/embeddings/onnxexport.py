"""Provision step: export the stored embeddings' sentence-transformers model to ONNX, checked against torch.

Usage (the caller holds the vault lock; torch is loaded anyway at this point)::

    report = ensure_onnx_export(meta, resolved_config)   # {"state": "current" | "exported" | "skipped", ...}

The model (transformer, pooling and normalisation as sentence-transformers
runs them) is traced once with ``torch.onnx.export``; onnxruntime then applies
its basic graph rewrites once and saves the result as the graph
(``.vault-meta/vaulteval/onnx/model.onnx``) and its weights (``model.data``),
so that a query's session neither rewrites the graph nor parses 90 MB of
weights out of it (it maps them). Beside them: the tokenizer the model uses
and ``export.json``. Before anything is published, the saved files are opened
exactly as queries open them and embed a fixed set of probe texts (short, long
enough to be truncated, non-Latin, padded in a batch); every vector must have
a cosine of at least ``1 - MAX_COSINE_GAP`` with torch's, otherwise nothing is
written and queries keep loading sentence-transformers. ``export.json`` is
removed first and written last, so a reader never takes a half-written export
for a whole one (it also checks every file's signature or hash). A current
export whose files matched by hash alone (a copied or restored vault: new
inodes) gets their signatures recorded in a new ``export.json``.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vaulteval.embeddings.onnxfiles import (
    EXPORT_FILE, EXPORT_KIND, EXPORT_VERSION, MODEL_FILE, ONNX_DIR, TOKENIZER_FILE, WEIGHTS_FILE, check_files,
    description_digest, export_matches, file_signature, read_export, source_signature,
)

if TYPE_CHECKING:
    from vaulteval.embeddings.config import RerankConfig
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
    current = read_export(meta.path / ONNX_DIR)
    if export_matches(current, model):
        problem, seen = check_files(meta.path / ONNX_DIR, current)
        if problem is None:
            if seen != current.get("written"):
                _record_signatures(meta, current, seen)
            return {"state": "current"}
        # (a damaged export, or one of another version, is written again)
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
        # Each file is published by rename: a process that mapped the old weights keeps reading the old inode.
        for name, data in files.items():
            folder.write_bytes(name, data, durable=True)
        # The files as written: a reader that finds them unchanged by this signature skips hashing 90 MB.
        info["written"] = {name: file_signature(folder.lstat(name)) for name in files}
        info["description_sha256"] = description_digest(info)
        folder.write_bytes(EXPORT_FILE, json.dumps(info, indent=2).encode("utf-8"), durable=True)
    return {"state": "exported", "min_cosine": round(info["min_cosine"], 7),
            "size_bytes": sum(len(files[name]) for name in (MODEL_FILE, WEIGHTS_FILE))}


def _record_signatures(meta: "MetaDir", info: dict[str, Any], seen: dict[str, list[int]]) -> None:
    """Record the files' signatures as they are now, after their bytes matched by hash (a copied or restored
    vault gives every file a new inode): a query then trusts them by one stat each instead of hashing 90 MB.
    Nothing is recorded for a file that changed since it was hashed."""
    with meta.sub(ONNX_DIR) as folder:
        if any(file_signature(folder.lstat(name)) != sig for name, sig in seen.items()):
            return
        info = {**info, "written": seen}
        info["description_sha256"] = description_digest(info)
        folder.write_bytes(EXPORT_FILE, json.dumps(info, indent=2).encode("utf-8"), durable=True)


def _export(model: str) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The export's files and its description (with the probes' smallest cosine against torch)."""
    import torch

    from vaulteval.embeddings.embedders import load_st_model
    from vaulteval.embeddings.models import st_model_name

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
    info = {
        "kind": EXPORT_KIND, "version": EXPORT_VERSION, "model_key": model, "source": source_signature(model),
        # The name the store knows the model by (package and version for the shipped MiniLM), recorded so that
        # a query need not ask the package metadata.
        "model_name": st_model_name(model),
        "max_seq_length": int(st.max_seq_length), "do_lower_case": bool(getattr(first, "do_lower_case", False)),
        "pad_id": int(tokenizer.pad_token_id or 0), "pad_token": str(tokenizer.pad_token or "[PAD]"),
        "output": "sentence_embedding", "inputs": names, "optimized": "basic",
    }
    with tempfile.TemporaryDirectory(prefix="vaulteval-onnx-") as work:
        files = _optimized(buffer.getvalue(), Path(work))
        files[TOKENIZER_FILE] = tokenizer_json
        for name, key in ((MODEL_FILE, "onnx_sha256"), (WEIGHTS_FILE, "weights_sha256"),
                          (TOKENIZER_FILE, "tokenizer_sha256")):
            info[key] = "sha256:" + hashlib.sha256(files[name]).hexdigest()
        (Path(work) / TOKENIZER_FILE).write_bytes(tokenizer_json)
        info["min_cosine"] = _compare(st, Path(work), info)  # the saved files, opened as queries open them
    return files, info


def _optimized(traced: bytes, work: Path) -> dict[str, bytes]:
    """The traced graph after onnxruntime's basic rewrites, saved as graph and weights files in ``work``.

    Basic rewrites only (constant folding, dead nodes): they depend on no processor feature, and the graph
    still computes the torch model's operations as they are.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(work / MODEL_FILE)
    # The weights go to their own file, which the graph names relative to itself.
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS_FILE)
    onnxruntime.InferenceSession(traced, options, providers=["CPUExecutionProvider"])
    return {name: (work / name).read_bytes() for name in (MODEL_FILE, WEIGHTS_FILE)}


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


def _compare(st: Any, work: Path, info: dict[str, Any]) -> float:
    """The smallest cosine between torch's and the export's vectors over the probes, one at a time and batched."""
    from vaulteval.embeddings.onnxembed import OnnxEmbedder, _open_session

    opened = _open_session(work, info)
    if opened is None:
        raise RuntimeError("the saved export could not be opened by onnxruntime")
    session, tokenizer, _names = opened
    onnx = OnnxEmbedder.with_session("probe", session, tokenizer, info["output"], lower=info["do_lower_case"])
    expected = st.encode(list(PROBES), convert_to_numpy=True, show_progress_bar=False)
    got = np.stack(onnx.embed(list(PROBES)) + [onnx.embed([text])[0] for text in PROBES])
    want = np.concatenate([expected, expected])
    cos = (got * want).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    return float(cos.min())
