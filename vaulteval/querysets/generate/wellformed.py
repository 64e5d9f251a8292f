"""Is a generated query text a person would type? One reason per rejected candidate, for the report.

Usage::

    reject_reason("[Obsidian for Beginners](https://www.")     # -> "markdown"
    reject_reason("What are")                                   # -> "ragged-end"
    reject_reason("Sync your vault", name=True)                 # -> None (well formed)
    trim_edges("you will also need to delete it, and")         # -> "you will also need to delete it"

A query is rejected when it holds markup (markdown, wikilinks, embeds,
URLs, e-mail addresses, HTML, ``%%``/``<!-- -->`` comments, template or
YAML/Python-repr fragments), when it starts or ends the way only a cut
sentence does (a connective or article at an edge, a dangling comma, a one
letter word before the full stop, an unbalanced bracket), when it has no
content word, or when it is mostly symbols. ``name=True`` (titles, aliases)
also refuses path-like names (``How to/Add custom styles``): nobody types
the folder.
"""

from __future__ import annotations

import re

MAX_WORDS = 30
MAX_CHARS = 300

# Closed-class words that cannot end a query (nor, the first few, start one), in the languages of the help vault
# that write words with spaces. Particles that end phrasal verbs (in, on, up, out, off) are left out on purpose.
EDGE_WORDS = frozenset("""
a an the of to at by for from with into onto about as and or but nor than via is are was were has have had
through between within without across during per among toward towards upon including that which whose whom
your my our their its his her see e.g i.e vs etc such
el la los las un una unos unas de del al y o con por para que se su sus es son lo como
le les une des du et ou dans sur pour avec qui est sont au aux ce cette ces sa ses
der die das den dem ein eine einen einem einer und oder im mit von zu zum zur auf für ist sind
il gli della di che è alla e
os um uma do da dos das em na com são ao
""".split())
START_WORDS = frozenset("and or of nor than y et und e".split())
# "in" ends a sentence cut before its object ("Core plugins are listed in"), except after these verbs.
IN_VERBS = frozenset("log sign zoom opt plug built check fill type drop dive set logged signed zoomed checked filled "
                     "typed dropped".split())
# Words that carry no topic: they do not count as content words (nor do EDGE_WORDS).
FUNCTION_WORDS = EDGE_WORDS | frozenset("""
it this that these those there here you i we they he she me us them also not so then more most very just can will
do does be been if when how what why where which who
""".split())

_CHECKS = (
    ("comment", re.compile(r"%%|<!--|-->")),
    ("url", re.compile(r"://|\bwww\.|\bmailto:|[\w.+-]+@[\w-]+\.[a-z]{2,}|\b[\w-]+\.(?:com|org|net|io|dev|md|html?|"
                       r"php|app|co|me|gg|ly|be)\b|(?:^|[\s(])(?:com|org|net|io|dev|de|co|app)/|\S=\S|\?\w+=", re.IGNORECASE)),
    ("wikilink", re.compile(r"\[\[|\]\]")),
    ("embed", re.compile(r"!\[")),
    ("html", re.compile(r"</?[A-Za-z][^<>]*>|&[a-z]+;|&#\d+;")),
    ("template", re.compile(r"\{\{|\}\}|<%|%>|\$\{")),
    ("repr", re.compile(r"[{}]|\[\s*['\"]|['\"]\s*\]|['\"]\s*:\s*['\"\[{]|^\s*[\w-]+\s*:\s*$|\bNone\b\s*[,}\]]")),
    ("markdown", re.compile(r"\]\(|\*\*|__|`|\||::|==|~~|\[!|^\s*(?:#|>|[-+*]\s)|(?<![\w&])#[^\W\d]|\^\w|"
                            r"\[\^|\\[\[\]()*_#]")),
)
_WORD_RE = re.compile(r"[^\W\d_][\w'’-]*")
_LETTER_RE = re.compile(r"[^\W\d_]")
_BAD_START_RE = re.compile(r"^[^\w\"'“‘¿¡(]")
_BAD_END_RE = re.compile(r"[,;:\-–—(/&\\]$")
_ONE_LETTER_END_RE = re.compile(r"(?:^|\s)[^\W\d_]\.$")
_PAIRS = (("(", ")"), ("[", "]"), ("“", "”"))
_OPEN_QUOTE_RE = re.compile(r"(?:^|\s)['‘]")
_CLOSE_QUOTE_RE = re.compile(r"['’](?=\s|$|[.,;:!?)])")


def _edge_word(word: str, name: bool = False) -> str:
    """The word as EDGE_WORDS lists it; "" for an all-caps one ("PARA", "Personal OS"), and in a name (title,
    alias) for any capitalized one ("Dan Au"): those end names, not cut sentences."""
    core = word.strip(".,;:!?\"'“”‘’()")
    if core.islower() or (not name and core.istitle() and len(core) > 1):
        return core.casefold()
    return ""


def _ends_cut(words: list[str], name: bool) -> bool:
    last = _edge_word(words[-1], name)
    if last == "in":
        return len(words) < 2 or _edge_word(words[-2], name) not in IN_VERBS
    return last in EDGE_WORDS


def _start_word(word: str) -> str:
    return word.casefold().strip(".,;:!?\"'“”‘’()")


def _is_content(word: str) -> bool:
    """A topic word: not a function word (an all-caps acronym such as PARA always counts), 2+ letters or a capital."""
    if word.isupper() and len(word) > 1:
        return True
    return word.casefold() not in FUNCTION_WORDS and (len(word) > 1 or word.isupper())


def reject_reason(text: str, *, name: bool = False, min_content: int = 1) -> str | None:
    """Why ``text`` is no query a person would type, or None when it is one."""
    stripped = text.strip()
    if not stripped:
        return "empty"
    if len(stripped) > MAX_CHARS or len(stripped.split()) > MAX_WORDS:
        return "too-long"
    for reason, pattern in _CHECKS:
        if pattern.search(stripped):
            return reason
    if name and "/" in stripped:
        return "path"
    letters = len(_LETTER_RE.findall(stripped))
    if letters * 2 < len(stripped.replace(" ", "")):
        return "symbols"
    if any(stripped.count(a) != stripped.count(b) for a, b in _PAIRS) or stripped.count('"') % 2 or \
            len(_OPEN_QUOTE_RE.findall(stripped)) > len(_CLOSE_QUOTE_RE.findall(stripped)):
        return "unbalanced"
    words = stripped.split()
    if _BAD_START_RE.match(stripped) or (len(words) > 1 and _start_word(words[0]) in START_WORDS):
        return "ragged-start"
    if _BAD_END_RE.search(stripped) or (_ONE_LETTER_END_RE.search(stripped) and words[-1].islower()) or \
            (len(words) > 1 and not stripped.endswith("?") and _ends_cut(words, name)):
        return "ragged-end"
    content = [w for w in _WORD_RE.findall(stripped) if _is_content(w)]
    if len(content) < min_content:
        return "no-content-word"
    return None


def trim_edges(text: str) -> str:
    """``text`` without a leading connective and without trailing connectives, articles and dangling punctuation."""
    words = text.split()
    while words and (_start_word(words[0]) in START_WORDS or not _WORD_RE.search(words[0])):
        words.pop(0)
    while words:
        last = words[-1].rstrip(",;:-–—(/&")
        if _WORD_RE.search(last) and not _ends_cut(words[:-1] + [last], False):
            words[-1] = last
            break
        words.pop()
    return " ".join(words)
