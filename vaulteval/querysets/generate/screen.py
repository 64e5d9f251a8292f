"""Between candidates and the written set: refuse malformed texts (counted by reason), measure what is kept.

Usage::

    rejected = Counter()
    kept = screen(candidates, rejected)           # rejected[(kind, reason)] += 1 for each refused one
    measured = measure(ctx, kept)                 # each with overlap, overlap_band and bm25_rank
    report = rejection_report(rejected)           # {kind: {reason: n}}, sorted

``overlap`` and ``bm25_rank`` are measured against a query's target: its
best-graded relevant page (its source page for a script query judged in
several). Negatives have no target and get neither.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from vaulteval.querysets.generate.wellformed import reject_reason

if TYPE_CHECKING:
    from vaulteval.querysets.generate.candidates import Candidate
    from vaulteval.querysets.generate.kinds import Context

NAME_KINDS = ("title", "alias")
SENTENCE_KINDS = ("backlink", "no-title-words", "summary")
MIN_SENTENCE_CONTENT = 3  # content words a sentence query keeps after its words are removed
MIN_CONTENT = {"link-text": 2}  # a link's text of one word ("Open", "view") names no page


def screen(cands: "list[Candidate]", rejected: Counter) -> "list[Candidate]":
    """The well-formed candidates; each refused one is counted under (kind, reason)."""
    out = []
    for c in cands:
        reason = reject_reason(c.text, name=c.kind in NAME_KINDS,
                               min_content=MIN_SENTENCE_CONTENT if c.kind in SENTENCE_KINDS
                               else MIN_CONTENT.get(c.kind, 1))
        if reason is None:
            out.append(c)
        else:
            rejected[(c.kind, reason)] += 1
    return out


def within_overlap(ctx: "Context", cands: "list[Candidate]", most: float, rejected: Counter) -> "list[Candidate]":
    """The candidates sharing at most ``most`` of their terms with their target (negatives always pass)."""
    out = []
    for c in cands:
        target = target_of(c)
        if target is not None and ctx.lexicon.overlap(c.text, target) > most:
            rejected[(c.kind, "overlap")] += 1
        else:
            out.append(c)
    return out


def target_of(c: "Candidate") -> str | None:
    """The page a query's overlap is measured against: its best-graded relevant page (a script query: its source)."""
    graded = [(g, p) for p, g in c.relevant if g > 0]
    if not graded:
        return None
    if c.page and any(p == c.page for _, p in graded) and c.kind == "script":
        return c.page
    best = max(g for g, _ in graded)
    return min(p for g, p in graded if g == best)


def measure(ctx: "Context", cands: "list[Candidate]") -> "list[Candidate]":
    """Each candidate with ``overlap`` (rounded to 3 places), ``overlap_band`` and ``bm25_rank`` (None: score 0)."""
    from vaulteval.querysets.generate.lexical import band

    out = []
    for c in cands:
        target = target_of(c)
        if target is None:
            out.append(c)
            continue
        share = round(ctx.lexicon.overlap(c.text, target), 3)
        measures = (("overlap", share), ("overlap_band", band(share)),
                    ("bm25_rank", ctx.lexicon.bm25_rank(c.text, target)))
        out.append(c._replace(measures=measures))
    return out


def rejection_report(rejected: Counter) -> dict[str, dict[str, int]]:
    """{kind: {reason: count}}, kinds and reasons in name order."""
    out: dict[str, dict[str, int]] = {}
    for (kind, reason), n in sorted(rejected.items()):
        if n:
            out.setdefault(kind, {})[reason] = n
    return out


def band_summary(cands: "list[Candidate]") -> dict[str, Any]:
    """How many queries fall in each overlap band, and whether the set can judge semantic strategies."""
    bands = Counter(dict(c.measures).get("overlap_band") for c in cands if c.measures)
    measured = sum(bands.values())
    high = bands.get("high", 0)
    return {"overlap_bands": {b: bands.get(b, 0) for b in ("low", "mid", "high")},
            "high_overlap_share": round(high / measured, 3) if measured else 0.0,
            "judges_semantic_strategies": bool(measured) and high * 2 <= measured}
