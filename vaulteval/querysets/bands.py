"""Can a query set judge semantic strategies? From each query's recorded ``overlap_band``.

Usage::

    high, measured = high_overlap(queryset)      # queries in the high band, queries with a band
    note = semantic_note(queryset)               # a sentence for the report's headline, or None

A query whose terms nearly all occur in its target page (``overlap_band:
high``, docs/querysets.md) is found by string matching; it rewards BM25 and
cannot show what a reranker, dense or hybrid retrieval adds. When more than
half of the positive queries with a band are high, the set is marked as
one that cannot judge semantic strategies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import QuerySet


def high_overlap(queryset: "QuerySet") -> tuple[int, int]:
    """(positive queries in the high band, positive queries with any band)."""
    bands = [q.overlap_band for q in queryset.positive if q.overlap_band]
    return sum(1 for b in bands if b == "high"), len(bands)


def judges_semantic(queryset: "QuerySet") -> bool:
    """False when more than half of the banded positive queries are high-overlap."""
    high, measured = high_overlap(queryset)
    return not (measured and high * 2 > measured)


def semantic_note(queryset: "QuerySet") -> str | None:
    """The headline warning for a set that cannot judge semantic strategies; None when it can (or has no bands)."""
    high, measured = high_overlap(queryset)
    if judges_semantic(queryset):
        return None
    return (f"CANNOT JUDGE SEMANTIC STRATEGIES: {high} of {measured} queries ({high / measured:.0%}) share most of "
            "their words with their page (overlap_band high); they reward string matching, so a loss of rerank, "
            "dense or hybrid here says little. Read the overlap slices, or judge real questions")
