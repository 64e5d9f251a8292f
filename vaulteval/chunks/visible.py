"""What Obsidian's reading view shows of a note body, with a map from each shown character back to the body.

Usage::

    shown = visible(body)
    shown.text                    # the text the chunker cuts (vaulteval.chunks.obsidian.visible_text)
    shown.source_offset(i)        # where shown.text[i] came from in ``body``

Fenced and inline code stay exactly as written. Outside code:

- ``%%comments%%`` and ``<!-- HTML comments -->`` are dropped; an unclosed
  ``%%`` hides the rest of the note (as in Obsidian), and so does an unclosed
  ``<!--`` that opens a line (an HTML block); an unclosed one inside a line is text.
- Raw HTML tags are dropped and their text content kept; ``<script>`` and
  ``<style>`` lose their content too. Entities (``&amp;``, ``&#39;``) become
  their characters; an autolink ``<https://...>`` its address.
- Images (``![alt](url)``, ``![alt][ref]``, ``![[picture.png]]`` and other
  media embeds) are dropped; their alt text stays as body text when it is words,
  not a URL, a file name or the label of a badge image (shields.io and the like).
  A linked image ``[![alt](img)](url)`` is the image.
- A Markdown link ``[text](url)`` shows ``text``; reference definitions
  (``[ref]: url "title"``) and block ids at the end of a line (``^id``) are dropped.
- ``[[target|label]]`` shows ``label``; ``[[target#Heading]]`` ``target Heading``;
  a note embed ``![[Note]]`` its name. Callouts keep their title (the type when
  there is none) and body without the marker.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

from vaulteval.chunks.codespans import inline_code_spans

# Possessive runs: a fence line with no newline after it fails once instead of once per backtick.
FENCE = re.compile(r"^[ \t]{0,3}(`{3,}+|~{3,}+)[^\n]*+\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_COMMENT_OPEN = re.compile(r"%%|<!--")
_SIZE = re.compile(r"^\d+(?:x\d+)?$")
MEDIA_EXTENSIONS = frozenset(
    "png jpg jpeg gif bmp svg webp avif heic tif tiff ico mp3 wav m4a ogg flac 3gp webm mp4 ogv mov mkv pdf".split())
# Image hosts whose pictures are status badges: their alt text ("GitHub Repo stars") is a label, not prose.
BADGE_HOSTS = ("shields.io", "badgen.net", "badge.fury.io", "travis-ci.org", "travis-ci.com", "codecov.io",
               "coveralls.io", "ci.appveyor.com", "img.buymeacoffee.com", "cdn.buymeacoffee.com", "ko-fi.com",
               "paypalobjects.com", "patreon.com", "liberapay.com", "forthebadge.com", "deepsource.io",
               "sonarcloud.io", "snyk.io", "circleci.com")

_URL = r"<?[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*>?(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*"
# An image's source may hold spaces (``raw/HEAD/My Theme.png``): Obsidian still shows the picture.
_SRC = r"[^()\n]*(?:\([^()\n]*\)[^()\n]*)*"
# The constructs, by the character that starts them (or, for line-anchored ones, the one that marks them).
_PARTS = {
    "[": [
        (r"linked", r"\[!\[(?P<lalt>[^\[\]\n]*)\]\((?P<limg>" + _SRC + r")\)\]\(" + _URL + r"\)"),
        (r"wikilink", r"\[\[(?P<wl>[^\[\]\n]+?)\]\]"),
        (r"refdef", r"(?m:^[ \t]{0,3}\[(?!\^)[^\[\]\n]+\]:[ \t]*\S+(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?"
                    r"[ \t]*$)"),
        (r"mdlink", r"\[(?P<ltext>[^\[\]\n]*)\]\(" + _URL + r"\)"),
    ],
    "!": [
        (r"embed", r"!\[\[(?P<emb>[^\[\]\n]+?)\]\]"),
        (r"image", r"!\[(?P<alt>[^\[\]\n]*)\]\((?P<img>" + _SRC + r")\)"),
        (r"refimage", r"!\[(?P<ralt>[^\[\]\n]*)\]\[[^\[\]\n]*\]"),
    ],
    "<": [
        (r"raw", r"(?si:<(?P<rawtag>script|style)\b[^>]*>.*?</(?P=rawtag)\s*>)"),
        (r"autolink", r"<(?P<auto>[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>"),
        (r"tag", r"</?[A-Za-z][A-Za-z0-9-]*+(?:\s++[A-Za-z_:][\w.:-]*+(?:\s*+=\s*+(?:\"[^\"]*+\"|'[^']*+'|"
                 r"[^\s\"'=<>`]++))?+)*+\s*+/?>"),
    ],
    "&": [(r"entity", r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")],
    ">": [(r"callout", r"(?m:^(?P<quote>[ \t]*(?:>[ \t]*)+)\[!(?P<kind>[^\]\n]+)\][+-]?[ \t]*(?=(?P<title>[^\n]*)))")],
    "^": [(r"blockid", r"(?m:[ \t]+\^[A-Za-z0-9-]+[ \t]*$)")],
}


_ANY_TRIGGER = re.compile("[" + re.escape("".join(_PARTS)) + "]")


@lru_cache(maxsize=None)
def _pattern(trigger: str) -> re.Pattern[str]:
    """The constructs that start with ``trigger``, in one regex (one alternation over all of them compiles
    ten times slower than these few together)."""
    return re.compile("|".join(f"(?P<{name}>{body})" for name, body in _PARTS[trigger]))


class _Layer:
    """Maps offsets of one rewrite's output to its input: copied stretches shift, replacements map to their start."""

    __slots__ = ("outs", "srcs", "linear")

    def __init__(self) -> None:
        self.outs: list[int] = []
        self.srcs: list[int] = []
        self.linear: list[bool] = []

    def to_input(self, pos: int) -> int:
        i = bisect.bisect_right(self.outs, pos) - 1
        if i < 0:
            return pos
        return self.srcs[i] + (pos - self.outs[i]) if self.linear[i] else self.srcs[i]


