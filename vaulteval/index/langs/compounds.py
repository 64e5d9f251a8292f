"""Compound splitting for German, Dutch and Swedish: dictionary-based, with word frequencies from wordfreq.

Usage: ``splitter("de")("tresorverwaltung")`` -> ``("tresorverwaltung", "tresor", "verwaltung")``.

A word of at least ``MIN_WORD`` letters is split where every part (``MIN_PART`` letters or more,
the left one also with a linking element such as German ``-s-`` or Dutch ``-en-`` removed) is a
word of the language's wordfreq list, choosing the split whose parts have the highest geometric
mean frequency (Koehn and Knight's frequency method, 2003). A word that is itself a common word
of the list (``MIN_ZIPF``) is never split: ``Studierende`` and ``Überschriften`` stay whole, where
the frequency comparison alone cut them into ``studier|ende`` and ``über|schriften``. The word itself is kept next to its parts, as Lucene's
decompounding filters do, so an exact compound still matches best. The list (wordfreq's
``small`` list, about 40,000 words) is loaded on the first word that could be a compound.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from vaulteval.index.langs.frequencies import zipf

MIN_WORD = 8
MIN_PART = 4
MIN_ZIPF = 2.5  # a part rarer than this (per billion words: about 300) is not trusted as a word
LINKING = {"de": ("s", "es", "n", "en", "e", "er", "ens"), "nl": ("s", "en", "e"), "sv": ("s", "a", "u", "o", "e")}


def _zipf(code: str) -> dict[str, float]:
    return zipf(code)


def splitter(code: str) -> Callable[[str], tuple[str, ...]]:
    """The word followed by its parts when it splits, else the word alone."""
    linking = LINKING.get(code, ())

    @lru_cache(maxsize=65536)
    def split(word: str) -> tuple[str, ...]:
        if len(word) < MIN_WORD or not word.isalpha() or _zipf(code).get(word, 0.0) >= MIN_ZIPF:
            return (word,)
        found = _best(word, _zipf(code), linking)
        return (word, *found) if found else (word,)

    return split


def _best(word: str, zipf: dict[str, float], linking: tuple[str, ...]) -> tuple[str, ...] | None:
    """The parts of the best split of ``word`` (two or more), or None when none beats the word itself."""
    best: tuple[float, tuple[str, ...]] | None = None
    for i in range(MIN_PART, len(word) - MIN_PART + 1):
        left, right = word[:i], word[i:]
        forms = [left] + [left[:-len(s)] for s in linking if left.endswith(s) and len(left) - len(s) >= MIN_PART]
        head = max(((zipf.get(f, 0.0), f) for f in forms), default=(0.0, left))
        if head[0] < MIN_ZIPF:
            continue
        tail = _tail(right, zipf, linking)
        if tail is None:
            continue
        scores = [head[0], *tail[0]]
        score = _geomean(scores)
        if best is None or score > best[0]:
            best = (score, (head[1], *tail[1]))
    if best is None:
        return None
    return best[1]


def _tail(word: str, zipf: dict[str, float], linking: tuple[str, ...]) -> tuple[list[float], tuple[str, ...]] | None:
    """A right-hand part as one word, or split again (three-part compounds)."""
    own = zipf.get(word, 0.0)
    if own >= MIN_ZIPF:
        return [own], (word,)
    if len(word) >= 2 * MIN_PART:
        parts = _best(word, zipf, linking)
        if parts is not None:
            return [zipf.get(p, MIN_ZIPF) for p in parts], parts
    return None


def _geomean(values: list[float]) -> float:
    product = 1.0
    for v in values:
        product *= v
    return product ** (1 / len(values))
