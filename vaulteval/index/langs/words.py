"""The word split every language analyzer shares, CJK runs inside other text, and accent folding.

Usage: ``words("L'application «Notizen»")`` -> ``["l", "application", "notizen"]``; ``fold("matrículas")`` -> ``"matriculas"``.

Text is NFKC-normalized and lower-cased; a word is a run of letters, combining marks, digits
and ``_`` (``regex``'s ``\\p{L}\\p{M}\\p{N}``), so apostrophes and hyphens split (French elision,
``Zwei-Faktor``) and Devanagari or Thai vowel signs stay inside their word. CJK runs inside a
word of another language give their 1- to 3-grams, as the default analyzer does.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from vaulteval.index.langs.scripts import CJK, SCRIPTS

_ASCII_WORD = re.compile("[a-z0-9_]+")


@lru_cache(maxsize=1)
def _patterns():
    """(word, CJK character, CJK run) patterns: ``regex`` and its large classes load on the first non-ASCII text."""
    import regex

    # The CJK blocks (not the script property: the prolonged sound mark ー is "Common" but inside Katakana).
    cjk = "".join(SCRIPTS[name] for name in CJK)
    return (regex.compile(r"[\p{L}\p{N}_][\p{L}\p{M}\p{N}_]*"), regex.compile(f"[{cjk}]"),
            regex.compile(f"([{cjk}]+)|[^{cjk}]+"))


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` after NFKC."""
    text = unicodedata.normalize("NFKC", text).lower()
    return _ASCII_WORD.findall(text) if text.isascii() else _patterns()[0].findall(text)


def has_cjk(text: str) -> bool:
    return not text.isascii() and _patterns()[1].search(text) is not None


def cjk_ngrams(run: str, out: list[str]) -> None:
    """Append the 1-, 2- and 3-grams of a CJK run, in the default analyzer's order."""
    n = len(run)
    for i in range(n):
        out.append(run[i])
        if i + 1 < n:
            out.append(run[i:i + 2])
        if i + 2 < n:
            out.append(run[i:i + 3])


def split_cjk(word: str) -> list[tuple[bool, str]]:
    """(is CJK, run) pieces of a non-ASCII word."""
    return [(bool(m.group(1)), m.group(0)) for m in _patterns()[2].finditer(word)]


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """``word`` without combining accents (é → e, ñ → n, ç → c); letters without a decomposition stay."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))
