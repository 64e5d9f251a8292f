"""Script queries for notes in Chinese, Japanese or Korean: short CJK substrings and mixed ASCII+CJK text.

Usage::

    cands = script_candidates(ctx)            # one substring and one mixed query per CJK page, at most
    kept = judge_substrings(ctx, chosen)      # relevance: every page holding the substring (source 2, others 1)

A 2-4 character substring is what a person types into a search box in these
languages, and it is where a tokenizer that splits on spaces fails. Common
substrings are no known item: those found in more than ``MAX_HOLDERS``
pages are dropped after sampling.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from vaulteval.querysets.generate.candidates import Candidate, rng_for
from vaulteval.querysets.generate.pages import plain
from vaulteval.querysets.scripts import is_cjk, script_of

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context

MAX_HOLDERS = 5
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_LINK_RE = re.compile(r"!?\[\[[^\[\]\n]*\]\]")
_RUN_RE = re.compile(f"[{_CJK}]{{2,}}")
_MIXED_RE = re.compile(f"[A-Za-z][A-Za-z0-9.+_-]{{1,20}} ?[{_CJK}]{{2,4}}|[{_CJK}]{{2,4}} ?[A-Za-z][A-Za-z0-9.+_-]{{1,20}}")


def script_candidates(ctx: "Context") -> list[Candidate]:
    out = []
    for f in ctx.facts:
        if not is_cjk(f.text):
            continue
        found = [(n, plain(_LINK_RE.sub(" ", t))) for n, t in f.body_lines() if is_cjk(t)]
        if not found:
            continue
        rng = rng_for(ctx.seed, "script", f.rel)
        runs = [(n, m.group(0)) for n, text in found for m in _RUN_RE.finditer(text)]
        if runs:
            line, run = runs[rng.randrange(len(runs))]
            size = rng.randint(2, min(4, len(run)))
            start = rng.randrange(0, len(run) - size + 1)
            out.append(Candidate("script", f"substring-{script_of(run)}", run[start:start + size],
                                 ((f.rel, 2),), f.rel, line, f.stratum))
        mixed = [(n, m.group(0)) for n, text in found for m in _MIXED_RE.finditer(text)]
        if mixed:
            line, text = mixed[rng.randrange(len(mixed))]
            out.append(Candidate("script", f"mixed-{script_of(text)}", text, ((f.rel, 2),), f.rel, line, f.stratum))
        elif runs and not is_cjk(f.title) and f.title.isascii():
            line, run = runs[rng.randrange(len(runs))]
            text = f"{f.title} {run[:min(4, len(run))]}"
            out.append(Candidate("script", f"mixed-{script_of(text)}", text, ((f.rel, 2),), f.rel, line, f.stratum))
    return out


def plain_text(f) -> str:
    """The page body as plain words per line, links removed (what substrings are searched in)."""
    return "\n".join(plain(_LINK_RE.sub(" ", t)) for _, t in f.body_lines())


def judge_substrings(ctx: "Context", chosen: list[Candidate]) -> list[Candidate | None]:
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
