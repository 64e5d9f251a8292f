"""The ``default`` and ``english`` analyzers' rules: text into BM25 terms (``vaulteval.index.analysis`` names them).

Usage: ``terms = tokenize_default(text)``; ``TermMatcher(*term_rules("default"))(text, wanted)`` is
``wanted & set(terms)``, found without listing the terms.

``default`` is exactly claude-obsidian's tokenizer (its retrieve):

1. NFKC, then every match of ``\\w[\\w'\\-]*``, lowercased;
2. each word is cut into runs wherever it changes between CJK and non-CJK;
3. a CJK run gives its 1-, 2- and 3-grams;
4. a non-CJK run loses leading and trailing ``'``, ``_`` and ``-`` and is kept
   when it is longer than one character and not a stopword.

``english`` goes beyond claude-obsidian's tokenizer: the iteration marks 々 〆 〻 count as CJK (so
``佐々木`` gives ``佐々`` and ``々木``), and kept non-CJK runs are Snowball-stemmed.

Input over ``MAX_INPUT_CHARS`` characters, before or after NFKC, is refused with
``TextTooLong`` (exit 2) unless the caller passes ``bounded=False``: the index
build does that for an oversized chunk from another tool and reports it, so no
term is ever dropped silently.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from functools import lru_cache

from vaulteval.errors import UsageError

MAX_INPUT_CHARS = 8_000
# Recorded in the index header: an index built by another analyzer version is refused (exit 10).
ANALYZER_VERSION = 2

# claude-obsidian's stopword list: short on purpose, so recall stays high.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have he her him his i if in is it its "
    "of on or that the their them they this to was were will with you your".split()
)

WORD_RE = re.compile(r"\w[\w'\-]*")
_EDGE_CHARS = "'_-"

# claude-obsidian's CJK ranges, in code point order.
SEED_CJK_RANGES = (
    (0x1100, 0x11FF),    # Hangul Jamo
    (0x3040, 0x309F),    # Hiragana
    (0x30A0, 0x30FF),    # Katakana
    (0x3100, 0x312F),    # Bopomofo
    (0x3130, 0x318F),    # Hangul Compatibility Jamo
    (0x31A0, 0x31BF),    # Bopomofo Extended
    (0x31F0, 0x31FF),    # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),    # CJK Extension A
    (0x4E00, 0x9FFF),    # CJK Unified Ideographs
    (0xA960, 0xA97F),    # Hangul Jamo Extended-A
    (0xAC00, 0xD7AF),    # Hangul Syllables
    (0xD7B0, 0xD7FF),    # Hangul Jamo Extended-B
    (0xF900, 0xFAFF),    # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),    # Halfwidth Katakana
    (0x20000, 0x2FA1F),  # CJK Extensions B-F, compatibility supplement
    (0x30000, 0x323AF),  # CJK Extensions G-H
)
# 々 〆 〻: written inside Japanese words (佐々木, 時々); claude-obsidian's tokenizer leaves them out.
ITERATION_MARKS = ((0x3005, 0x3006), (0x303B, 0x303B))

class TextTooLong(UsageError):
    """A text to analyze is longer than the tokenizer's limit (exit 2)."""


# On lowercased ASCII text: the match of \w[\w'\-]* with its edge ' _ - stripped, when two characters or longer.
# A match runs from the first letter or digit of a run of word characters, ' and - to the last one.
_ASCII_TERM_RE = re.compile(r"[a-z0-9][\w'\-]*[a-z0-9]")


def _class(extended: bool) -> str:
    ranges = tuple(sorted(SEED_CJK_RANGES + ITERATION_MARKS)) if extended else SEED_CJK_RANGES
    return "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)


# Over words joined by NUL without CJK: each word with its edge ' _ - stripped, two characters or longer.
_WORD_CORE_RE = re.compile("[^\\x00'_\\-][^\\x00]*[^\\x00'_\\-]")


@lru_cache(maxsize=2)
def _cjk_runs_re(extended: bool) -> re.Pattern[str]:
    """A run of CJK characters, as a group (``split`` keeps the runs). Compiled on the first non-ASCII text.

    Python's compiler visits every code point of a class's ranges, about 40,000 for these, each time the
    class appears in a pattern; one pattern with the class once (then ``_WORD_CORE_RE`` between the runs)
    compiles several times faster than one that also names the class to end the non-CJK runs."""
    return re.compile(f"([{_class(extended)}]+)")


