"""Generate a query set from a vault's own structure: sample, deduplicate, split, write YAML.

Usage::

    summary = generate_queryset(vault, "q.yaml", kinds=["title", "heading"], n=200, seed=1)

The ``n`` queries are shared equally among the kinds asked for; a kind with
too few candidates leaves its share to the others. Script queries are at
most ``SCRIPT_SHARE`` of a default set (no cap when ``script`` is asked
for by name). Malformed candidates are refused and counted by reason
(``screen.py``); every kept query records its overlap with its target. Inside a kind, strata
(top folder and first tag) take turns, each in a seeded order, so small
folders are represented; texts already taken (casefolded words) are skipped.
The same vault, arguments and seed give the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.querysets.generate.candidates import Candidate, norm_text, rng_for
from vaulteval.vault.paths import home_path

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context
    from vaulteval.querysets.generate.llm import LlmSettings
    from vaulteval.vault.vault import Vault

KINDS = ("title", "alias", "heading", "backlink", "link-text", "no-title-words", "summary", "script", "negative",
         "llm")
# heading and summary are asked for by name only: measured against real questions, they rank strategies the
# most unlike real questions do (BM25 first); link-text ranks them most alike (docs/querysets.md)
DEFAULT_KINDS = ("title", "alias", "backlink", "link-text", "no-title-words", "script", "negative")
TUNE_SHARE = 0.3
SCRIPT_SHARE = 0.05


def parse_kinds(items: list[str] | None) -> list[str]:
    """Usage: ``parse_kinds(["title,alias", "script"])``; unknown names are a usage error."""
    if not items:
        return list(DEFAULT_KINDS)
    kinds = [k.strip() for item in items for k in item.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise UsageError(f"unknown query kind {unknown[0]!r}; choose from {', '.join(KINDS)}")
    return list(dict.fromkeys(kinds))


def _candidates(ctx: "Context", kind: str) -> list[Candidate]:
    from vaulteval.querysets.generate import kinds as K
    from vaulteval.querysets.generate import sentence_kinds as S

    if kind == "title":
        return K.title_candidates(ctx)
    if kind == "alias":
        return K.alias_candidates(ctx)
    if kind == "heading":
        return K.heading_candidates(ctx)
    if kind == "backlink":
        return S.backlink_candidates(ctx)
    if kind == "no-title-words":
        sources = K.heading_candidates(ctx) + S.backlink_candidates(ctx) + S.first_sentence_candidates(ctx)
        return S.no_title_word_candidates(ctx, sources)
    if kind == "summary":
        return S.summary_candidates(ctx)
    if kind == "link-text":
        return S.link_text_candidates(ctx)
    if kind == "script":
        from vaulteval.querysets.generate.script import script_candidates

        return script_candidates(ctx)
    from vaulteval.querysets.generate.negative import negative_candidates

    return negative_candidates(ctx)


def _stratified(cands: list[Candidate], seed: int, kind: str) -> list[Candidate]:
    """All candidates in sampling order: strata take turns, each stratum in its own seeded order."""
    strata: dict[str, list[Candidate]] = {}
    for c in cands:
        strata.setdefault(c.stratum, []).append(c)
    order = sorted(strata)
    rng_for(seed, kind, "strata").shuffle(order)
    queues = []
    for key in order:
        items = sorted(strata[key], key=lambda c: (c.page, c.line, c.variant, c.text))
        rng_for(seed, kind, key).shuffle(items)
        queues.append(items)
    out: list[Candidate] = []
    depth = 0
    while any(depth < len(q) for q in queues):
        out += [q[depth] for q in queues if depth < len(q)]
        depth += 1
    return out


def _take(ordered: list[Candidate], want: int, seen: set[str]) -> list[Candidate]:
    out = []
    for c in ordered:
        if len(out) >= want:
            break
        key = norm_text(c.text)
        if key and key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _shares(n: int, kinds: list[str]) -> dict[str, int]:
    base, extra = divmod(n, len(kinds))
    return {k: base + (1 if i < extra else 0) for i, k in enumerate(kinds)}


def generate_queryset(vault: "Vault", out: str | os.PathLike[str], *, kinds: list[str] | None = None,
                      n: int = 500, seed: int = 0, llm: "LlmSettings | None" = None, max_overlap: float | None = None,
                      overlap_mix: dict[str, float] | None = None,
                      progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Write the query set to ``out`` (never inside the vault); return a summary with counts per kind.

    ``max_overlap`` (0 to 1) keeps only queries sharing at most that share of their terms with their target
    (counted as rejected for ``overlap`` otherwise): a set that can judge semantic strategies. ``overlap_mix``
    ({band: share}, ``mix.py``) shares the positive queries among the overlap bands; None samples them as
    generated."""
    from vaulteval.querysets.generate.kinds import Context
    from vaulteval.querysets.generate.pages import read_pages
    from vaulteval.querysets.generate.screen import band_summary, measure, rejection_report, screen, within_overlap
    from vaulteval.querysets.generate.writer import write_yaml
    from vaulteval.vault.paths import is_inside

    chosen = parse_kinds(kinds)
    caps = {"script": int(n * SCRIPT_SHARE)} if not kinds else {}
    if not 1 <= n <= 100_000:
        raise UsageError(f"--n must be from 1 to 100000, got {n}")
    if max_overlap is not None and not 0 <= max_overlap <= 1:
        raise UsageError(f"--max-overlap must be from 0 to 1, got {max_overlap}")
    target = home_path(out)
    if is_inside(vault.root, target.resolve()):
        raise UsageError(f"--out {target} is inside the vault; write the query set outside it")
    started = time.perf_counter()
    ctx = Context(read_pages(vault, progress), seed=seed, notes_rel=vault.notes_rel)
    if not ctx.facts:
        raise UsageError(f"{vault.root} has no notes to build queries from")
    if "llm" in chosen and llm is None:
        from vaulteval.querysets.generate.llm import LlmSettings

        llm = LlmSettings()
    ordered = {}
    rejected: Counter = Counter()
    for kind in chosen:
        if kind != "llm":
            kept = screen(_candidates(ctx, kind), rejected)
            if max_overlap is not None:
                kept = within_overlap(ctx, kept, max_overlap, rejected)
            ordered[kind] = _stratified(kept, seed, kind)
            if progress is not None:
                progress(f"candidates: {kind}", len(ordered[kind]), len(ordered[kind]))
    if overlap_mix is None:
        picked = _pick(ctx, chosen, ordered, n, caps, llm, rejected, progress, max_overlap)
    else:
        picked = _pick_mixed(ctx, chosen, ordered, n, caps, llm, rejected, progress, max_overlap, overlap_mix)
    queries = measure(ctx, [c for kind in chosen for c in picked.get(kind, [])])
    report = rejection_report(rejected)
    header = {"seed": seed, "n": n, "kinds": chosen, **({"max_overlap": max_overlap} if max_overlap is not None else {}),
              **({"overlap_mix": overlap_mix} if overlap_mix is not None else {}),
              **({"llm": dict(llm.record)} if llm is not None and llm.record else {}), "rejected": report}
    summary = write_yaml(target, vault, ctx, queries, split_of=lambda qid: _split(seed, qid), header=header)
    summary.update(band_summary(queries))
    summary["rejected"] = report
    summary["seconds"] = round(time.perf_counter() - started, 3)
    summary["pages"] = len(ctx.facts)
    return summary