def _apply(text: str, edits: list[tuple[int, int, str]]) -> tuple[str, _Layer]:
    """``text`` with each ``(start, end, replacement)`` applied (sorted, not overlapping), and the offset map."""
    out: list[str] = []
    layer = _Layer()
    n = last = 0
    for start, end, repl in edits:
        if start > last:
            layer.outs.append(n), layer.srcs.append(last), layer.linear.append(True)
            out.append(text[last:start])
            n += start - last
        if repl:
            layer.outs.append(n), layer.srcs.append(start), layer.linear.append(False)
            out.append(repl)
            n += len(repl)
        last = end
    layer.outs.append(n), layer.srcs.append(last), layer.linear.append(True)
    out.append(text[last:])
    return "".join(out), layer


class Visible:
    """The shown text of a body and the way back to body offsets."""

    __slots__ = ("text", "_layers")

    def __init__(self, text: str, layers: list[_Layer]):
        self.text, self._layers = text, layers

    def source_offset(self, pos: int) -> int:
        """The body offset that ``text[pos]`` was copied or rewritten from."""
        for layer in reversed(self._layers):
            pos = layer.to_input(pos)
        return pos


def code_spans(text: str) -> list[tuple[int, int]]:
    """Fenced blocks and inline code spans, in order, not overlapping."""
    spans: list[tuple[int, int]] = []
    last = 0
    fences = [(m.start(), m.end()) for m in FENCE.finditer(text)] if ("```" in text or "~~~" in text) else []
    for start, end in fences + [(len(text), len(text))]:
        spans.extend((last + a, last + b) for a, b in inline_code_spans(text[last:start]))
        if end > start:
            spans.append((start, end))
        last = end
    return spans


def _in_code(spans: list[tuple[int, int]], starts: list[int], pos: int) -> int:
    """The end of the code span holding ``pos``, or -1."""
    i = bisect.bisect_right(starts, pos) - 1
    return spans[i][1] if i >= 0 and pos < spans[i][1] else -1


def _comment_edits(text: str) -> list[tuple[int, int, str]]:
    """Spans of %%comments%% and <!-- comments --> outside code (code inside a comment goes with it)."""
    spans = code_spans(text)
    starts = [s for s, _ in spans]
    edits: list[tuple[int, int, str]] = []
    pos = 0
    while (m := _COMMENT_OPEN.search(text, pos)) is not None:
        start = m.start()
        code_end = _in_code(spans, starts, start)
        if code_end >= 0:
            pos = code_end
            continue
        if m.group() == "%%":
            close = start + 2
            while (close := text.find("%%", close)) >= 0 and (skip := _in_code(spans, starts, close)) >= 0:
                close = skip
            end = len(text) if close < 0 else close + 2
        else:
            close = text.find("-->", start + 4)
            if close >= 0:
                end = close + 3
            elif text[text.rfind("\n", 0, start) + 1:start].strip(" \t") == "":
                end = len(text)  # an HTML block: open to the end of the note
            else:
                pos = start + 4
                continue
        edits.append((start, end, ""))
        pos = end
    return edits


