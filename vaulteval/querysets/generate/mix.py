"""Spread a generated set over overlap bands the way real questions spread, not the way generation happens to.

Usage::

    mix = parse_mix("low=0.5,mid=0.4,high=0.1")   # {"low": 0.5, "mid": 0.4, "high": 0.1}; "none" -> None
    quotas = band_quotas(200, mix)                 # {"low": 100, "mid": 80, "high": 20}
    by_band = split_by_band(ctx, candidates)       # {"low": [...], "mid": [...], "high": [...]}, order kept

Most candidates cut from a vault's own text share every word with their
target (the ``high`` band), so a set sampled as generated is mostly
string matching. Real questions are spread otherwise: measured on the
design sets only (SciFact's 809 train claims: low 0.47, mid 0.40, high
0.12; the help vault's 14 English ``tune`` questions: low 0.50, mid 0.50),
hence the documented ``low=0.5,mid=0.4,high=0.1``. It is not the default:
measured against real questions it helped where it was designed and not on
held-out vaults (docs/benchmarks.md, "Agreement"). A band that has too few
candidates passes its quota on to the next band (low, then mid, then
high), so a vault whose text yields no low-overlap queries still gets
``n`` queries, and the summary reports the bands it got.

A typo variant is banded ``high`` here, whatever its measured overlap: the
misspelt word is missing from the target, so its overlap reads low, but it
is the page's own name, not another way of saying it. Counted as low, typos
would fill the low quota of a vault without paraphrases (SciFact: 148 of
172 positives) and judge strategies by how they take misspellings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.querysets.generate.lexical import BANDS, band

if TYPE_CHECKING:
    from vaulteval.querysets.generate.candidates import Candidate
    from vaulteval.querysets.generate.kinds import Context

def parse_mix(text: str | None) -> dict[str, float] | None:
    """``low=0.5,mid=0.4,high=0.1`` (bands left out get 0; shares are normalized) -> mix; ``none`` -> None."""
    if text is None or text.strip().lower() == "none":
        return None
    mix = dict.fromkeys(BANDS, 0.0)
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip().lower()
        if not sep or name not in mix:
            raise UsageError(f"--overlap-mix takes BAND=SHARE items with BAND one of {', '.join(BANDS)} "
                             f"(e.g. low=0.5,mid=0.4,high=0.1) or none, got {item.strip()!r}")
        try:
            share = float(value)
        except ValueError:
            share = -1.0
        if not 0 <= share <= 1:  # also NaN
            raise UsageError(f"--overlap-mix: the share of {name} must be a number from 0 to 1, got {value.strip()!r}")
        mix[name] = share
    total = sum(mix.values())
    if total <= 0:
        raise UsageError("--overlap-mix: at least one band needs a share above 0")
    return {b: s / total for b, s in mix.items()}


def band_quotas(n: int, mix: dict[str, float]) -> dict[str, int]:
    """``n`` shared among the bands by ``mix``, largest remainders first, summing to ``n``."""
    exact = {b: n * mix.get(b, 0.0) for b in BANDS}
    quotas = {b: int(v) for b, v in exact.items()}
    for b in sorted(BANDS, key=lambda b: (quotas[b] - exact[b], BANDS.index(b)))[:n - sum(quotas.values())]:
        quotas[b] += 1
    return quotas


def split_by_band(ctx: "Context", cands: "list[Candidate]") -> dict[str, "list[Candidate]"]:
    """Candidates by the overlap band with their target, each band in the order given; negatives are in none."""
    from vaulteval.querysets.generate.screen import target_of

    out: dict[str, list[Candidate]] = {b: [] for b in BANDS}
    for c in cands:
        target = target_of(c)
        if target is None:
            continue
        if c.variant == "typo":  # a misspelt name is no paraphrase: banded as the name, which its page holds
            out["high"].append(c)
        else:
            out[band(ctx.lexicon.overlap(c.text, target))].append(c)
    return out
