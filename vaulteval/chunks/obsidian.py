"""Obsidian syntax in note text: what a reader of the rendered note sees is what gets indexed.

Usage::

    body = visible_text(parsed.body)          # before chunking
    terms = page_terms(parsed)                # "Tags: ... Aliases: ..." for the contextual prefix

- The body is what reading view shows (``vaulteval.chunks.visible``): no
  ``%%comments%%``, HTML comments, HTML tags, images, badges, link targets or
  reference definitions; code left exactly as written.
- Tags stay in the text; frontmatter ``tags`` and ``aliases`` are added as terms
  to every chunk's prefix, with nested or hyphenated tags also split into words.
  Those properties are found as Obsidian finds them (``property_value``: any key
  case, the singular ``tag``/``alias``).
  A value that YAML read as a mapping or a list (``- LawList: Custom List
  Styles``) is flattened into its text.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from vaulteval.chunks.codespans import inline_code_spans, map_spans
from vaulteval.chunks.visible import visible

if TYPE_CHECKING:
    from typing import Any

# Bump when the text given to the chunker changes: the catalog then re-chunks every page.
# 3: HTML comments and tags, images and badges, link targets, reference definitions and block ids left out.
# 4: the pieces of a paragraph cut where the note has no whitespace are joined as written.
# 5: aliases and tags read under any key case and from the first matching key, as Obsidian reads them.
CHUNKER_VERSION = 5

# Possessive runs: a fence line with no newline after it fails once instead of once per backtick.
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}+|~{3,}+)[^\n]*+\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.DOTALL)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
# Starts with the literal '#' so the scan is fast; "at the start or after whitespace" is checked per hit.
_TAG = re.compile(r"#([^\s#!\"$%&'()*+,.:;<=>?@\[\]^`{|}~\\]+)")
_WORD_SEPARATORS = re.compile(r"[/_\-]+")


def visible_text(body: str) -> str:
    """The note body as Obsidian's reading view shows it (see ``vaulteval.chunks.visible``)."""
    return visible(body).text


def _without_code(text: str) -> str:
    return map_spans(text, inline_code_spans(text), inside=lambda code: "")


def _flat(value: Any, pairs: bool) -> list[str]:
    """The text of a YAML value, item by item: a mapping as ``key: value`` per pair (``pairs``) or as its keys
    and values, a list as its items, a scalar as is."""
    if value is None:
        return []
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            inner = _flat(item, pairs)
            out.extend([f"{key}: {' '.join(inner)}" if inner else str(key)] if pairs else [str(key), *inner])
        return out
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _flat(item, pairs)]
    return [str(value)]


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s]+", value) if v]
    return [text.strip() for text in _flat(value, pairs=False) if text.strip()]


# Obsidian's default list properties, each with the singular key it also reads (deprecated since Obsidian 1.4).
_PROPERTY_KEYS = {"aliases": ("aliases", "alias"), "tags": ("tags", "tag"), "cssclasses": ("cssclasses", "cssclass")}


def property_value(frontmatter: dict, name: str) -> Any:
    """Usage: ``property_value(fm, "aliases")``: the value of one of Obsidian's default properties (``aliases``,
    ``tags``, ``cssclasses``) as Obsidian finds it: the first key of the note, in the note's order, that is the
    name or its singular form in any letter case (``Aliases:``, ``TAG:``); None when the note has none."""
    keys = _PROPERTY_KEYS[name]
    for key, value in frontmatter.items():
        if isinstance(key, str) and key.lower() in keys:
            return value
    return None


def page_tags(frontmatter: dict, body: str) -> tuple[list[str], list[str]]:
    """(frontmatter ``tags``, inline ``#tags`` outside code), without '#', each in order and once."""
    front = [t.lstrip("#") for t in _as_list(property_value(frontmatter, "tags"))]
    inline = _inline_tags(body)
    if inline and "`" in body:  # only then can a candidate sit in code
        inline = _inline_tags(_without_code(_FENCE.sub("", body)))
    return list(dict.fromkeys(t for t in front if t)), list(dict.fromkeys(inline))


def _inline_tags(text: str) -> list[str]:
    return [m.group(1) for m in _TAG.finditer(text)
            if (m.start() == 0 or text[m.start() - 1].isspace()) and not m.group(1).isdigit()]


def page_aliases(frontmatter: dict) -> list[str]:
    """The note's ``aliases`` (see ``property_value``): a list, or a text of comma-separated names, as Obsidian
    splits it; each once, in order."""
    value = property_value(frontmatter, "aliases")
    if isinstance(value, str):
        value = value.split(",")
    return list(dict.fromkeys(text.strip() for text in _flat(value, pairs=True) if text.strip()))


