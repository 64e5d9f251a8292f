"""English analyzer options: which stemmer and which stopword list, named in the analyzer string.

Usage::

    name = english_analyzer_name(stemmer="porter", stopwords="lucene")   # "english:stemmer=porter,stopwords=lucene"
    terms = lookup(name)("Descaling the machines")           # vaulteval.index.analysis

``english`` itself (Snowball english, the short stopword list of claude-obsidian) is unchanged and
lives in ``vaulteval.index.tokenize``; this module only adds variants, written
``english:stemmer=S,stopwords=W`` with the defaults left out:

- stemmer: ``snowball`` (Snowball english, the default), ``porter`` (the
  original Porter algorithm), ``none``; both stemmers come from PyStemmer;
- stopwords: ``short`` (claude-obsidian's short list, the default), ``lucene`` (the
  English stop set of Apache Lucene's StopAnalyzer/EnglishAnalyzer, 33 words),
  ``none``.

Words are split exactly as by the other analyzers (NFKC, lower case, CJK runs
as 1- to 3-grams, one-character non-CJK words dropped); the tokenizer itself is
``vaulteval.index.tokenize``, and ``vaulteval.index.analysis`` reads these names.
"""

from __future__ import annotations

from collections.abc import Callable

STEMMERS = ("snowball", "porter", "none")
STOPLISTS = ("short", "lucene", "none")
LUCENE_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)
_PYSTEMMER = {"snowball": "english", "porter": "porter"}


class AnalyzerNameError(ValueError):
    """An ``english:...`` analyzer name with an unknown option or value."""


def english_analyzer_name(stemmer: str = "snowball", stopwords: str = "short") -> str:
    """Usage: ``english_analyzer_name("porter")`` -> ``"english:stemmer=porter"``; defaults give ``"english"``."""
    if stemmer not in STEMMERS:
        raise AnalyzerNameError(f"stemmer must be one of {', '.join(STEMMERS)}, got {stemmer!r}")
    if stopwords not in STOPLISTS:
        raise AnalyzerNameError(f"stopwords must be one of {', '.join(STOPLISTS)}, got {stopwords!r}")
    parts = ([f"stemmer={stemmer}"] if stemmer != "snowball" else []) + (
        [f"stopwords={stopwords}"] if stopwords != "short" else [])
    return "english:" + ",".join(parts) if parts else "english"


def parse_analyzer_name(name: str) -> tuple[str, str]:
    """Usage: ``parse_analyzer_name("english:stemmer=porter")`` -> ``("porter", "short")``."""
    head, _, rest = name.partition(":")
    if head != "english" or not rest:
        raise AnalyzerNameError(f"not an english analyzer variant: {name!r}")
    options = {"stemmer": "snowball", "stopwords": "short"}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        if not eq or key not in options:
            raise AnalyzerNameError(f"analyzer {name!r}: unknown option {item!r} (stemmer=, stopwords=)")
        options[key] = value
    stemmer, stopwords = options["stemmer"], options["stopwords"]
    if english_analyzer_name(stemmer, stopwords) != name:
        raise AnalyzerNameError(f"analyzer {name!r} is not in normal form; write {english_analyzer_name(stemmer, stopwords)!r}")
    return stemmer, stopwords


def stopword_list(name: str, short: frozenset[str]) -> frozenset[str]:
    """Usage: ``stopword_list("lucene", STOPWORDS)`` -> the words to drop (``short``: the caller's list, claude-obsidian's)."""
    return {"short": short, "lucene": LUCENE_STOPWORDS, "none": frozenset()}[name]


def make_stemmer(kind: str) -> Callable[[str], str] | None:
    """Usage: ``make_stemmer("porter")("generously")`` -> ``"gener"``; None for ``none``."""
    if kind == "none":
        return None
    import Stemmer  # PyStemmer, imported only when a stemming analyzer is used

    algorithm = Stemmer.Stemmer(_PYSTEMMER[kind])
    cache: dict[str, str] = {}

    def stem(word: str) -> str:
        hit = cache.get(word)
        if hit is None:
            hit = cache[word] = algorithm.stemWord(word)
        return hit

    return stem
