"""Word frequencies (Zipf scale) from the wordfreq package's lists, read without importing wordfreq.

Usage: ``zipf("de")["verwaltung"]`` -> ``4.71``; a word missing from the list has none.

``import wordfreq`` pulls in ftfy and langcodes and costs more than a CLI query may spend, so the
list file inside the installed package (``data/small_<code>.msgpack.gz``, wordfreq's "cBpack"
format: a header, then buckets of words, bucket i holding the words of frequency 10^(-i/100)) is
read here with msgpack, wordfreq's own dependency. A file in another format falls back to
wordfreq's API.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
from functools import lru_cache

from vaulteval.index.langs.libraries import need


@lru_cache(maxsize=8)
def zipf(code: str) -> dict[str, float]:
    """Zipf frequency (log10 of occurrences per billion words) of each word of ``code``'s small list; {} if none."""
    spec = importlib.util.find_spec("wordfreq")
    if spec is None or not spec.submodule_search_locations:
        need("wordfreq", f"{code} word-frequency")
        return {}
    path = os.path.join(list(spec.submodule_search_locations)[0], "data", f"small_{code}.msgpack.gz")
    if not os.path.isfile(path):
        return {}  # wordfreq has no list for this language
    msgpack = need("msgpack", f"{code} word-frequency")
    with gzip.open(path, "rb") as fh:
        data = msgpack.load(fh, raw=False)
    if not data or data[0] != {"format": "cB", "version": 1}:
        wordfreq = need("wordfreq", f"{code} word-frequency")
        import math

        return {w: math.log10(f) + 9 for w, f in wordfreq.get_frequency_dict(code, wordlist="small").items()}
    return {word: 9 - i / 100 for i, bucket in enumerate(data[1:]) for word in bucket}
