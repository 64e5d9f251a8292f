"""How much a query shares with its target: term overlap, the target's plain-BM25 rank, a page's rarest terms.

Usage::

    lex = Lexicon(ctx.facts)                      # every page's terms under the default analyzer, read once
    lex.overlap("get back a deleted note", "wiki/File recovery.md")    # 0.5: half the query's terms are in it
    lex.bm25_rank("get back a deleted note", "wiki/File recovery.md")  # 3, or None when no query term is in it
    band(0.5)                                     # "mid"

Terms are those of the ``default`` analyzer (the one plain BM25 indexes):
casefolded words without its stopwords, CJK as 1- to 3-grams. ``overlap``
is the share of the query's distinct terms that occur anywhere in the
target page. ``bm25_rank`` scores whole pages with Okapi BM25 (the index's
k1 and b) and counts the pages scored strictly higher, plus one: 1 means
BM25 alone finds the target first. A query whose terms all occur in its
target measures string matching; one that shares few of them measures
whether a strategy understands what is meant.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaulteval.querysets.generate.pages import PageFacts

# Bands of ``overlap``: low < LOW_BELOW <= mid < HIGH_FROM <= high.
LOW_BELOW = 0.5
HIGH_FROM = 0.8
BANDS = ("low", "mid", "high")


def band(overlap: float) -> str:
    """Usage: ``band(0.9)`` -> "high"."""
    if overlap >= HIGH_FROM:
        return "high"
    return "mid" if overlap >= LOW_BELOW else "low"


def terms(text: str) -> list[str]:
    from vaulteval.index.tokenize import tokenize_default

    return tokenize_default(text, bounded=False)


@lru_cache(maxsize=65536)
def word_terms(word: str) -> frozenset[str]:
    """The terms of one word (cached: sentence kinds ask for the same words again and again)."""
    return frozenset(terms(word))


class Lexicon:
    """Per-page term counts, document frequencies and lazily built postings for page-level BM25."""

    def __init__(self, facts: "list[PageFacts]"):
        self.pages = [f.rel for f in facts]
        self.number = {rel: i for i, rel in enumerate(self.pages)}
        self.counts = [Counter(terms(f.text)) for f in facts]
        self.df: Counter = Counter()
        self._docs: dict[str, list[int]] = {}
        for i, c in enumerate(self.counts):
            self.df.update(c.keys())
            for t in c:
                self._docs.setdefault(t, []).append(i)
        self._postings: dict[str, tuple] = {}
        self._norm = None

    def overlap(self, text: str, page: str) -> float:
        """Share of the distinct terms of ``text`` that occur in ``page`` (0.0 for a text without terms)."""
        query = set(terms(text))
        if not query or page not in self.number:
            return 0.0
        held = self.counts[self.number[page]]
        return sum(1 for t in query if t in held) / len(query)

    def rare_terms(self, page: str, k: int) -> set[str]:
        """The ``k`` terms of ``page`` found in the fewest pages (ties: the more frequent in the page first)."""
        held = self.counts[self.number[page]]
        ranked = sorted(held, key=lambda t: (self.df[t], -held[t], t))
        return set(ranked[:k])

    def _posting(self, term: str) -> tuple:
        import numpy as np

        if term not in self._postings:
            docs = self._docs.get(term, [])
            self._postings[term] = (np.asarray(docs, dtype=np.int64),
                                    np.asarray([self.counts[i][term] for i in docs], dtype=np.int64))
        return self._postings[term]

    def bm25_rank(self, text: str, page: str) -> int | None:
        """1 + the number of pages that plain BM25 scores above ``page`` for ``text``; None when it scores 0."""
        import numpy as np

        from vaulteval.index.bm25 import B, K1, length_norm, score_terms

        if page not in self.number:
            return None
        if self._norm is None:
            lengths = np.asarray([sum(c.values()) for c in self.counts], dtype=np.int64)
            self._norm = length_norm(lengths, float(lengths.mean()) if len(lengths) else 0.0, K1, B)
        query = Counter(terms(text))
        postings = [(*self._posting(t), n) for t, n in query.items() if self.df[t]]
        scores = score_terms(len(self.pages), self._norm, postings, K1)
        mine = scores[self.number[page]]
        if mine <= 0:
            return None
        return int(np.count_nonzero(scores > mine)) + 1
