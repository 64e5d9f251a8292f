"""Snowball analyzers (PyStemmer) with each language's stopwords, accent folding and compound splitting.

Usage: ``SnowballAnalyzer(LANGUAGES["ru"])("Как восстановить удалённую заметку")`` -> ``["восстанов", "удален", "заметк"]``.

Per word: drop it when it is a stopword, else split compounds (German, Dutch, Swedish: the word
and its parts are kept), stem with the language's Snowball algorithm, fold accents when on.
Stopwords come from the ``stop-words`` package (python-stop-words, maintained, BSD), kept to the
words wordfreq counts as the language's most common (``COMMON_ZIPF``): its lists are long (English
1,333 words, with "help", "new", "open", "use"), and on the help vault's questions the whole lists
cost German and Russian more than they gave (docs/benchmarks.md). ``stopwords=none`` turns them
off. A language either package has no list for has none. ``plain`` languages (no Snowball algorithm) are split and stop-listed but not stemmed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from vaulteval.index.langs.catalog import UNDETERMINED, Language
from vaulteval.index.langs.libraries import need
from vaulteval.index.langs.words import cjk_ngrams, fold, split_cjk, words


MEMO_LIMIT = 200_000  # words whose terms an analyzer remembers; it starts over past this
COMMON_ZIPF = 6.0  # a listed stopword is dropped when it is this common: once in a thousand words or more


@lru_cache(maxsize=None)
def stopwords(code: str) -> frozenset[str]:
    """The ``stop-words`` package's list for ``code``, kept to the language's most common words (wordfreq)."""
    if code == UNDETERMINED:  # the plain split of text in no known language: no list to look up
        return frozenset()
    stop_words = need("stop_words", f"{code} stopword")
    name = stop_words.LANGUAGE_MAPPING.get(code)
    if name is None:
        return frozenset()
    from unicodedata import normalize

    from vaulteval.index.langs.frequencies import zipf

    common = zipf(code, COMMON_ZIPF)
    listed = (normalize("NFKC", w).lower() for w in stop_words.get_stop_words(name))
    return frozenset(w for w in listed if common.get(w, 0.0) >= COMMON_ZIPF)


@lru_cache(maxsize=None)
def stemmer(algorithm: str) -> Callable[[str], str]:
    """A cached PyStemmer ``stemWord`` for one Snowball algorithm."""
    Stemmer = need("Stemmer", algorithm)
    stem_word = Stemmer.Stemmer(algorithm).stemWord
    cache: dict[str, str] = {}

    def stem(word: str) -> str:
        hit = cache.get(word)
        if hit is None:
            hit = cache[word] = stem_word(word)
        return hit

    return stem


class SnowballAnalyzer:
    """One language's analyzer; ``fold``/``compounds``/``stop`` default to the catalog's choice."""

    def __init__(self, language: Language, *, fold_accents: bool | None = None, compounds: bool | None = None,
                 stop: bool = True):
        self.language = language
        self.fold = language.fold if fold_accents is None else fold_accents
        self.compounds = language.compounds if compounds is None else compounds
        self._stop = stopwords(language.code) if stop else frozenset()
        self._stem = stemmer(language.analyzer) if language.kind == "snowball" else None
        self._split = None
        self._memo: dict[str, tuple[str, ...]] = {}
        if self.compounds:
            from vaulteval.index.langs.compounds import splitter

            self._split = splitter(language.code)

    def __call__(self, text: str) -> list[str]:
        return self.of_words(words(text))

    def of_words(self, split: list[str]) -> list[str]:
        """The terms of a text already split by ``words`` (``auto`` splits a query once for all its languages)."""
        out: list[str] = []
        memo = self._memo
        if len(memo) > MEMO_LIMIT:
            memo.clear()
        for word in split:
            terms = memo.get(word)
            if terms is None:
                terms = memo[word] = self._of_word(word)
            out.extend(terms)
        return out

    def _of_word(self, word: str) -> tuple[str, ...]:
        """One word's terms (they depend on the word alone: a build looks each distinct word up once)."""
        out: list[str] = []
        if word.isascii():
            self._word(word, out)
            return tuple(out)
        for is_cjk, run in split_cjk(word):
            if is_cjk:
                cjk_ngrams(run, out)
            else:
                self._word(run, out)
        return tuple(out)

    def _word(self, word: str, out: list[str]) -> None:
        if len(word) < 2 or word in self._stop:
            return
        parts = self._split(word) if self._split is not None else (word,)
        for part in parts:
            term = self._stem(part) if self._stem is not None else part
            out.append(fold(term) if self.fold else term)
