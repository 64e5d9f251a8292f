"""The text of a chunk's code and headings fields: what ``fieldbuild`` indexes under ``code`` and ``headings``.

Usage: ``code_text(chunk)``, ``headings_text(chunk)``.
"""

from __future__ import annotations

import re

HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def code_text(text: str) -> str:
    """Usage: ``code_text(chunk)`` -> the lines inside fenced code blocks, joined by newlines."""
    if "```" not in text and "~~~" not in text:  # no line can open a fence
        return ""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = FENCE_RE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
            continue
        if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
            fence = None
            continue
        out.append(line)
    return "\n".join(out)


def headings_text(text: str) -> str:
    """Usage: ``headings_text(chunk)`` -> the chunk's ATX headings outside code blocks, one per line."""
    if "#" not in text:
        return ""
    if "```" not in text and "~~~" not in text:  # no fence: every line is prose
        return "\n".join(HEADING_RE.findall(text))
    prose = []
    fence: str | None = None
    for line in text.split("\n"):
        m = FENCE_RE.match(line)
        if m:
            fence = None if fence else m.group(1)
            continue
        if fence is None:
            prose.append(line)
    return "\n".join(HEADING_RE.findall("\n".join(prose)))
