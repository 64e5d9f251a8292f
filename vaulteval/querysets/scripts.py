"""Which writing system a text is in, from Unicode character names (no hand-kept range tables).

Usage::

    script_of("git commit 提交")      # -> "Han" (the script of most letters that are not Latin, else Latin)
    scripts_in("ファイル 파일")         # -> {"Kana": 4, "Hangul": 2}
    is_cjk("提交")                     # -> True

The script is the first word of each letter's Unicode name (``LATIN SMALL
LETTER A``, ``CYRILLIC ...``), with the CJK families named as readers know
them: Han, Kana (Hiragana and Katakana), Hangul. Digits, punctuation and
symbols are ignored. A mixed ASCII+CJK text counts as its non-Latin script,
because that is the part a tokenizer is likely to get wrong.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

# Unicode name prefixes -> script names used in slices.
_FAMILIES = {"CJK": "Han", "HIRAGANA": "Kana", "KATAKANA": "Kana", "HALFWIDTH": "Kana", "HANGUL": "Hangul",
             "FULLWIDTH": "Latin", "MODIFIER": "Latin"}
# A quick filter, so most Latin text never asks for character names.
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
CJK_SCRIPTS = ("Han", "Kana", "Hangul")


@lru_cache(maxsize=65536)
def char_script(ch: str) -> str | None:
    """Usage: ``char_script("я")`` -> "Cyrillic"; None for anything that is not a letter."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return None
    first = name.split(" ", 1)[0]
    if first == "CJK" or first.startswith("CJK"):
        return "Han"
    return _FAMILIES.get(first, first.title())


def scripts_in(text: str) -> Counter:
    """Usage: ``scripts_in("abc 日本")`` -> Counter({"Latin": 3, "Han": 2})."""
    counts: Counter = Counter()
    for ch in text:
        script = char_script(ch)
        if script:
            counts[script] += 1
    return counts


def script_of(text: str) -> str:
    """The script of most non-Latin letters, else Latin; "None" for text without letters."""
    counts = scripts_in(text)
    if not counts:
        return "None"
    other = [(n, s) for s, n in counts.items() if s != "Latin"]
    if other:
        return max(other, key=lambda pair: (pair[0], pair[1]))[1]
    return "Latin"


def is_cjk(text: str) -> bool:
    """Usage: ``is_cjk("파일")`` -> True when the text holds any Han, Kana or Hangul character."""
    return _CJK_RE.search(text) is not None
