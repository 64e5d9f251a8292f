"""``vaulteval search``: read-only text search of every note, with line numbers and context; no index needed.

Usage::

    result = search_notes(vault, "descale", top=20)                  # literal, case-insensitive
    result = search_notes(vault, r"grind(er|ing)\\b", regex=True)

It is the fallback when retrieval is unavailable or degraded: it lists the same
notes retrieval would (no hidden folders, no Obsidian exclusions, no symlink
escapes) and reads each through the same confinement. Patterns are bounded:
at most 500 characters, and a regular expression gets a time budget per note
(the ``regex`` package's timeout), so a catastrophic pattern fails with a clear
message instead of hanging. Notes over 4 MiB are searched in their first 4 MiB
and listed in ``truncated_pages``.
"""

from __future__ import annotations

import time
import unicodedata
from typing import TYPE_CHECKING, Any

from vaulteval.chunks.chunking import decode_page
from vaulteval.errors import UsageError, VaultevalError
from vaulteval.notes.text import read_note_bytes

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

SCHEMA = "vaulteval.search.v1"
MAX_PATTERN_CHARS = 500
MAX_TOP = 1000
MAX_CONTEXT = 5
MAX_LINE_CHARS = 400          # each returned line is cut here (the match is kept in view)
REGEX_SECONDS_PER_NOTE = 1.0
TOTAL_SECONDS = 30.0          # the whole search stops here and says it is partial


def _matcher(pattern: str, regex: bool):
    if not isinstance(pattern, str) or not pattern.strip():
        raise UsageError("give a non-empty search pattern")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UsageError(f"pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    if not regex:
        needle = unicodedata.normalize("NFC", pattern).casefold()
        return lambda text: needle in unicodedata.normalize("NFC", text).casefold()
    import regex as re2

    try:
        compiled = re2.compile(pattern, re2.IGNORECASE | re2.MULTILINE | re2.V1)
    except re2.error as exc:
        raise UsageError(f"invalid regular expression {pattern!r}: {exc}") from None
    return compiled


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


def search_notes(vault: "Vault", pattern: str, *, regex: bool = False, top: int = 20,
                 context: int = 1) -> dict[str, Any]:
    """Matching lines across the vault's notes, in page order (see docs/json.md, ``vaulteval search``)."""
    if not 1 <= top <= MAX_TOP:
        raise UsageError(f"--top must be between 1 and {MAX_TOP}")
    if not 0 <= context <= MAX_CONTEXT:
        raise UsageError(f"--context must be between 0 and {MAX_CONTEXT}")
    match = _matcher(pattern, regex)
    started = time.monotonic()
    matches: list[dict] = []
    truncated_pages: list[str] = []
    searched = 0
    complete = True
    for page in vault.iter_pages():
        if len(matches) >= top:
            complete = False
            break
        if time.monotonic() - started > TOTAL_SECONDS:
            complete = False
            break
        try:
            raw, cut = read_note_bytes(vault, page.rel)
        except (VaultevalError, OSError):
            continue  # vanished or swapped for a link since it was listed
        searched += 1
        if cut:
            truncated_pages.append(page.rel)
        lines = decode_page(raw).split("\n")
        for number in _matching_lines(match, regex, lines, page.rel):
            lo, hi = max(0, number - context), min(len(lines), number + context + 1)
            matches.append({"page_path": page.rel, "line": number + 1, "text": _cut(lines[number]),
                            "before": [_cut(x) for x in lines[lo:number]],
                            "after": [_cut(x) for x in lines[number + 1:hi]]})
            if len(matches) >= top:
                break
    return {"schema": SCHEMA, "pattern": pattern, "regex": regex, "case_sensitive": False,
            "notes_dir": vault.notes_rel, "notes_searched": searched, "complete": complete,
            "truncated_pages": truncated_pages, "matches": matches}


def _matching_lines(match, regex: bool, lines: list[str], rel: str) -> list[int]:
    if not regex:
        return [i for i, line in enumerate(lines) if match(line)]
    text = "\n".join(lines)
    started = time.perf_counter()
    try:
        hits = [m.start() for m in match.finditer(text, timeout=REGEX_SECONDS_PER_NOTE)]
        # The regex package sometimes stops at its limit without raising: a scan that used nearly all of it
        # may have ended early, and its matches would look complete.
        if time.perf_counter() - started >= REGEX_SECONDS_PER_NOTE * 0.9:
            raise TimeoutError
    except TimeoutError:
        raise UsageError(f"the regular expression took over {REGEX_SECONDS_PER_NOTE:g} s on {rel}; "
                         "simplify it (avoid nested repetition such as (a+)+)") from None
    out: list[int] = []
    if hits:
        import bisect

        starts, pos = [], 0
        for line in lines:
            starts.append(pos)
            pos += len(line) + 1
        for hit in hits:
            n = bisect.bisect_right(starts, hit) - 1
            if not out or out[-1] != n:
                out.append(n)
    return out