def over_limit(text: str) -> int | None:
    """The offending length when ``text`` exceeds the limit before or after NFKC, else None."""
    if len(text) > MAX_INPUT_CHARS:
        return len(text)
    normalized = len(unicodedata.normalize("NFKC", text))
    return normalized if normalized > MAX_INPUT_CHARS else None


def check_length(text: str, what: str = "the text") -> None:
    """Raise TextTooLong when ``text`` is over the limit (before or after NFKC)."""
    n = over_limit(text)
    if n is not None:
        raise TextTooLong(f"{what} is {n} characters (NFKC included); the limit is {MAX_INPUT_CHARS}, shorten it")


def _cjk_ngrams(run: str, out: list[str]) -> None:
    """For each position, the 1-, 2- and 3-character substrings starting there."""
    n = len(run)
    for i in range(n - 2):
        out += (run[i], run[i : i + 2], run[i : i + 3])
    if n >= 2:
        out += (run[n - 2], run[n - 2 :])
    out.append(run[n - 1])


def _terms(text: str, extended: bool, stem: Callable[[str], str] | None, bounded: bool,
           stop: frozenset[str] = STOPWORDS) -> list[str]:
    """The analyzer's rules applied by compiled patterns over the whole text (no loop over words).

    ASCII text is its own NFKC form and lowercases letter by letter, so one pattern over the lowered text
    gives the kept runs. Other text is NFKC-normalized, split into words, and the words joined by NUL before
    lowercasing: NUL is neither cased nor case-ignorable, so each word lowercases exactly as it would alone
    (a final sigma included), and no run crosses it.
    """
    if bounded:
        check_length(text)
    if text.isascii():
        out = [w for w in _ASCII_TERM_RE.findall(text.lower()) if w not in stop]
        return [stem(w) for w in out] if stem else out
    joined = "\x00".join(WORD_RE.findall(unicodedata.normalize("NFKC", text))).lower()
    pieces = _cjk_runs_re(extended).split(joined)  # text without CJK, then a CJK run, then text without, ...
    if len(pieces) == 1:
        out = [w for w in _WORD_CORE_RE.findall(joined) if w not in stop]
        return [stem(w) for w in out] if stem else out
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i % 2:
            _cjk_ngrams(piece, out)
            continue
        for part in _WORD_CORE_RE.findall(piece):  # the non-CJK runs between two CJK runs (or an end)
            if part not in stop:
                out.append(stem(part) if stem else part)
    return out


def tokenize_default(text: str, *, bounded: bool = True) -> list[str]:
    """Usage: ``tokenize_default("Descaling the espresso machine")`` -> terms."""
    return _terms(text, False, None, bounded)


@lru_cache(maxsize=1)
def _english_stemmer() -> Callable[[str], str]:
    from vaulteval.index.analyzers import make_stemmer  # PyStemmer loads there, only when english is used

    return make_stemmer("snowball")


def tokenize_english(text: str, *, bounded: bool = True) -> list[str]:
    """Usage: ``tokenize_english("descaling machines")`` -> ``["descal", "machin"]``."""
    return _terms(text, True, _english_stemmer(), bounded)


@lru_cache(maxsize=8)
def _option_rules(name: str) -> tuple[Callable[[str], str] | None, frozenset[str]]:
    """(stemmer, stopwords) of ``english:stemmer=S,stopwords=W`` (vaulteval.index.analyzers)."""
    from vaulteval.index.analyzers import make_stemmer, parse_analyzer_name, stopword_list

    stemmer, stopwords = parse_analyzer_name(name)
    return make_stemmer(stemmer), frozenset(stopword_list(stopwords, STOPWORDS))


@lru_cache(maxsize=8)
def option_analyzer(name: str) -> Callable[..., list[str]]:
    """``english:stemmer=S,stopwords=W``: english's split with another list/stemmer."""
    stem, stop = _option_rules(name)

    def analyze(text: str, *, bounded: bool = True) -> list[str]:
        return _terms(text, True, stem, bounded, stop)

    return analyze