def _words(label: str, src: str) -> str:
    """An image's alt text when it reads as words: not a URL, a file name or a badge's label; sizes removed."""
    if _is_badge(src):
        return ""
    parts = [p.strip() for p in label.split("|") if p.strip() and not _SIZE.match(p.strip())]
    text = " ".join(parts)
    low = text.lower()
    if not text or "://" in text or low.startswith("www.") or _is_file_name(low):
        return ""
    return text


def _is_file_name(text: str) -> bool:
    return " " not in text and text.rsplit(".", 1)[-1] in MEDIA_EXTENSIONS


def _is_badge(src: str) -> bool:
    src = src.strip().strip("<>").split(maxsplit=1)
    where = src[0].lower().split("://", 1)[-1] if src else ""
    host = where.split("/", 1)[0]
    return (any(host == h or host.endswith("." + h) for h in BADGE_HOSTS)
            or "/badge" in where or "badge.svg" in where or "badges/" in where)


def _link_text(inner: str, embed: bool) -> str:
    target, _, label = inner.partition("|")
    label = label.strip()
    if label and not (embed and _SIZE.match(label)):
        return label
    page, _, sub = target.partition("#")
    page = page.strip().rsplit("/", 1)[-1].removesuffix(".md")
    sub = sub.strip() if not sub.startswith("^") else ""
    sub = sub.replace("#", " ")
    return f"{page} {sub}".strip() if sub else page


def _replacement(m: re.Match, text: str) -> str:
    kind = m.lastgroup
    if kind == "wikilink":
        return _link_text(m.group("wl"), embed=False)
    if kind == "embed":
        inner = m.group("emb")
        target = inner.partition("|")[0].partition("#")[0].strip()
        if target.rsplit(".", 1)[-1].lower() in MEDIA_EXTENSIONS and "." in target:
            label = inner.partition("|")[2]
            return _words(label, "") if label else ""
        return _link_text(inner, embed=True)
    if kind == "linked":
        return _words(m.group("lalt"), m.group("limg"))
    if kind == "image":
        return _words(m.group("alt"), m.group("img"))
    if kind == "refimage":
        return _words(m.group("ralt"), "")
    if kind == "mdlink":
        return shown_text(m.group("ltext"))
    if kind == "autolink":
        return m.group("auto")
    if kind == "entity":
        import html  # its entity table costs more to load than most notes take to chunk

        return html.unescape(m.group())
    if kind == "callout":
        return m.group("quote") if m.group("title").strip() else m.group("quote") + m.group("kind").strip().capitalize()
    if kind == "tag":
        before = text[m.start() - 1] if m.start() else " "
        after = text[m.end()] if m.end() < len(text) else " "
        return "" if before.isspace() or after.isspace() else " "  # <br> between two words keeps them apart
    return ""  # raw blocks, reference definitions, block ids


def _markup_edits(text: str) -> list[tuple[int, int, str]]:
    triggers = [ch for ch in _PARTS if ch in text]
    if not triggers:
        return []
    patterns = [(rank, ch, _pattern(ch)) for rank, ch in enumerate(triggers)]
    spans = code_spans(text) if "`" in text or "~~~" in text else []
    edits: list[tuple[int, int, str]] = []
    last = 0
    for start, end in spans + [(len(text), len(text))]:
        # Every construct holds its trigger character: a stretch without one has no construct (most stretches
        # between code spans hold none), and a construct is looked for only where its trigger is.
        if _ANY_TRIGGER.search(text, last, start) is None:
            last = end
            continue
        # Each construct's matches, leftmost first (ties by the order of _PARTS); one inside another is text.
        found = sorted((m.start(), rank, m) for rank, ch, pattern in patterns if text.find(ch, last, start) >= 0
                       for m in pattern.finditer(text, last, start))
        taken = last
        for at, _, m in found:
            if at < taken:
                continue
            taken = m.end()
            repl = _replacement(m, text)
            if repl != m.group():
                edits.append((at, m.end(), repl))
        last = end
    return edits


def shown_text(text: str) -> str:
    """``visible(text).text`` for a short piece (a link's label): no map."""
    return visible(text).text


def visible(body: str) -> Visible:
    """The body as Obsidian's reading view shows it (see the module docstring)."""
    layers: list[_Layer] = []
    if "%%" in body or "<!--" in body:
        edits = _comment_edits(body)
        if edits:
            body, layer = _apply(body, edits)
            layers.append(layer)
    edits = _markup_edits(body)
    if edits:
        body, layer = _apply(body, edits)
        layers.append(layer)
    return Visible(body, layers)
