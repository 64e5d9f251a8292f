"""Script queries for notes in Chinese, Japanese or Korean: whole word segments and mixed ASCII+CJK text.

Usage::

    cands = script_candidates(ctx)            # one segment and one mixed query per CJK page, at most
    kept = judge_segments(ctx, chosen)      # relevance: every page holding the text (source 2, others 1)

A short CJK query is where a tokenizer that splits on spaces fails, but it
must be a word a person types, never a random cut. No Chinese segmenter
(jieba or the like) is a dependency, so a segment is what the script itself
delimits: a run of CJK between punctuation, spaces or Latin text, cut where
Han meets kana (Japanese writes particles and endings in hiragana, which
are dropped), kept when it is ``MIN_SEGMENT`` to ``MAX_SEGMENT``
characters long. A mixed query is such a segment with the Latin word next
to it. Segments found in more than ``MAX_HOLDERS`` pages are no known item
and are dropped after sampling.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from vaulteval.querysets.generate.candidates import Candidate, rng_for
from vaulteval.querysets.generate.prose import prose
from vaulteval.querysets.scripts import is_cjk, script_of

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context

MAX_HOLDERS = 5
MIN_SEGMENT, MAX_SEGMENT = 2, 8
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_RUN_RE = re.compile(f"(?<![A-Za-z0-9{_CJK}])[{_CJK}]+(?![A-Za-z0-9])")  # a run glued to Latin or digits is no word
_GLUED_RE = re.compile(f"(?<![A-Za-z0-9])([A-Za-z][A-Za-z0-9+_-]{{1,20}}) ?([{_CJK}]+)|"
                       f"([{_CJK}]+) ?([A-Za-z][A-Za-z0-9+_-]{{1,20}})(?![A-Za-z0-9])")
# A script change inside a run: hiragana | katakana (with the prolonged sound mark) | Han | Hangul.
_PART_RE = re.compile("[\u3040-\u309f]+|[\u30a0-\u30ff]+|[\u3400-\u4dbf\u4e00-\u9fff]+|[\uac00-\ud7af]+")
def _words(run: str) -> list[str]:
    """The parts of a CJK run split where the script changes; hiragana parts dropped when there are others."""
    parts = _PART_RE.findall(run)
    if len(parts) > 1:  # Japanese: kanji and katakana words; hiragana is grammar
        parts = [p for p in parts if not "\u3040" <= p[0] <= "\u309f"]
    return parts


def _fits(word: str) -> bool:
    return MIN_SEGMENT <= len(word) <= MAX_SEGMENT


def segments(text: str) -> list[str]:
    """Usage: ``segments("東福寺の通天橋は十一月")`` -> ["東福寺", "通天橋", "十一月"]: whole words, no cuts."""
    return [w for run in _RUN_RE.findall(text) for w in _words(run) if _fits(w)]


def mixed(text: str) -> list[str]:
    """Usage: ``mixed("JR奈良線で行く")`` -> ["JR奈良線"]: a Latin word and the CJK word it touches."""
    out = []
    for m in _GLUED_RE.finditer(text):
        if m.group(1):
            parts = _PART_RE.findall(m.group(2))
            word = parts[0]
            if _fits(word) and not "\u3040" <= word[0] <= "\u309f":
                out.append(m.group(0)[:m.start(2) - m.start(0)] + word)
        else:
            parts = _PART_RE.findall(m.group(3))
            word = parts[-1]
            if _fits(word) and not "\u3040" <= word[0] <= "\u309f":
                out.append(word + m.group(0)[m.end(3) - m.start(0):])
    return out


def script_candidates(ctx: "Context") -> list[Candidate]:
    out = []
    for f in ctx.facts:
        if not is_cjk(f.text):
            continue
        found = [(n, prose(t)) for n, t in f.body_lines() if is_cjk(t)]
        if not found:
            continue
        rng = rng_for(ctx.seed, "script", f.rel)
        segs = [(n, s) for n, text in found for s in segments(text)]
        if segs:
            line, seg = segs[rng.randrange(len(segs))]
            out.append(Candidate("script", f"segment-{script_of(seg)}", seg, ((f.rel, 2),), f.rel, line, f.stratum))
        glued = [(n, m) for n, text in found for m in mixed(text)]
        if glued:
            line, text = glued[rng.randrange(len(glued))]
            out.append(Candidate("script", f"mixed-{script_of(text)}", text, ((f.rel, 2),), f.rel, line, f.stratum))
        elif segs and not is_cjk(f.title) and f.title.isascii():
            line, seg = segs[rng.randrange(len(segs))]
            text = f"{f.title} {seg}"
            out.append(Candidate("script", f"mixed-{script_of(text)}", text, ((f.rel, 2),), f.rel, line, f.stratum))
    return out


def plain_text(f) -> str:
    """The page body as prose per line (what a segment is searched in)."""
    return "\n".join(prose(t) for _, t in f.body_lines())


def judge_segments(ctx: "Context", chosen: list[Candidate]) -> list[Candidate | None]:
    """Each candidate with every page holding its text judged (source 2, others 1); None when too common."""
    cjk_pages = ctx.cached("cjk-texts", lambda: [(f.rel, plain_text(f)) for f in ctx.facts if is_cjk(f.text)])
    out: list[Candidate | None] = []
    for c in chosen:
        holders = [rel for rel, text in cjk_pages if c.text in text]
        if len(holders) > MAX_HOLDERS:
            out.append(None)
            continue
        relevant = tuple(sorted(((rel, 2 if rel == c.page else 1) for rel in holders), key=lambda p: p[0]))
        out.append(c._replace(relevant=relevant or c.relevant))
    return out