def term_rules(name: str) -> "tuple[bool, Callable[[str], str] | None, frozenset[str]] | None":
    """(iteration marks count as CJK, stemmer, stopwords) of an analyzer this module runs (``default``,
    ``english``, ``english:...``); None for the others (languages, ``auto``)."""
    if name == "default":
        return False, None, STOPWORDS
    if name == "english":
        return True, _english_stemmer(), STOPWORDS
    if isinstance(name, str) and name.startswith("english:"):
        from vaulteval.index.analyzers import AnalyzerNameError

        try:
            return (True, *_option_rules(name))
        except AnalyzerNameError as exc:
            raise UsageError(str(exc)) from None
    return None


# -- Which wanted terms a text holds ------------------------------------------------------------------------
# A hit's snippet scores each sentence by the query terms it holds, and its matched terms are the query terms
# of its indexed text: both need only ``wanted & set(terms)``, never the terms themselves. ``TermMatcher``
# finds that set with ``_terms``'s own patterns and rules, but a CJK run's 1- to 3-grams are not listed (a
# wanted term of CJK characters only is one of them exactly when it occurs in the text as analyzed: NFKC words
# joined by NUL, lower-cased, where every run of CJK characters is a run ``_terms`` cuts into n-grams), each
# distinct word is stemmed once, and pieces of an ASCII text are lower-cased once and searched in place
# (``pattern.findall(text, start, end)``: the pattern has no anchor or lookaround, so that is the search of
# the piece alone). tests/index/test_termmatch.py checks the equality on random and real texts.
#
# Pieces: the terms of a text are the terms of its pieces, in order, when it is cut only next to whitespace,
# a newline or one of 。！？ (snippet sentences are cut so, and an indexed text is its prefix, a newline and the
# chunk), because NFKC works piece by piece there: no such character composes with, reorders around or
# decomposes into a word character (test_termmatch checks this over all of Unicode), and no word spans one.


class TermMatcher:
    """``wanted & set(analyze(text, bounded=False))`` for one analyzer of ``vaulteval.index.tokenize``."""

    __slots__ = ("extended", "stem", "stop", "_cjk")

    def __init__(self, extended: bool, stem: Callable[[str], str] | None, stop: frozenset[str]):
        self.extended, self.stem, self.stop = extended, stem, stop
        self._cjk: dict[frozenset[str], frozenset[str]] = {}  # wanted -> those of its terms that are CJK n-grams

    def _words(self, words: list[str], wanted: frozenset[str]) -> frozenset[str]:
        """The wanted terms among words cut by the analyzer's pattern: stopwords dropped, then stemmed."""
        if self.stem is None:
            return wanted.intersection(words).difference(self.stop)
        stem, stop = self.stem, self.stop
        return wanted.intersection([stem(w) for w in set(words) if w not in stop])

    def _grams(self, wanted: frozenset[str]) -> frozenset[str]:
        found = self._cjk.get(wanted)
        if found is None:
            if len(self._cjk) >= 4096:
                self._cjk.clear()
            runs = _cjk_runs_re(self.extended)
            found = self._cjk[wanted] = frozenset(t for t in wanted if runs.fullmatch(t))
        return found

    def __call__(self, text: str, wanted: frozenset[str]) -> frozenset[str]:
        if text.isascii():
            return self._words(_ASCII_TERM_RE.findall(text.lower()), wanted)
        joined = "\x00".join(WORD_RE.findall(unicodedata.normalize("NFKC", text))).lower()
        pieces = _cjk_runs_re(self.extended).split(joined)  # text without CJK, a CJK run, text without, ...
        if len(pieces) == 1:
            return self._words(_WORD_CORE_RE.findall(joined), wanted)
        # NUL ends a word core as it does in tokenize: the pieces between the runs stay apart.
        found = self._words(_WORD_CORE_RE.findall("\x00".join(pieces[0::2])), wanted)
        return found.union([t for t in self._grams(wanted) if t in joined])

    def each(self, text: str, spans: list[tuple[int, int]], wanted: frozenset[str]) -> Iterator[frozenset[str]]:
        """``self(text[start:end], wanted)`` for each of ``spans`` in turn (read only as far as the caller asks)."""
        if not text.isascii():
            for start, end in spans:
                yield self(text[start:end], wanted)
            return
        lowered, words = text.lower(), self._words
        for start, end in spans:
            yield words(_ASCII_TERM_RE.findall(lowered, start, end), wanted)
