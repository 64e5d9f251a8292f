"""The optional fields of a query beyond id, query, relevant and tags: kind, variant, split, source, status, judged,
overlap, overlap_band, bm25_rank, and a written (or judged logged) question's writer, note_hash and flags.

Usage: ``fields, problems = read_extras(entry, where)`` inside query set validation.

``judged`` maps a page key (as in ``relevant``) to what was known when it was
judged: ``sha256`` of the page bytes, its ``address`` (if any), ``judge``
and ``at`` (time). ``queryset check`` uses it to follow renamed pages.
"""

from __future__ import annotations

import re
from typing import Any

from vaulteval.querysets.problems import OVERLAP_BANDS, SPLITS, Problem

TEXT_FIELDS = ("kind", "variant", "status")
JUDGED_KEYS = ("sha256", "address", "judge", "at")
_HASH = re.compile(r"sha256:[0-9a-f]{64}")


def _share(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1


def read_extras(entry: Any, where: str) -> tuple[dict[str, Any], list[Problem]]:
    """Checked extra fields of one raw query; ``judged`` keys stay as written (they may name moved pages)."""
    out: dict[str, Any] = {}
    problems: list[Problem] = []
    qid = entry.query_id
    extra, lines = entry.extra, entry.extra_lines

    def bad(field: str, message: str) -> None:
        problems.append(Problem(where, lines.get(field, entry.line), f"query {qid!r}: {message}"))

    for name in TEXT_FIELDS:
        if name in extra:
            if not isinstance(extra[name], str) or not extra[name].strip():
                bad(name, f"{name} must be a non-empty string")
            else:
                out[name] = extra[name].strip()
    if "split" in extra:
        if extra["split"] not in SPLITS:
            bad("split", f"split must be one of {', '.join(SPLITS)}, got {extra['split']!r}")
        else:
            out["split"] = extra["split"]
    if "overlap" in extra:
        value = extra["overlap"]
        if isinstance(value, dict) and set(value) == {"title", "text"} and all(map(_share, value.values())):
            out["overlap"] = {"title": float(value["title"]), "text": float(value["text"])}
        elif not _share(value):
            bad("overlap", f"overlap must be a number from 0 to 1 or {{title: X, text: Y}}, got {value!r}")
        else:
            out["overlap"] = float(value)
    _written_fields(extra, out, bad)
    if "overlap_band" in extra:
        if extra["overlap_band"] not in OVERLAP_BANDS:
            bad("overlap_band", f"overlap_band must be one of {', '.join(OVERLAP_BANDS)}, got {extra['overlap_band']!r}")
        else:
            out["overlap_band"] = extra["overlap_band"]
    if "bm25_rank" in extra:
        value = extra["bm25_rank"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            bad("bm25_rank", f"bm25_rank must be a whole number >= 1 (or null), got {value!r}")
        else:
            out["bm25_rank"] = value
    if "source" in extra:
        if not isinstance(extra["source"], dict):
            bad("source", "source must be a mapping, e.g. {page: wiki/a.md, line: 3}")
        else:
            out["source"] = {str(k): v for k, v in extra["source"].items() if k != "__duplicates__"}
    if "judged" in extra:
        judged = extra["judged"]
        if not isinstance(judged, dict):
            bad("judged", "judged must map pages to {sha256, address, judge, at}")
        else:
            out["judged"] = {}
            for key, info in judged.items():
                if key == "__duplicates__":
                    continue
                if not isinstance(info, dict) or any(k not in JUDGED_KEYS for k in info if k != "__duplicates__"):
                    bad("judged", f"judged[{key}] must be a mapping with {', '.join(JUDGED_KEYS)}")
                    continue
                record = {k: str(v) for k, v in info.items() if k in JUDGED_KEYS and v is not None}
                out["judged"][key] = record
    return out, problems


def _written_fields(extra: dict[str, Any], out: dict[str, Any], bad: Any) -> None:
    """A written question's writer, note_hash and flags (docs/querysets.md, "Written questions")."""
    from vaulteval.querysets.written.checks import writer_problem

    if "writer" in extra:
        logged = extra.get("kind") == "logged"  # a judged question from a log: asked for real, never written
        problem = (None if extra["writer"] == "real" else "writer of a logged question must be real") if logged \
            else writer_problem(extra["writer"])
        if problem:
            bad("writer", problem.split(";")[0])
        else:
            out["writer"] = extra["writer"]
    if "note_hash" in extra:
        if not isinstance(extra["note_hash"], str) or not _HASH.fullmatch(extra["note_hash"]):
            bad("note_hash", f"note_hash must be sha256:<64 hex digits>, got {extra['note_hash']!r}")
        else:
            out["note_hash"] = extra["note_hash"]
    if "flags" in extra:
        flags = extra["flags"]
        if flags is None:
            flags = []
        if not isinstance(flags, list) or not all(isinstance(f, str) and f.strip() for f in flags):
            bad("flags", f"flags must be a list of words, e.g. [repeats_title], got {flags!r}")
        else:
            out["flags"] = [f.strip() for f in flags]
