"""Assumed negatives: everyday questions whose words the vault barely uses, for a person to confirm.

Usage: ``negative_candidates(ctx)`` -> Candidates with ``relevant: {}`` and ``status: assumed-negative``.

A question is kept when at most ``MAX_COVERAGE`` of its content words (4+
letters) occur anywhere in the vault and no page's title or alias equals one
of them. That makes it unlikely, not certain, that the vault answers it:
every one is marked for review, and `eval run` reports them apart.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from vaulteval.querysets.generate.candidates import Candidate

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context

MAX_COVERAGE = 0.5
_WORD_RE = re.compile(r"[^\W\d_]{4,}")

# Questions from many walks of life; the vault decides which of them it cannot answer.
QUESTIONS = (
    "how do I change the oil in my car", "what is the capital of Mongolia", "best way to train a puppy to sit",
    "how long to boil an ostrich egg", "symptoms of vitamin deficiency in cats", "rules of cricket for beginners",
    "how to knit a scarf with cable stitches", "when was the Byzantine empire founded",
    "how to replace a bicycle inner tube", "how much does a wedding photographer cost",
    "how to tune a ukulele by ear", "what causes the northern lights", "recipe for lemon meringue pie",
    "how to file taxes as a freelancer in Portugal", "which telescope is best for viewing Saturn",
    "how to repot an orchid", "difference between alligators and crocodiles", "how to treat a sprained ankle",
    "history of the Ottoman sultans", "how to grout bathroom tiles", "what is the offside rule in football",
    "how to descale a kettle with vinegar", "best hiking trails in Patagonia", "how to play chess openings",
    "how to write a haiku about autumn", "how volcanoes form underwater", "how to fold a paper crane",
    "symptoms of altitude sickness", "how to clean a cast iron skillet", "who painted the Sistine chapel ceiling",
    "how to care for a bonsai juniper", "what do hedgehogs eat in winter", "how to make kimchi at home",
    "how to restore antique furniture varnish", "why do cats purr", "how to brew kombucha safely",
    "how to choose running shoes for flat feet", "what is the plot of Moby Dick", "how to sharpen kitchen knives",
    "how do bees make honey", "how to apply for a fishing licence", "how to remove red wine stains from carpet",
    "what is the tallest mountain in Africa", "how to learn calligraphy brush lettering",
    "how to insulate a loft for winter", "what are the stages of grief", "how to iron a silk shirt",
    "how do tides work", "how to raise backyard chickens", "how to decorate a birthday cake with fondant",
    "how to plan a wedding seating chart", "how to identify wild mushrooms", "how to polish leather boots",
    "what is the mating season of deer", "how to prune roses in spring", "how to surf bigger waves",
    "rules of the card game bridge", "how to make sushi rice", "why is the sky blue at noon",
    "how to upholster a dining chair",
)


def negative_candidates(ctx: "Context") -> list[Candidate]:
    vocabulary = _vocabulary(ctx)
    out = []
    for number, question in enumerate(QUESTIONS, 1):
        content = {w.casefold() for w in _WORD_RE.findall(question)}
        if not content or any(w in ctx.titles for w in content):
            continue
        covered = sum(1 for w in content if w in vocabulary) / len(content)
        if covered <= MAX_COVERAGE:
            out.append(Candidate("negative", "assumed", question, (), "", number, "negative",
                                 status="assumed-negative"))
    return out


def _vocabulary(ctx: "Context") -> set[str]:
    """Casefolded words of 4+ letters in any page, found with one pass per page."""
    words: set[str] = set()
    for f in ctx.facts:
        words.update(_WORD_RE.findall(f.text.casefold()))
    return words
