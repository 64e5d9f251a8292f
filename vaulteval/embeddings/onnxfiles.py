"""The ONNX export's files on disk: what ``export.json`` describes, and the check that the files are those.

Usage::

    info = read_export(meta_dir / "onnx")              # None: no export of a version this code reads
    if export_matches(info, model):                     # made from this model as it is on disk now
        problem, seen = check_files(meta_dir / "onnx", info)   # problem: None, or why the files are not the export's

An export (version 2, the one ``provision`` writes) is four files:
``model.onnx`` (the graph, already through onnxruntime's basic graph rewrites,
so a query's session skips them), ``model.data`` (its weights, which
onnxruntime maps from disk instead of parsing them out of the graph),
``tokenizer.json`` and ``export.json``. An export of another version is not
used (queries embed with sentence-transformers) and the next ``provision``
replaces it. The file names are fixed here, never taken from ``export.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

ONNX_DIR = "onnx"
EXPORT_KIND = "vaulteval-onnx-embedder"
EXPORT_VERSION = 2
MODEL_FILE = "model.onnx"
WEIGHTS_FILE = "model.data"
TOKENIZER_FILE = "tokenizer.json"
EXPORT_FILE = "export.json"
# The model files whose size and mtime identify the weights an export was made from.
SOURCE_FILES = ("config.json", "modules.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin",
                "sentence_bert_config.json", "1_Pooling/config.json")


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


def read_export(folder: Path) -> dict[str, Any] | None:
    """The export's description when it is of the version this code writes, else None (never raises)."""
    from vaulteval.vault.metadir import open_regular

    try:
        with open_regular(Path(folder) / EXPORT_FILE) as fh:  # no symlink, FIFO or device
            info = json.loads(fh.read(1 << 20))
    except (OSError, ValueError, RecursionError):
        return None
    if (not isinstance(info, dict) or info.get("kind") != EXPORT_KIND
            or info.get("version") != EXPORT_VERSION or isinstance(info.get("version"), bool)):
        return None
    return info


def export_matches(info: dict[str, Any] | None, model: str) -> bool:
    """Was this export made from ``model`` as it is on disk now?"""
    return (info is not None and info.get("model_key") == model
            and info.get("source") == source_signature(model))


def exported_files(info: dict[str, Any]) -> dict[str, str]:
    """{file name: the key of its sha256 in export.json}."""
    return {MODEL_FILE: "onnx_sha256", TOKENIZER_FILE: "tokenizer_sha256", WEIGHTS_FILE: "weights_sha256"}


def file_sha256(path: Path) -> str:
    from vaulteval.vault.metadir import open_regular

    with open_regular(path) as fh:
        return "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()


def description_digest(info: dict[str, Any]) -> str:
    """The sha256 of an export's description without its own ``description_sha256`` (canonical JSON)."""
    rest = {k: v for k, v in info.items() if k != "description_sha256"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def check_files(folder: Path, info: dict[str, Any]) -> tuple[str | None, dict[str, list[int]]]:
    """(None, their signatures) when every file is the one provisioning wrote; else (what is wrong, {}).

    A file is the export's when it has the stat signature recorded at writing (no read at all), or else
    when its bytes hash to the recorded sha256 (a copied or restored vault). Symlinks and special files
    are refused without being opened.
    """
    # The description carries its own digest: a flipped byte in a name it records (the model's name the store
    # knows) would otherwise pass for a different model instead of a damaged export.
    try:
        matches = info.get("description_sha256") == description_digest(info)
    except (RecursionError, ValueError):  # parsed, yet too deep or odd to write back out
        matches = False
    if not matches:
        return f"{EXPORT_FILE} is not the file provisioning wrote (its digest does not match)", {}
    written = info.get("written") if isinstance(info.get("written"), dict) else {}
    seen: dict[str, list[int]] = {}
    for name, digest_key in exported_files(info).items():
        path = Path(folder) / name
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                return f"{name} is not a regular file", {}
            if file_signature(st) != written.get(name) and file_sha256(path) != info.get(digest_key):
                return f"{name} is not the file provisioning wrote (truncated or changed)", {}
            seen[name] = file_signature(os.lstat(path))
        except FileNotFoundError:
            return f"{name} is missing", {}
        except OSError as exc:
            return f"{name} cannot be read ({exc.strerror or exc})", {}
    return None, seen


def usable(folder: Path, info: dict[str, Any]) -> tuple[str | None, dict[str, list[int]]]:
    """``check_files``, and a description a session can be opened with: (None, signatures) or (what is wrong, {})."""
    problem, seen = check_files(folder, info)
    if problem is None:
        try:
            int(info["max_seq_length"])
        except (KeyError, TypeError, ValueError, OverflowError):
            return f"{EXPORT_FILE} has no valid max_seq_length", {}
    return problem, seen


def unchanged(folder: Path, seen: dict[str, list[int]]) -> bool:
    """Do the files still have the signatures ``check_files`` saw? (one stat each, after the session opened)"""
    try:
        return all(file_signature(os.lstat(Path(folder) / name)) == sig for name, sig in seen.items())
    except OSError:
        return False


def export_state(folder: Path, model: str) -> dict[str, Any]:
    """What ``doctor`` says of the export for ``model``: ``{"state": ...}`` with one of

    - ``current``: the files provisioning wrote, made from the model as it is now;
    - ``absent``: no export (queries embed with sentence-transformers, which loads torch);
    - ``outdated``: made from another model or an older copy of it (passed over; provision replaces it);
    - ``damaged``, with ``problem``: a file is missing, changed or unreadable (provision writes it again).
    """
    import importlib.util

    runtime = importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("tokenizers") is not None
    out: dict[str, Any] = {"path": str(folder), "runtime_installed": runtime}
    info = read_export(folder)
    if info is None:
        if not os.path.lexists(Path(folder) / EXPORT_FILE):
            return {**out, "state": "absent"}
        return {**out, "state": "damaged",
                "problem": f"{EXPORT_FILE} is unreadable or of a version this code does not read"}
    problem = usable(folder, info)[0]  # first: a flipped byte in the recorded model name is damage
    if problem is None and not export_matches(info, model):
        return {**out, "state": "outdated", "version": info.get("version")}
    if problem is not None:
        return {**out, "state": "damaged", "problem": problem}
    return {**out, "state": "current", "version": info.get("version")}
