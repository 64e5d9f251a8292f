"""Every byte of the packed chunk store, as ``index verify`` and ``doctor --deep`` check it.

Usage: ``report = check_store(retriever)`` -> ``{"segments": 1, "records": 54, "bytes": 199075, "problems": []}``

- Each segment the index names is read whole: its magic, then block by block
  (each block's CRC-32, then every record inflated and checked against its own
  length and CRC-32; format-1 segments frame by frame); a truncated tail or a
  flipped bit is named with its byte offset.
- Each record the index names must be one of those found whole, parse, agree with its
  index row (ids, hashes, path), name a page inside the notes folder, and, when
  its page is unchanged, be text of that page (a record forged with right
  checksums is found here).

``out["damaged"]`` counts the records named by the index that are missing, damaged or differ from their row
(a superset of what a query finds stale on current pages), so ``doctor --deep`` reports them once.
``text_check=False`` leaves out the chunk-to-note check, for a caller (``doctor``) that runs it on every row
already.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from vaulteval.chunks.segcheck import scan_segment
from vaulteval.chunks.segments import parse_location
from vaulteval.errors import PathEscape

if TYPE_CHECKING:
    from vaulteval.pipeline.retrieve import Retriever


def check_store(retriever: "Retriever", *, text_check: bool = True) -> dict[str, Any]:
    index, checker, vault = retriever.index(), retriever.integrity(), retriever.vault
    names = [n for n in index.header.get("store") or [] if isinstance(n, str)]
    out: dict[str, Any] = {"segments": len(names), "records": 0, "bytes": 0, "problems": []}
    problems = out["problems"]
    frames: dict[str, set] = {}
    for name in names:
        try:
            fd = checker.store().open_segment(name)
            data = os.pread(fd, os.fstat(fd).st_size, 0)
        except OSError as exc:
            problems.append(f"chunk store segment {name} cannot be read: {exc.strerror or exc}")
            continue
        out["bytes"] += len(data)
        found, problem = scan_segment(data)
        frames[name] = set(found)
        if problem:
            problems.append(f"chunk store segment {name}: {problem}")
    bad = forged = outside = 0
    page_ok: dict[str, bool] = {}
    for doc in index.iter_docs():
        parsed = parse_location(doc.chunk_file)
        if parsed is None:
            continue  # a loose record of the old layout: doctor's record check covers it
        out["records"] += 1
        try:
            vault.page_path(doc.page_path)
        except PathEscape:
            outside += 1
            continue
        if (parsed[1], doc.size, doc.mtime_ns) not in frames.get(parsed[0], ()):
            bad += 1
            continue
        rec = checker.record(doc)
        if rec is None:
            bad += 1
            continue
        if not text_check:
            continue
        if doc.page_path not in page_ok:
            page_ok[doc.page_path] = checker.page_hash(doc.page_path) == doc.page_body_hash
        if page_ok[doc.page_path] and not checker.text_of_note(doc, rec["raw_text"]):
            forged += 1
    out["damaged"] = bad
    if bad:
        problems.append(f"{bad} chunk record(s) named by the index are missing, damaged or differ from it")
    if outside:
        problems.append(f"{outside} chunk record(s) name a page outside the notes folder")
    if forged:
        problems.append(f"{forged} chunk record(s) hold text that is not in their note (forged or damaged)")
    return out
