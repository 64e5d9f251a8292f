"""A generated query before sampling, and the small text helpers every kind shares.

Usage: ``Candidate("title", "exact", "Grinder", (("wiki/coffee/Grinder.md", 2),), "wiki/coffee/Grinder.md", 1, "coffee|")``
"""

from __future__ import annotations

import random
import re
from typing import NamedTuple

_WORD_RE = re.compile(r"\w+", re.UNICODE)


class Candidate(NamedTuple):
    """One possible query: its kind and variant, text, judgments, where it came from and its stratum."""

    kind: str
    variant: str
    text: str
    relevant: tuple[tuple[str, int], ...]
    page: str
    line: int
    stratum: str
    status: str = ""  # "assumed-negative" for negatives a person should confirm
    measures: tuple = ()  # (("overlap", 0.4), ("overlap_band", "low"), ("bm25_rank", 7)) once measured


def norm_text(text: str) -> str:
    """The dedup key: casefolded words, single spaces."""
    return " ".join(_WORD_RE.findall(text.casefold()))


def rng_for(seed: int, *parts: str) -> random.Random:
    """A generator seeded by the run seed and names: independent of the order anything is visited in."""
    return random.Random("|".join([str(seed), *parts]))


MIN_TYPO_LETTERS = 5


def typo(text: str, rng: random.Random) -> str | None:
    """One keyboard slip in the longest word of 5+ letters: swap, drop or double a letter; None if none fits."""
    parts = text.split(" ")
    choices = [i for i, w in enumerate(parts) if len(w) >= MIN_TYPO_LETTERS and w.isalpha()]
    if not choices:
        return None
    i = max(choices, key=lambda j: (len(parts[j]), -j))
    w = parts[i]
    pos = rng.randrange(1, len(w) - 1)
    how = rng.choice(("swap", "drop", "double") if len(w) > MIN_TYPO_LETTERS else ("swap", "double"))
    if how == "swap":
        new = w[:pos] + w[pos + 1] + w[pos] + w[pos + 2:]
    elif how == "drop":
        new = w[:pos] + w[pos + 1:]
    else:
        new = w[:pos] + w[pos] + w[pos:]
    if new == w:  # a swap of two equal letters
        new = w[:pos] + w[pos] + w[pos:]
    parts[i] = new
    return " ".join(parts)
