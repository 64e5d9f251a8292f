"""Which writing systems a text uses: letters counted per script with a few compiled patterns.

Usage: ``script_counts("削除したノート")`` -> ``{"han": 2, "kana": 5}``; ``main_script(counts)`` -> ``"kana"``.

Chinese, Japanese and Korean are told apart here, before any identifier runs: kana means
Japanese, Hangul Korean, Han characters alone Chinese. A text counts as CJK when at least a
tenth of its letters are (tldr's Chinese pages are mostly command names in Latin letters).
"""

from __future__ import annotations

import re
from functools import lru_cache

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


@lru_cache(maxsize=1)
def _patterns() -> dict[str, re.Pattern[str]]:
    return {name: re.compile(f"[{chars}]") for name, chars in SCRIPTS.items()}


_ASCII_LETTERS = re.compile("[A-Za-z]")
_NON_ASCII = re.compile("[^\x00-\x7f]")


def script_counts(text: str) -> dict[str, int]:
    """Letters of each script in ``text`` (scripts with none are left out)."""
    if text.isascii():
        n = len(_ASCII_LETTERS.findall(text))
        return {"latin": n} if n else {}
    rest = "".join(_NON_ASCII.findall(text))
    counts = {"latin": len(_ASCII_LETTERS.findall(text))}
    for name, pattern in _patterns().items():
        n = len(pattern.findall(rest))
        if n:
            counts[name] = counts.get(name, 0) + n
    return {k: v for k, v in counts.items() if v}


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
