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


def norm_text(text: str) -> str:
    """The dedup key: casefolded words, single spaces."""
    return " ".join(_WORD_RE.findall(text.casefold()))


def words(text: str) -> list[str]:
    return text.split()


def title_words(title: str) -> set[str]:
    """Casefolded words of a title (single letters and digits kept: they leak as much)."""
    return set(_WORD_RE.findall(title.casefold()))


def without_words(text: str, drop: set[str]) -> str:
    """``text`` with every word whose casefolded letters are in ``drop`` removed."""
    kept = [w for w in text.split() if not (set(_WORD_RE.findall(w.casefold())) and
                                           set(_WORD_RE.findall(w.casefold())) <= drop)]
    return " ".join(kept)


def rng_for(seed: int, *parts: str) -> random.Random:
    """A generator seeded by the run seed and names: independent of the order anything is visited in."""
    return random.Random("|".join([str(seed), *parts]))


def typo(text: str, rng: random.Random) -> str | None:
    """One keyboard slip in the longest word of 4+ letters: swap, drop or double a letter; None if none fits."""
    parts = text.split(" ")
    choices = [i for i, w in enumerate(parts) if len(w) >= 4 and w.isalpha()]
    if not choices:
        return None
    i = max(choices, key=lambda j: (len(parts[j]), -j))
    w = parts[i]
    pos = rng.randrange(1, len(w) - 1)
    how = rng.choice(("swap", "drop", "double"))
    if how == "swap":
        new = w[:pos] + w[pos + 1] + w[pos] + w[pos + 2:]
    elif how == "drop":
        new = w[:pos] + w[pos + 1:]
    else:
        new = w[:pos] + w[pos] + w[pos:]
    if new == w:
        new = w[:pos] + w[pos + 1:]
    parts[i] = new
    return " ".join(parts)