def page_terms(frontmatter: dict, body: str) -> str:
    """A line of the page's tags and aliases for every chunk's prefix ("" when none).

    ``body`` is the visible text. Frontmatter tags appear whole; every tag with
    ``/``, ``-`` or ``_`` also appears split into words (inline tags are already
    in the text whole).
    """
    front, inline = page_tags(frontmatter, body)
    words = [w for t in front + inline for w in _WORD_SEPARATORS.split(t) if w and w != t]
    tags = list(dict.fromkeys(front + words))
    parts = []
    if tags:
        parts.append("Tags: " + " ".join(tags) + ".")
    aliases = page_aliases(frontmatter)
    if aliases:
        parts.append("Aliases: " + "; ".join(aliases) + ".")
    return " ".join(parts)


# No '[' in the label and no brackets in the target: each '[' then scans only to the next bracket, so
# bracket runs cost linear time (CommonMark does not nest links either; a note name cannot hold brackets).
_MD_LINK = re.compile(r"(!?)\[([^\[\]\n]*)\]\(<?([^)\s>\[\]]+)>?(?:\s+\"[^\"\n]*\")?\)")


def _blank(match: re.Match) -> str:
    return _blank_text(match.group(0))


def _blank_text(text: str) -> str:
    if "\n" not in text:  # the common case, without a regex call per code span or comment
        return " " * len(text)
    return re.sub(r"[^\n]", " ", text)


def code_and_comments_blanked(text: str) -> str:
    """``text`` with code and %%comments%% replaced by spaces, newlines kept (so line numbers stay true)."""
    if "```" in text or "~~~" in text:  # a fence opens with three of either
        text = _FENCE.sub(_blank, text)
    text = map_spans(text, inline_code_spans(text), inside=_blank_text)
    return _COMMENT.sub(_blank, text) if "%%" in text else text


def outgoing_links(text: str) -> list[dict]:
    """Every wikilink, embed and Markdown link to a note outside code and comments, in order.

    Each: ``{"line", "raw", "target", "heading", "label", "embed", "kind"}``; ``line`` counts from 1
    in ``text``; ``heading`` is the part after ``#`` (a ``^block`` id included), or None.
    """
    from urllib.parse import unquote

    clean = code_and_comments_blanked(text)
    starts = [0] + [i + 1 for i, ch in enumerate(clean) if ch == "\n"]
    out: list[dict] = []

    def line_of(pos: int) -> int:
        return bisect.bisect_right(starts, pos)

    for m in _WIKILINK.finditer(clean):
        target, _, label = m.group(2).partition("|")
        page, _, heading = target.partition("#")
        out.append({"line": line_of(m.start()), "raw": m.group(0), "target": page.strip(),
                    "heading": heading.strip() or None, "label": label.strip() or None,
                    "embed": m.group(1) == "!", "kind": "wikilink"})
    for m in _MD_LINK.finditer(clean):
        url = m.group(3)
        if "://" in url or url.startswith(("mailto:", "#")):
            continue
        page, _, heading = unquote(url).partition("#")
        out.append({"line": line_of(m.start()), "raw": m.group(0), "target": page.strip(),
                    "heading": heading.strip() or None, "label": m.group(2).strip() or None,
                    "embed": m.group(1) == "!", "kind": "markdown"})
    out.sort(key=lambda link: link["line"])
    return out


_HEADING_LINE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+)$", re.MULTILINE)


def headings(text: str) -> list[dict]:
    """ATX headings outside code and comments: ``{"level", "text", "line"}`` (line counts from 1 in ``text``)."""
    clean = code_and_comments_blanked(text)
    out = []
    number, counted = 1, 0
    # Blanking keeps every column and newline, so a heading line found in ``clean`` starts at the same offset
    # of ``text``; only the lines that match are looked at.
    for m in _HEADING_LINE.finditer(clean):
        begin = m.start()
        number += clean.count("\n", counted, begin)
        counted = begin
        stop = text.find("\n", begin)
        # Found on the blanked line (no heading inside code), read from the note's own line: Obsidian's
        # heading (and its links) keep inline code: "Use `with` here". Closing '#'s trimmed by rstrip, not
        # by the pattern (a lazy pattern backtracks on "# # # ...x").
        own = text[begin:stop if stop >= 0 else len(text)]
        start = m.end(1) - begin
        while start < len(own) and own[start] in " \t":  # the '#'s and the blank after them are the same on both lines
            start += 1
        rest = own[start:]
        heading = rest.rstrip(" \t#") or rest[:1]
        out.append({"level": len(m.group(1)), "text": heading.strip(), "line": number})
    return out
