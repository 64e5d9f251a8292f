"""The term matcher finds exactly the wanted terms the analyzer gives a text (snippets and matched terms use it).

Usage: ``.venv/bin/python -m pytest tests/index/test_termmatch.py -q``
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hypothesis_budget import examples
from vaulteval.index.analysis import lookup
from vaulteval.index.tokenize import WORD_RE

ANALYZERS = ("default", "english", "english:stemmer=porter,stopwords=lucene", "english:stemmer=none")
# Characters where the analyzers' rules differ: CJK runs and iteration marks, NFKC forms, edge characters,
# a final sigma, cased and uncased scripts.
ALPHABET = list("abcAB019 '_-.\n\t東京のラー々〆한국ＥＳ①²ﬁΣσςΑ") + ["the", "running", "machines", "東京タワー"]
TEXTS = ("Descaling the espresso MACHINE every 2 weeks.", "東京タワーの夜景 and Tokyo's towers", "ΟΔΟΣ Σοφία",
         "ﬁlter ①② step m² __init__ pre- _-'x'-_ ab'_", "佐々木さん 時々 〆切", "snake_case user's well-formed")


def _wanted(analyze, *texts: str) -> frozenset[str]:
    """Terms of the texts themselves and of others, so some are present and some not."""
    terms = {t for text in texts for t in analyze(text, bounded=False)}
    return frozenset(terms | {"espresso", "東京", "京", "nothing", "the", "σοφια", "descal"})


@pytest.mark.parametrize("analyzer", ANALYZERS)
@pytest.mark.parametrize("text", TEXTS)
def test_the_matcher_finds_what_the_analyzer_gives(analyzer: str, text: str) -> None:
    analyze, match = lookup(analyzer), lookup(analyzer).matcher
    wanted = _wanted(analyze, *TEXTS)
    assert match(text, wanted) == wanted & set(analyze(text, bounded=False))
    assert match(text, wanted), "the table's texts all hold wanted terms: the equality above is not vacuous"


@settings(max_examples=examples() * 3, deadline=None)
@given(st.sampled_from(ANALYZERS), st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join),
       st.lists(st.sampled_from(ALPHABET), max_size=20).map("".join))
def test_the_matcher_agrees_on_random_text(analyzer: str, text: str, other: str) -> None:
    analyze, match = lookup(analyzer), lookup(analyzer).matcher
    wanted = _wanted(analyze, text[: len(text) // 2], other)
    assert match(text, wanted) == wanted & set(analyze(text, bounded=False))
    spans = [(0, len(text) // 3), (len(text) // 3, len(text)), (1, max(1, len(text) - 1))]
    assert list(match.each(text, spans, wanted)) == [match(text[a:b], wanted) for a, b in spans]


def test_analyzers_outside_tokenize_have_no_matcher() -> None:
    assert lookup("auto").matcher is None and lookup("german").matcher is None


# -- Pieces: a text's terms are its pieces' terms when it is cut next to whitespace, a newline or 。！？ ----------

CUTS = [chr(c) for c in range(0x110000) if chr(c).isspace()] + list("。！？")


def _composition_pairs() -> tuple[set[str], set[str]]:
    """First and second characters of every two-character canonical decomposition (a superset of NFC's pairs)."""
    firsts, seconds = set(), set()
    for code in range(0x110000):
        mapping = unicodedata.decomposition(chr(code))
        if mapping and not mapping.startswith("<") and len(parts := mapping.split()) == 2:
            firsts.add(chr(int(parts[0], 16)))
            seconds.add(chr(int(parts[1], 16)))
    return firsts, seconds


def test_cut_characters_never_join_their_neighbours_under_nfkc() -> None:
    firsts, seconds = _composition_pairs()
    hangul = lambda ch: 0x1100 <= ord(ch) <= 0x11FF or 0xAC00 <= ord(ch) <= 0xD7A3  # noqa: E731
    for cut in CUTS:
        for ch in unicodedata.normalize("NFKD", cut):
            # A starter that composes with nothing on either side: NFKC of text around it is NFKC of each side.
            assert unicodedata.combining(ch) == 0 and ch not in firsts and ch not in seconds and not hangul(ch), \
                (hex(ord(cut)), hex(ord(ch)))
        assert not WORD_RE.search(unicodedata.normalize("NFKC", cut)) and "'" not in cut and "-" not in cut


MARKS = ["\u0301", "\u0308", "\u0338", "\u3099", "\u1161", "\u11a8", "\u0345"]
PIECES = ALPHABET + MARKS + ["。", "！", "？", "\u00a0", "\u3000", "\u2028", "\r", " ", "\n\n", "=", "<", "Å"]


@settings(max_examples=examples() * 3, deadline=None)
@given(st.sampled_from(ANALYZERS), st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
       st.lists(st.sampled_from(PIECES), max_size=10).map("".join))
def test_a_texts_terms_are_its_sentences_and_its_prefix_terms(analyzer: str, text: str, prefix: str) -> None:
    from vaulteval.pipeline.passages import _sentences

    analyze, match = lookup(analyzer), lookup(analyzer).matcher
    assert [t for s, e in _sentences(text) for t in analyze(text[s:e], bounded=False)] == analyze(text, bounded=False)
    assert analyze(prefix + "\n\n" + text, bounded=False) == analyze(prefix + "\n\n", bounded=False) + analyze(text, bounded=False)
    wanted = _wanted(analyze, text)
    held = frozenset().union(*match.each(text, _sentences(text), wanted))
    assert held == match(text, wanted)
