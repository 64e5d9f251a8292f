"""Markdown line -> the prose a reader sees: what sentence kinds are cut from.

Usage::

    prose("See [the guide](https://x.org/a) and [[Sync|sync]] %% todo %%")   # -> "See the guide and sync"
    prose(line, keep="[[Target]]")   # that one link becomes HOLE, so the caller can find and remove it
    sentences("One. Two? Three")     # -> ["One.", "Two?", "Three"]

Links become their text, and inline code that is one name (```Actor```,
```gather()```) its name, while embeds, images, bare URLs, comments (``%%``
and HTML), HTML tags, footnote marks, block ids, other inline code, inline
fields and tags are removed. Where a removal can leave a hole in a sentence
(code, an embed, a URL, an e-mail address, a tag, a link without text) the
text holds :data:`CUT` (``cuts=True``); ``mend`` then rewrites a sentence
around its holes or gives it up. A sentence ends at ``.``, ``!`` or ``?``
followed by a space (so ``www.x.com`` and ``v1.2`` are no ends) or at CJK end
punctuation.
"""

from __future__ import annotations

import re
import unicodedata

from vaulteval.querysets.generate.wellformed import EDGE_WORDS

HOLE = "\u2063"  # an invisible separator: marks where the removed link stood
CUT = "\u2064"  # an invisible plus: marks where cleaning removed something a sentence may have needed

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


_NAME_CODE_RE = re.compile(r"[^\W\d](?:[\w.-]*\w)?")


def _code(m: re.Match) -> str:
    """Inline code that is one name reads as that name (```Actor```, ```gather()```); other code is a cut."""
    inner = m.group(0).strip("`").strip().removesuffix("()")
    return inner if len(inner) <= 40 and _NAME_CODE_RE.fullmatch(inner) else f" {CUT} "


def _link_text(m: re.Match) -> str:
    """``[[a/B#h|shown]]`` reads as "shown"; ``[[a/B#h]]`` as "B"."""
    inner = m.group(1)
    if "|" in inner:
        return inner.split("|", 1)[1]
    return inner.split("#", 1)[0].rsplit("/", 1)[-1].removesuffix(".md")


_CUT = f" {CUT} "
_STEPS = (
    ("%", _COMMENT_RE, " "), ("<!", _COMMENT_RE, " "), ("![", _EMBED_RE, _CUT), ("`", _CODE_RE, _code),
    ("](", _MD_LINK_RE, lambda m: m.group(1) if m.group(1).strip() else _CUT), ("[[", _WIKI_RE, _link_text),
    (":", _URL_RE, _CUT), ("www.", _URL_RE, _CUT), ("@", _EMAIL_RE, _CUT), ("<", _HTML_RE, " "),
    ("&", _HTML_RE, " "), ("::", _FIELD_RE, " "), ("^", _FOOTNOTE_RE, " "), ("#", _TAG_RE, _CUT),
    ("*", _EMPHASIS_RE, ""), ("_", _EMPHASIS_RE, ""), ("~~", _EMPHASIS_RE, ""), ("==", _EMPHASIS_RE, ""),
)


def prose(line: str, keep: str | None = None, *, cuts: bool = False) -> str:
    """The line as plain prose; the first occurrence of ``keep`` (a raw link) becomes :data:`HOLE`; with ``cuts``
    each removal that can leave a hole is :data:`CUT` (see ``mend``)."""
    text = line.replace(HOLE, " ").replace(CUT, " ")
    if keep:
        text = text.replace(keep, f" {HOLE} ", 1)
    text = _MARKER_RE.sub(" ", _CALLOUT_RE.sub(" ", text))
    for trigger, pattern, replace in _STEPS:  # a pattern runs only when its trigger is in the line
        if trigger in text:
            text = pattern.sub(replace, text)
    return tidy(text if cuts else text.replace(CUT, " "))


_GAP = f"[{HOLE}{CUT}]"
_BRACKETED_GAP_RE = re.compile(rf"\(\s*(?:[^\W\d]+\.?\s+)?{_GAP}\s*\)")  # "(see [[X]])", "(`x`)"
_GAP_RUN_RE = re.compile(rf"{_GAP}(?:\s*(?:,|and|or|&|/|\+)?\s*{_GAP})+")  # "`a`, `b` and `c`"
_LEAD_SEPARATOR_RE = re.compile(r"^[:\-–—]\s+")
_COPULA_RE = re.compile(r"^(is|are|was|were)\s+((?:a|an|the)\s+\S.*?)[.!]?$")  # "[[X]] is a plugin that ..."
_CLAUSE_END = (",", ";", ":", "-", "–", "—", "(")
_LIST_WORDS = frozenset(("and", "or", "nor", "between"))


def mend(sentence: str) -> str:
    """``sentence`` rewritten around the holes a removed link or cut left, or "" when one leaves a fragment.

    A hole inside brackets goes with them; a run of holes is one. A hole that starts the sentence is dropped
    before a separator ("[[X]]: a plugin that ..." -> "a plugin that ...") and asked about before "is a/an/the"
    ("[[X]] is the maximum ..." -> "What is the maximum ...?"). A hole that ends it is dropped after a clause
    mark or a word such as "see", "in" or "with" (the caller trims those), but not after "and"/"or" (a list lost
    its last member). Any other hole leaves a fragment.
    """
    if HOLE not in sentence and CUT not in sentence:
        return sentence
    text = _GAP_RUN_RE.sub(HOLE, _BRACKETED_GAP_RE.sub(" ", sentence))
    text = tidy(text.replace(CUT, HOLE))
    if text.startswith(HOLE):
        rest = text[1:].strip()
        if _LEAD_SEPARATOR_RE.match(rest):
            text = _LEAD_SEPARATOR_RE.sub("", rest)
        elif (copula := _COPULA_RE.match(rest)) and HOLE not in rest:
            return f"What {copula.group(1)} {copula.group(2)}?"
        else:
            return ""
    stripped = text.rstrip(".!?").rstrip()
    if stripped.endswith(HOLE):
        left = stripped[:-1].rstrip()
        words = left.split()
        last = words[-1].casefold() if words else ""
        if not words or last in _LIST_WORDS or not (last.endswith(_CLAUSE_END) or last in EDGE_WORDS or last == "in"):
            return ""
        text = left
    return "" if HOLE in text else tidy(text)


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
