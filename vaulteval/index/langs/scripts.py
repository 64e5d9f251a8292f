"""Which writing systems a text uses: letters counted per script from the code point ranges below.

Usage: ``script_counts("削除したノート")`` -> ``{"han": 2, "kana": 5}``; ``main_script(counts)`` -> ``"kana"``.

Chinese, Japanese and Korean are told apart here, before any identifier runs: kana means
Japanese, Hangul Korean, Han characters alone Chinese. A text counts as CJK when at least a
tenth of its letters are (tldr's Chinese pages are mostly command names in Latin letters).

A text's non-ASCII characters are tallied, and each distinct character is looked up once (by
bisection over the ranges, then remembered): no pattern of two dozen Unicode classes is compiled,
which cost a CLI query with one accented letter about 20 ms.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from functools import lru_cache

from vaulteval.index.langs.catalog import LANGUAGES, languages_of_script

# Unicode blocks per script (letters only; digits and punctuation are not counted).
SCRIPTS: dict[str, str] = {
    "latin": "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff",
    "cyrillic": "\u0400-\u052f",
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "armenian": "\u0530-\u058f",
    "hebrew": "\u0590-\u05ff",
    "arabic": "\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff",
    "devanagari": "\u0900-\u097f",
    "bengali": "\u0980-\u09ff",
    "gurmukhi": "\u0a00-\u0a7f",
    "gujarati": "\u0a80-\u0aff",
    "tamil": "\u0b80-\u0bff",
    "telugu": "\u0c00-\u0c7f",
    "kannada": "\u0c80-\u0cff",
    "malayalam": "\u0d00-\u0d7f",
    "sinhala": "\u0d80-\u0dff",
    "thai": "\u0e00-\u0e7f",
    "lao": "\u0e80-\u0eff",
    "myanmar": "\u1000-\u109f",
    "georgian": "\u10a0-\u10ff",
    "ethiopic": "\u1200-\u137f",
    "khmer": "\u1780-\u17ff",
    "hangul": "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff",
    "kana": "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "han": "\u3005\u3006\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\U00030000-\U000323af",
}
CJK = ("han", "kana", "hangul")
CJK_SHARE = 0.1  # a text is CJK when at least this share of its letters are


_NOT_ASCII_LETTERS = bytes(c for c in range(128) if not chr(c).isalpha())  # deleted, the ASCII letters remain
_NON_ASCII_RUNS = re.compile("[^\x00-\x7f]+")


@lru_cache(maxsize=1)
def _ranges() -> tuple[list[int], list[tuple[int, str]]]:
    """(starts, (end, script) per start) of every range in ``SCRIPTS``, sorted; they do not overlap."""
    spans = []
    for name, chars in SCRIPTS.items():
        i = 0
        while i < len(chars):
            if i + 2 < len(chars) and chars[i + 1] == "-":
                spans.append((ord(chars[i]), ord(chars[i + 2]), name))
                i += 3
            else:
                spans.append((ord(chars[i]), ord(chars[i]), name))
                i += 1
    spans.sort()
    return [a for a, _, _ in spans], [(b, name) for _, b, name in spans]


_SCRIPT_OF: dict[str, str | None] = {}  # character -> its script (None: a letter of none, or not a letter)


def script_of(char: str) -> str | None:
    """The ``SCRIPTS`` entry whose ranges hold ``char``, else None."""
    hit = _SCRIPT_OF.get(char, "")
    if hit != "":
        return hit
    starts, ends = _ranges()
    i = bisect_right(starts, ord(char)) - 1
    found = ends[i][1] if i >= 0 and ord(char) <= ends[i][0] else None
    if len(_SCRIPT_OF) < 100_000:
        _SCRIPT_OF[char] = found
    return found


def script_counts(text: str) -> dict[str, int]:
    """Letters of each script in ``text`` (scripts with none are left out), in ``SCRIPTS`` order."""
    # ASCII letters are counted by deleting every other byte (C speed); the non-ASCII characters are tallied
    # from their runs. A list of every letter matched, as a findall gives, cost a build nearly as much as the
    # identifier's own work on short notes.
    latin = len(text.encode("ascii", "ignore").translate(None, _NOT_ASCII_LETTERS))
    if text.isascii():
        return {"latin": latin} if latin else {}
    tally: dict[str | None, int] = {"latin": latin}
    for char, n in Counter("".join(_NON_ASCII_RUNS.findall(text))).items():
        name = script_of(char)
        tally[name] = tally.get(name, 0) + n
    return {name: tally[name] for name in SCRIPTS if tally.get(name)}


def cjk_language(counts: dict[str, int]) -> str | None:
    """``zh``, ``ja`` or ``ko`` when the text is CJK (see the module note), else None."""
    han, kana, hangul = (counts.get(s, 0) for s in CJK)
    cjk = han + kana + hangul
    if not cjk or cjk < CJK_SHARE * sum(counts.values()):
        return None
    if hangul >= kana and hangul * 3 >= cjk:
        return "ko"
    if kana and kana * 20 >= cjk:
        return "ja"
    return "zh" if han >= hangul else "ko"


def main_script(counts: dict[str, int]) -> str | None:
    """The script with the most letters (CJK texts: ``han``, ``kana`` or ``hangul`` as ``cjk_language`` decides)."""
    lang = cjk_language(counts)
    if lang is not None:
        return {"zh": "han", "ja": "kana", "ko": "hangul"}[lang]
    others = {k: v for k, v in counts.items() if k not in CJK}
    return max(others, key=others.__getitem__) if others else None


def han_languages(present) -> list[str]:
    """The languages of ``present`` a text in Han characters alone may be in: Chinese and Japanese, since kanji
    alone (``暗号化``) are Japanese as well; Chinese when the vault has neither."""
    return [code for code in ("zh", "ja") if code in present] or ["zh"]


def candidates_of(counts: dict[str, int]) -> tuple[str | None, list[str]]:
    """(script, its catalog languages) of a text's letter counts; a CJK text gives its one language."""
    cjk = cjk_language(counts)
    if cjk is not None:
        return LANGUAGES[cjk].script, [cjk]
    script = main_script(counts)
    return script, languages_of_script(script) if script else []
