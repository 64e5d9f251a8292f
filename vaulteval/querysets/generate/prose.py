"""Markdown line -> the prose a reader sees: what sentence kinds are cut from.

Usage::

    prose("See [the guide](https://x.org/a) and [[Sync|sync]] %% todo %%")   # -> "See the guide and sync"
    prose(line, keep="[[Target]]")   # that one link becomes HOLE, so the caller can find and remove it
    sentences("One. Two? Three")     # -> ["One.", "Two?", "Three"]

Links become their text, while embeds, images, bare URLs, comments (``%%``
and HTML), HTML tags, footnote marks, block ids, inline code, inline fields
and tags are removed. A sentence ends at ``.``, ``!`` or ``?`` followed by
a space (so ``www.x.com`` and ``v1.2`` are no ends) or at CJK end
punctuation.
"""

from __future__ import annotations

import re
import unicodedata

HOLE = "\u2063"  # an invisible separator: marks where the removed link stood

_COMMENT_RE = re.compile(r"%%.*?(%%|$)|<!--.*?(-->|$)")
_EMBED_RE = re.compile(r"!\[\[[^\]\n]*\]\]|!\[[^\]\n]*\]\([^)\n]*\)")
_MD_LINK_RE = re.compile(r"\[([^\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)")
_WIKI_RE = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_URL_RE = re.compile(r"<?\b(?:[a-z][a-z0-9+.-]*://|www\.|mailto:)\S*", re.IGNORECASE)
_EMAIL_RE = re.compile(r"<?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>?")
_HTML_RE = re.compile(r"</?[A-Za-z][^<>\n]*>|&[a-z]+;|&#\d+;")
_CODE_RE = re.compile(r"`+[^`\n]*`+")
_FIELD_RE = re.compile(r"^\s*[\w -]+::\s*|\[[\w -]+::[^\]]*\]|\([\w -]+::[^)]*\)")
_TAG_RE = re.compile(r"(?<![\w#&/])#[^\W\d][\w/-]*")
_FOOTNOTE_RE = re.compile(r"\[\^[^\]]*\]|\s\^[\w-]+\s*$")
_CALLOUT_RE = re.compile(r"^\s*(>\s*)+(\[![\w-]+\][+-]?)?")
_MARKER_RE = re.compile(r"^\s*(?:[-+*]\s+(?:\[.\]\s+)?|\d+[.)]\s+)")
_EMPHASIS_RE = re.compile(r"\*\*|__|\*|~~|==|(?<!\w)_|_(?!\w)")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"'”’)]*\s+|(?<=[。！？])")
_SPACE_PUNCT_RE = re.compile(r"\s+([.,;:!?。，！？)])|([(])\s+")
_DOUBLE_PUNCT_RE = re.compile(r"([,;:])(?:\s*[,;:])+")
_EMPTY_RE = re.compile(r"\(\s*\)|\[\s*\]|\"\s*\"|“\s*”")


def _link_text(m: re.Match) -> str:
    """``[[a/B#h|shown]]`` reads as "shown"; ``[[a/B#h]]`` as "B"."""
    inner = m.group(1)
    if "|" in inner:
        return inner.split("|", 1)[1]
    return inner.split("#", 1)[0].rsplit("/", 1)[-1].removesuffix(".md")


_STEPS = (
    ("%", _COMMENT_RE, " "), ("<!", _COMMENT_RE, " "), ("![", _EMBED_RE, " "), ("`", _CODE_RE, " "),
    ("](", _MD_LINK_RE, lambda m: m.group(1)), ("[[", _WIKI_RE, _link_text), (":", _URL_RE, " "),
    ("www.", _URL_RE, " "), ("@", _EMAIL_RE, " "), ("<", _HTML_RE, " "), ("&", _HTML_RE, " "),
    ("::", _FIELD_RE, " "), ("^", _FOOTNOTE_RE, " "), ("#", _TAG_RE, " "), ("*", _EMPHASIS_RE, ""),
    ("_", _EMPHASIS_RE, ""), ("~~", _EMPHASIS_RE, ""), ("==", _EMPHASIS_RE, ""),
)


def prose(line: str, keep: str | None = None) -> str:
    """The line as plain prose; the first occurrence of ``keep`` (a raw link) becomes :data:`HOLE`."""
    text = line.replace(HOLE, " ")
    if keep:
        text = text.replace(keep, f" {HOLE} ", 1)
    text = _MARKER_RE.sub(" ", _CALLOUT_RE.sub(" ", text))
    for trigger, pattern, replace in _STEPS:  # a pattern runs only when its trigger is in the line
        if trigger in text:
            text = pattern.sub(replace, text)
    return tidy(text)


def _no_symbols(text: str) -> str:
    """Without emoji and other pictographs (Unicode So) and the variation selectors that dress them: nobody types 🗂️."""
    return "".join(" " if unicodedata.category(ch) == "So" else "" if 0xFE00 <= ord(ch) <= 0xFE0F else ch
                   for ch in text) if not text.isascii() else text


def tidy(text: str) -> str:
    """Single spaces, no space before punctuation, no pictographs, no empty brackets or doubled commas."""
    text = _EMPTY_RE.sub(" ", _no_symbols(text))
    text = _SPACE_PUNCT_RE.sub(lambda m: m.group(1) or m.group(2), " ".join(text.split()))
    text = _DOUBLE_PUNCT_RE.sub(r"\1", text)
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    """The sentences of one line of prose, each stripped."""
    return [s.strip() for s in _SENTENCE_END_RE.split(text) if s and s.strip()]
