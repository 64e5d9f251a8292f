"""Obsidian syntax in note text: what a reader of the rendered note sees is what gets indexed.

Usage::

    body = visible_text(parsed.body)          # before chunking
    terms = page_terms(parsed)                # "Tags: ... Aliases: ..." for the contextual prefix

- ``%%comments%%`` (inline or over several lines; an unclosed one runs to the
  end of the note, as in Obsidian) are dropped: they are hidden in reading view
  and often private.
- ``[[target|label]]`` becomes ``label``; ``[[target#Heading]]`` becomes
  ``target Heading``; ``![[embed]]`` becomes the embedded note's name (a size
  such as ``|300`` is not text).
- Callouts (``> [!tip]+ Title``) keep their title (the type when there is none)
  and body, without the marker syntax.
- Fenced code blocks and inline code are left exactly as written.
- Tags stay in the text; frontmatter ``tags`` and ``aliases`` are added as terms
  to every chunk's prefix, with nested or hyphenated tags also split into words.
"""

from __future__ import annotations

import bisect
import re
from urllib.parse import unquote

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: serving checks a chunk against its note with visible_text
if TYPE_CHECKING:
    from typing import Any

from vaulteval.chunks.codespans import inline_code_spans, map_spans

# Bump when the text given to the chunker changes: the catalog then re-chunks every page.
CHUNKER_VERSION = 2

# Possessive runs: a fence line with no newline after it fails once instead of once per backtick.
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}+|~{3,}+)[^\n]*+\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.DOTALL)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_CALLOUT = re.compile(r"^(?P<quote>[ \t]*(?:>[ \t]*)+)\[!(?P<kind>[^\]\n]+)\][+-]?[ \t]*(?P<title>[^\n]*)$", re.MULTILINE)
# Starts with the literal '#' so the scan is fast; "at the start or after whitespace" is checked per hit.
_TAG = re.compile(r"#([^\s#!\"$%&'()*+,.:;<=>?@\[\]^`{|}~\\]+)")
_SIZE = re.compile(r"^\d+(?:x\d+)?$")
_WORD_SEPARATORS = re.compile(r"[/_\-]+")


def _link_text(match: re.Match) -> str:
    embed, inner = match.group(1), match.group(2)
    target, _, label = inner.partition("|")
    label = label.strip()
    if label and not (embed and _SIZE.match(label)):
        return label
    page, _, sub = target.partition("#")
    page = page.strip().rsplit("/", 1)[-1].removesuffix(".md")
    sub = sub.lstrip("^").strip() if not sub.startswith("^") else ""
    sub = sub.replace("#", " ")
    return f"{page} {sub}".strip() if sub else page


def _callout(match: re.Match) -> str:
    title = match.group("title").strip()
    return match.group("quote") + (title or match.group("kind").strip().capitalize())


def _prose(text: str) -> str:
    """Obsidian rewrites for text with no code in it."""
    text = _WIKILINK.sub(_link_text, text)
    return _CALLOUT.sub(_callout, text)


def _outside(pattern: re.Pattern, text: str, fn) -> str:
    """Apply ``fn`` to the stretches of ``text`` that ``pattern`` does not match, keeping matches verbatim."""
    out, last = [], 0
    for m in pattern.finditer(text):
        out.append(fn(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(fn(text[last:]))
    return "".join(out)


def _strip_comments(text: str) -> str:
    """Drop %%comments%% outside code; a comment may span code-free paragraphs."""
    pieces = re.split(r"(```[\s\S]*?```|~~~[\s\S]*?~~~|`[^`\n]+`)", text)
    out, in_comment = [], False
    for i, piece in enumerate(pieces):
        if i % 2 == 1:  # code: kept unless it sits inside a comment
            if not in_comment:
                out.append(piece)
            continue
        kept, pos = [], 0
        while pos <= len(piece):
            mark = piece.find("%%", pos)
            if in_comment:
                if mark < 0:
                    break
                in_comment, pos = False, mark + 2
            else:
                kept.append(piece[pos:] if mark < 0 else piece[pos:mark])
                if mark < 0:
                    break
                in_comment, pos = True, mark + 2
        out.append("".join(kept))
    return "".join(out)


def visible_text(body: str) -> str:
    """The note body as Obsidian's reading view shows it (see the module docstring)."""
    if "%%" in body:
        body = _strip_comments(body)
    if "[[" not in body and "[!" not in body:
        return body
    return _outside(_FENCE, body, lambda part: _outside_code(part, _prose))


def _outside_code(text: str, fn) -> str:
    """Apply ``fn`` outside inline code spans, keeping the spans verbatim."""
    return map_spans(text, inline_code_spans(text), outside=fn, inside=lambda code: code)


def _without_code(text: str) -> str:
    return map_spans(text, inline_code_spans(text), outside=lambda prose: prose, inside=lambda code: "")


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s]+", value) if v]
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if v is not None and str(v).strip()]


def page_tags(frontmatter: dict, body: str) -> tuple[list[str], list[str]]:
    """(frontmatter ``tags``/``tag``, inline ``#tags`` outside code), without '#', each in order and once."""
    front = [t.lstrip("#") for key in ("tags", "tag") for t in _as_list(frontmatter.get(key))]
    inline = _inline_tags(body)
    if inline and "`" in body:  # only then can a candidate sit in code
        inline = _inline_tags(_without_code(_FENCE.sub("", body)))
    return list(dict.fromkeys(t for t in front if t)), list(dict.fromkeys(inline))


def _inline_tags(text: str) -> list[str]:
    return [m.group(1) for m in _TAG.finditer(text)
            if (m.start() == 0 or text[m.start() - 1].isspace()) and not m.group(1).isdigit()]


def page_aliases(frontmatter: dict) -> list[str]:
    out: list[str] = []
    for key in ("aliases", "alias"):
        value = frontmatter.get(key)
        if isinstance(value, str):
            value = value.split(",") if key == "aliases" else [value]
        if isinstance(value, list):
            out.extend(str(v).strip() for v in value if v is not None and str(v).strip())
    return list(dict.fromkeys(out))


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
    text = _FENCE.sub(_blank, text)
    text = map_spans(text, inline_code_spans(text), outside=lambda prose: prose, inside=_blank_text)
    return _COMMENT.sub(_blank, text) if "%%" in text else text


def outgoing_links(text: str) -> list[dict]:
    """Every wikilink, embed and Markdown link to a note outside code and comments, in order.

    Each: ``{"line", "raw", "target", "heading", "label", "embed", "kind"}``; ``line`` counts from 1
    in ``text``; ``heading`` is the part after ``#`` (a ``^block`` id included), or None.
    """
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


_HEADING_LINE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+)$")


def headings(text: str) -> list[dict]:
    """ATX headings outside code and comments: ``{"level", "text", "line"}`` (line counts from 1 in ``text``)."""
    clean = code_and_comments_blanked(text)
    out = []
    for number, line in enumerate(clean.split("\n"), start=1):
        m = _HEADING_LINE.match(line)
        if m:
            # Closing '#'s trimmed by rstrip, not by the pattern (a lazy pattern backtracks on "# # # ...x").
            rest = m.group(2)
            text = rest.rstrip(" \t#") or rest[:1]
            out.append({"level": len(m.group(1)), "text": text.strip(), "line": number})
    return out
