"""The word split every language analyzer shares, CJK runs inside other text, and accent folding.

Usage: ``words("L'application «Notizen»")`` -> ``["l", "application", "notizen"]``; ``fold("matrículas")`` -> ``"matriculas"``.

Text is NFKC-normalized and lower-cased; a word is a run of letters, combining marks, digits
and ``_`` (``regex``'s ``\\p{L}\\p{M}\\p{N}``), so apostrophes and hyphens split (French elision,
``Zwei-Faktor``) and Devanagari or Thai vowel signs stay inside their word. CJK runs inside a
word of another language give their 1- to 3-grams, as the default analyzer does. Text in the
blocks where ``re`` agrees with ``regex`` (``FAST_BLOCKS``) is split by ``re``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from vaulteval.index.langs.scripts import CJK, SCRIPTS, script_of

_ASCII_WORD = re.compile("[a-z0-9_]+")
# In these blocks (Latin, Greek, Cyrillic, punctuation, arrows and symbols, Han, kana, Hangul, full-width
# forms) ``re``'s \w is exactly \p{L}\p{N}_ and the only combining marks are the four ranges in
# ``_FAST_WORD`` (tests/index/test_languages.py checks every code point against ``regex``): text in them is
# split without importing ``regex``, which costs a CLI query about 20 ms.
FAST_BLOCKS = ((0x0000, 0x052F), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2190, 0x2BFF), (0x2E80, 0x9FFF),
               (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF))
_FAST_WORD = re.compile("\\w[\\w\u0300-\u036f\u0483-\u0489\u302a-\u302f\u3099\u309a]*")

# Characters met so far, by class. A character class spanning these blocks takes ``re`` several
# milliseconds to compile, more than a query spends on all its text: a text's distinct characters
# are looked up here instead (set operations), each new one classified once.
_FAST: set[str] = set(map(chr, range(128)))
_SLOW: set[str] = set()
_CJK: set[str] = set()


def _learn(chars: set[str]) -> None:
    for char in chars - _FAST - _SLOW:
        code = ord(char)
        (_FAST if any(low <= code <= high for low, high in FAST_BLOCKS) else _SLOW).add(char)
        if script_of(char) in CJK:  # the CJK blocks, not the script property (ー is "Common")
            _CJK.add(char)


def _chars(text: str) -> set[str]:
    chars = set(text)
    if not chars <= _FAST:
        _learn(chars)
    return chars


@lru_cache(maxsize=1)
def _cjk_runs() -> re.Pattern[str]:
    cjk = "".join(SCRIPTS[name] for name in CJK)
    return re.compile(f"([{cjk}]+)|[^{cjk}]+")


# The scripts whose letters (all but a few, such as Vietnamese ones) lie in ``FAST_BLOCKS``.
FAST_SCRIPTS = frozenset({"latin", "greek", "cyrillic", "han", "kana", "hangul"})


def load(scripts) -> None:
    """Load now what splitting text in ``scripts`` (``SCRIPTS`` names) would load on first use: ``regex``."""
    if not FAST_SCRIPTS.issuperset(scripts):
        _word_pattern()


@lru_cache(maxsize=1)
def _word_pattern():
    """The word pattern for any other text: ``regex`` and its Unicode properties load on first use."""
    import regex

    return regex.compile(r"[\p{L}\p{N}_][\p{L}\p{M}\p{N}_]*")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` after NFKC."""
    text = unicodedata.normalize("NFKC", text).lower()
    if text.isascii():
        return _ASCII_WORD.findall(text)
    if _chars(text) <= _FAST:
        return _FAST_WORD.findall(text)
    return _word_pattern().findall(text)


def has_cjk(text: str) -> bool:
    return not text.isascii() and not _chars(text).isdisjoint(_CJK)


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
    if not has_cjk(word):
        return [(False, word)] if word else []
    return [(bool(m.group(1)), m.group(0)) for m in _cjk_runs().finditer(word)]


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """``word`` without combining accents (é → e, ñ → n, ç → c); letters without a decomposition stay."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))