def _pick_mixed(ctx: "Context", chosen: list[str], ordered: dict[str, list[Candidate]], n: int, caps: dict[str, int],
                llm: "LlmSettings | None", rejected: Counter, progress, max_overlap: float | None,
                mix: dict[str, float]) -> dict[str, list[Candidate]]:
    """Negatives and llm questions take their kinds' shares of ``n`` first; the rest is filled band by band (low,
    mid, high), kinds sharing each band's quota, and what a band cannot fill passes to the next (what high cannot
    fill goes back to low and mid)."""
    from vaulteval.querysets.generate.mix import band_quotas, split_by_band

    seen: set[str] = set()
    apart = [k for k in chosen if k in ("negative", "llm")]
    picked = {k: [] for k in chosen}
    budget = n
    if apart:
        shares = _shares(n, chosen)
        first = _pick(ctx, apart, ordered, sum(shares[k] for k in apart), caps, llm, rejected, progress,
                      max_overlap, seen)
        picked.update(first)
        budget -= sum(len(v) for v in first.values())
    banded = [k for k in chosen if k not in apart]
    by_band = {k: split_by_band(ctx, ordered[k]) for k in banded}
    carry = 0
    quotas = band_quotas(budget, mix)
    # low, mid, high; then low and mid again for what high could not fill
    for b, quota in [*quotas.items(), ("low", 0), ("mid", 0)]:
        want = quota + carry
        left = {k: caps[k] - len(picked[k]) for k in caps if k in banded}
        got = _pick(ctx, banded, {k: by_band[k][b] for k in banded}, want, left, llm, rejected, progress,
                    max_overlap, seen) if want > 0 and banded else {}
        for k, items in got.items():
            picked[k] += items
        carry = want - sum(len(v) for v in got.values())
    return picked


