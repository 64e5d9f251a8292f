"""Analyzers that turn text into BM25 terms.

Usage: ``terms = get_analyzer("default")(text)``

``default`` follows the seed tokenizer (NFKC, lowercase, ``\\w[\\w'\\-]*`` words,
CJK runs as 1-, 2- and 3-grams, a small English stopword list, no one-character
non-CJK terms). ``english`` adds Snowball stemming to the non-CJK words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

MAX_INPUT_CHARS = 8_000
MAX_TERMS = 20_000

# The seed's list: short on purpose, so recall stays high.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have he her him his i if in is it its "
    "of on or that the their them they this to was were will with you your".split()
)

WORD_RE = re.compile(r"\w[\w'\-]*")
# Han (incl. extension A and compatibility ideographs), Hiragana, Katakana
# (incl. phonetic extensions and half-width forms), Hangul, Bopomofo.
CJK_CLASS = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
    "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
    "\u3100-\u312f\u31a0-\u31bf"
)
CJK_RUN_RE = re.compile(f"[{CJK_CLASS}]+")
CJK_SPLIT_RE = re.compile(f"([{CJK_CLASS}]+)")

ANALYZERS = ("default", "english")


def _cjk_ngrams(run: str, out: list[str]) -> None:
    n = len(run)
    for i in range(n):
        out.append(run[i])
        if i + 1 < n:
            out.append(run[i : i + 2])
        if i + 2 < n:
            out.append(run[i : i + 3])


def _tokens(text: str, stem: Callable[[str], str] | None) -> list[str]:
    text = unicodedata.normalize("NFKC", text[:MAX_INPUT_CHARS]).lower()
    out: list[str] = []
    for word in WORD_RE.findall(text):
        if CJK_RUN_RE.search(word) is None:
            if len(word) > 1 and word not in STOPWORDS:
                out.append(stem(word) if stem else word)
            continue
        # Mixed or pure CJK word: n-grams for the CJK runs, words for the rest.
        for part in CJK_SPLIT_RE.split(word):
            if not part:
                continue
            if CJK_RUN_RE.fullmatch(part):
                _cjk_ngrams(part, out)
            else:
                for sub in WORD_RE.findall(part):
                    if len(sub) > 1 and sub not in STOPWORDS:
                        out.append(stem(sub) if stem else sub)
        if len(out) >= MAX_TERMS:
            break
    return out[:MAX_TERMS]


def tokenize_default(text: str) -> list[str]:
    """Usage: ``tokenize_default("Descaling the espresso machine")`` -> terms."""
    return _tokens(text, None)


@lru_cache(maxsize=1)
def _english_stemmer() -> Callable[[str], str]:
    import Stemmer  # PyStemmer; imported lazily so the default path stays light

    stemmer = Stemmer.Stemmer("english")
    cache: dict[str, str] = {}

    def stem(word: str) -> str:
        hit = cache.get(word)
        if hit is None:
            hit = cache[word] = stemmer.stemWord(word)
        return hit

    return stem


def tokenize_english(text: str) -> list[str]:
    """Usage: ``tokenize_english("descaling machines")`` -> ``["descal", "machin"]``."""
    return _tokens(text, _english_stemmer())


def get_analyzer(name: str) -> Callable[[str], list[str]]:
    """Usage: ``get_analyzer("english")`` -> a function from text to terms."""
    if name == "default":
        return tokenize_default
    if name == "english":
        return tokenize_english
    from vaulteval.errors import UsageError

    raise UsageError(f"unknown analyzer {name!r}: choose one of {', '.join(ANALYZERS)}")
