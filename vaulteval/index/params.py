"""The one validator for BM25 and chunking parameters (CLI, strategies and build_index all use it).

Usage::

    check_bm25_params(k1, b)                       # UsageError (exit 2) unless finite, k1 >= 0, 0 <= b <= 1
    check_chunk_params(target, overlap, hard_max)  # UsageError unless the sizes make sense together

A NaN k1 would make every score NaN and every query an empty, exit-0 result;
a negative one inverts the ranking. Both are refused before anything is built.
"""

from __future__ import annotations

import math

from vaulteval.errors import UsageError
from vaulteval.index.tokenize import MAX_INPUT_CHARS

MAX_K1 = 100.0
MIN_TARGET = 50


def max_hard_max() -> int:
    """A chunk plus its prefix and the blank line between them must fit the tokenizer's input limit."""
    from vaulteval.chunks.limits import MAX_PREFIX_CHARS  # not the chunker: retrieve checks tuned settings

    return MAX_INPUT_CHARS - MAX_PREFIX_CHARS - 2


class ParamError(UsageError):
    """A BM25 or chunking parameter is out of range."""


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ParamError(f"{name} must be a finite number, got {value!r}")
    return number


def check_bm25_params(k1: object, b: object) -> tuple[float, float]:
    """Usage: ``k1, b = check_bm25_params(args.k1, args.b)``."""
    k1_f, b_f = _number("k1", k1), _number("b", b)
    if not 0.0 <= k1_f <= MAX_K1:
        raise ParamError(f"k1 must be from 0 to {MAX_K1:g} (usually 0.9-2.0), got {k1!r}")
    if not 0.0 <= b_f <= 1.0:
        raise ParamError(f"b must be from 0 to 1 (usually 0.75), got {b!r}")
    return k1_f, b_f


def _whole(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(f"{name} must be a whole number of characters, got {value!r}")
    return value


def check_chunk_params(target: object, overlap: object, hard_max: object) -> tuple[int, int, int]:
    """Usage: ``check_chunk_params(2000, 200, 4000)``: MIN_TARGET <= target <= hard_max <= max_hard_max()."""
    t, o, h = _whole("target", target), _whole("overlap", overlap), _whole("hard_max", hard_max)
    limit = max_hard_max()
    if not MIN_TARGET <= t <= h <= limit:
        raise ParamError(f"need {MIN_TARGET} <= target <= hard_max <= {limit} characters, "
                         f"got target={t}, hard_max={h}")
    if not 0 <= o < t:
        raise ParamError(f"need 0 <= overlap < target, got overlap={o}, target={t}")
    return t, o, h


def check_chunk_dict(params: object) -> None:
    """The ``chunk_params`` dict recorded in an index header (``None`` means unknown and is accepted)."""
    if params is None:
        return
    if not isinstance(params, dict) or set(params) != {"target", "overlap", "hard_max"}:
        raise ParamError(f"chunk parameters must be target, overlap and hard_max, got {params!r}")
    check_chunk_params(params["target"], params["overlap"], params["hard_max"])
