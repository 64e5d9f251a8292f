"""Word frequencies (Zipf scale) from the wordfreq package's lists, read without importing wordfreq.

Usage: ``zipf("de")["verwaltung"]`` -> ``4.71``; ``zipf("de", floor=6.0)``: only the words that
common (stopword filtering needs no more). A word missing from the list has none.

``import wordfreq`` pulls in ftfy and langcodes and costs more than a CLI query may spend, so the
list file inside the installed package (``data/small_<code>.msgpack.gz``, wordfreq's "cBpack"
format: a header, then buckets of words, bucket i holding the words of frequency 10^(-i/100)) is
read here with msgpack, wordfreq's own dependency. Buckets come most frequent first, so a read with
a ``floor`` stops at the first bucket under it: the 300 buckets of words at Zipf 6 or more are a
few hundred words, against the tens of thousands a whole list decompresses and decodes. A file in
another format falls back to wordfreq's API.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
from functools import lru_cache

from vaulteval.index.langs.libraries import need

_FORMAT = {"format": "cB", "version": 1}


@lru_cache(maxsize=16)
def zipf(code: str, floor: float | None = None) -> dict[str, float]:
    """Zipf frequency (log10 of occurrences per billion words) of each word of ``code``'s small list at
    ``floor`` or above (None: every word); {} when wordfreq has no list for ``code``."""
    spec = importlib.util.find_spec("wordfreq")
    if spec is None or not spec.submodule_search_locations:
        need("wordfreq", f"{code} word-frequency")
        return {}
    path = os.path.join(list(spec.submodule_search_locations)[0], "data", f"small_{code}.msgpack.gz")
    if not os.path.isfile(path):
        return {}  # wordfreq has no list for this language
    msgpack = need("msgpack", f"{code} word-frequency")
    with gzip.open(path, "rb") as fh:
        unpacker = msgpack.Unpacker(fh, raw=False)
        try:
            n = unpacker.read_array_header()
            header = unpacker.unpack() if n else None
        except (ValueError, msgpack.UnpackException):
            header = None
        if header == _FORMAT:
            out: dict[str, float] = {}
            for i in range(n - 1):
                value = 9 - i / 100
                if floor is not None and value < floor:
                    break
                for word in unpacker.unpack():
                    out[word] = value
            return out
    wordfreq = need("wordfreq", f"{code} word-frequency")
    import math

    every = {w: math.log10(f) + 9 for w, f in wordfreq.get_frequency_dict(code, wordlist="small").items()}
    return every if floor is None else {w: z for w, z in every.items() if z >= floor}
