"""The term matcher finds exactly the wanted terms the analyzer gives a text (snippets and matched terms use it).

Usage: ``.venv/bin/python -m pytest tests/index/test_termmatch.py -q``
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hypothesis_budget import examples
from vaulteval.index.tokenize import get_analyzer, term_matcher

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
    analyze, match = get_analyzer(analyzer), term_matcher(analyzer)
    wanted = _wanted(analyze, *TEXTS)
    assert match(text, wanted) == wanted & set(analyze(text, bounded=False))
    assert match(text, wanted), "the table's texts all hold wanted terms: the equality above is not vacuous"


@settings(max_examples=examples() * 10, deadline=None)
@given(st.sampled_from(ANALYZERS), st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join),
       st.lists(st.sampled_from(ALPHABET), max_size=20).map("".join))
def test_the_matcher_agrees_on_random_text(analyzer: str, text: str, other: str) -> None:
    analyze, match = get_analyzer(analyzer), term_matcher(analyzer)
    wanted = _wanted(analyze, text[: len(text) // 2], other)
    assert match(text, wanted) == wanted & set(analyze(text, bounded=False))
    spans = [(0, len(text) // 3), (len(text) // 3, len(text)), (1, max(1, len(text) - 1))]
    assert list(match.each(text, spans, wanted)) == [match(text[a:b], wanted) for a, b in spans]


def test_analyzers_outside_tokenize_have_no_matcher() -> None:
    assert term_matcher("auto") is None
