"""The optional fields of a query beyond id, query, relevant and tags: kind, variant, split, source, status, judged,
overlap, overlap_band and bm25_rank.

Usage: ``fields, problems = read_extras(entry, where)`` inside query set validation.

``judged`` maps a page key (as in ``relevant``) to what was known when it was
judged: ``sha256`` of the page bytes, its ``address`` (if any), ``judge``
and ``at`` (time). ``queryset check`` uses it to follow renamed pages.
"""

from __future__ import annotations

from typing import Any

from vaulteval.querysets.problems import OVERLAP_BANDS, SPLITS, Problem

TEXT_FIELDS = ("kind", "variant", "status")
JUDGED_KEYS = ("sha256", "address", "judge", "at")


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
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            bad("overlap", f"overlap must be a number from 0 to 1, got {value!r}")
        else:
            out["overlap"] = float(value)
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