def _pick(ctx: "Context", chosen: list[str], ordered: dict[str, list[Candidate]], n: int, caps: dict[str, int],
          llm: "LlmSettings | None", rejected: Counter, progress, max_overlap: float | None = None,
          seen: set[str] | None = None) -> dict[str, list[Candidate]]:
    """Fill each kind's share (at most its cap); what a kind cannot fill passes to the kinds that still can.
    ``seen`` (casefolded texts already taken) is shared when the set is picked in parts."""
    from vaulteval.querysets.generate.screen import screen, within_overlap
    from vaulteval.querysets.generate.script import judge_segments

    seen = set() if seen is None else seen
    picked: dict[str, list[Candidate]] = {k: [] for k in chosen}
    remaining = {k: list(v) for k, v in ordered.items()}
    open_kinds = list(chosen)
    budget = n
    while budget > 0 and open_kinds:
        shares = _shares(budget, open_kinds)
        for kind in list(open_kinds):
            want = min(shares[kind], caps.get(kind, n) - len(picked[kind]))
            if kind == "llm":
                from vaulteval.querysets.generate.llm import LlmSettings, llm_candidates

                asked = llm_candidates(ctx, want, llm or LlmSettings(), progress)
                asked = screen(asked, rejected)
                if max_overlap is not None:
                    asked = within_overlap(ctx, asked, max_overlap, rejected)
                got = _take(asked, want, seen)
                open_kinds.remove(kind)
            else:
                got = _take(remaining[kind], want, seen)
                used = {id(c) for c in got}
                remaining[kind] = [c for c in remaining[kind] if id(c) not in used and norm_text(c.text) not in seen]
                if kind == "script":
                    judged = judge_segments(ctx, got)
                    rejected[("script", "too-common")] += judged.count(None)
                    got = [c for c in judged if c is not None]
                if not remaining[kind] or len(picked[kind]) + len(got) >= caps.get(kind, n):
                    open_kinds.remove(kind)
            picked[kind] += got
            budget -= len(got)
        if all(not remaining.get(k) for k in open_kinds if k != "llm") and "llm" not in open_kinds:
            break
    return picked


def _split(seed: int, query_id: str) -> str:
    """tune for about TUNE_SHARE of the queries, test for the rest; fixed by seed and id."""
    digest = hashlib.sha256(f"{seed}|{query_id}".encode("utf-8")).digest()
    return "tune" if int.from_bytes(digest[:8], "big") / 2 ** 64 < TUNE_SHARE else "test"
