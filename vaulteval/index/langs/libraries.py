"""The ``languages`` extra's libraries: import on first use, their versions, the missing-library message.

Usage: ``jieba = need("jieba", "chinese")``; ``versions(["chinese"])`` -> ``{"jieba": "0.42.1", ...}``.

A missing library is one line naming the extra (exit 2), never a quiet fallback to another analyzer.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from vaulteval.errors import UsageError

EXTRA = "languages"
# Distribution names (for versions) of what each kind of analyzer uses.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "snowball": ("PyStemmer", "stop-words", "wordfreq"),
    "plain": ("stop-words", "wordfreq"),
    "chinese": ("jieba", "stop-words", "wordfreq"),
    "japanese": ("fugashi", "unidic-lite"),
    "korean": ("kiwipiepy", "kiwipiepy_model"),
    "identify": ("py3langid",),
    "compounds": ("wordfreq",),
}
_MODULES = {"PyStemmer": "Stemmer", "stop-words": "stop_words", "unidic-lite": "unidic_lite",
            "kiwipiepy_model": "kiwipiepy_model"}


class MissingLibrary(UsageError):
    """An analyzer's library is not installed (exit 2)."""


def need(module: str, what: str):
    """Import ``module`` for ``what`` (an analyzer or task), or raise MissingLibrary naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingLibrary(f"the {what} analyzer needs the Python package {module!r}: "
                             f"pip install 'vaulteval[{EXTRA}]'") from None


@lru_cache(maxsize=None)
def version(distribution: str) -> str | None:
    """Installed version of ``distribution``, None when it is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version(distribution)
    except PackageNotFoundError:
        return None


def versions(kinds: list[str] | tuple[str, ...] | set[str]) -> dict[str, str | None]:
    """Usage: ``versions({"snowball", "identify"})`` -> ``{"PyStemmer": "3.1.0", "py3langid": "0.4.0", ...}``."""
    names = sorted({d for kind in kinds for d in LIBRARIES.get(kind, ())})
    return {name: version(name) for name in names}
