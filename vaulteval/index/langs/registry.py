"""Language analyzer names to analyzers: ``german``, ``spanish:fold=no``, ``chinese`` (``index.analysis`` is the registry of all names).

Usage: ``language_analyzer("german:compounds=no")("Tresorverwaltung")`` -> ``["tresorverwalt"]``.

A name is a language analyzer (catalog.LANGUAGE_ANALYZERS) with options after a colon, defaults
left out, in this order: ``fold=yes|no`` (accent folding), ``compounds=yes|no`` (German, Dutch,
Swedish only), ``stopwords=none`` (Snowball languages). Any other spelling is refused with the normal
form to write.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from vaulteval.index.langs.catalog import BY_ANALYZER, LANGUAGE_ANALYZERS, LANGUAGES, PLAIN, Language

OPTIONS = ("fold", "compounds", "stopwords")


class LanguageNameError(ValueError):
    """Not a language analyzer name, or one not in normal form."""


def parse(name: str) -> tuple[Language, dict[str, bool]]:
    """Usage: ``parse("spanish:fold=no")`` -> ``(LANGUAGES["es"], {"fold": False, "compounds": False, "stopwords": True})``."""
    head, _, rest = name.partition(":")
    if head not in LANGUAGE_ANALYZERS:
        raise LanguageNameError(f"unknown language analyzer {head!r}")
    language = BY_ANALYZER[head]
    values = {"fold": language.fold, "compounds": language.compounds, "stopwords": True}
    for item in rest.split(",") if rest else ():
        key, eq, value = item.partition("=")
        if not eq or key not in OPTIONS or value not in ("yes", "no", "none"):
            raise LanguageNameError(f"analyzer {name!r}: unknown option {item!r} (fold=yes|no, compounds=yes|no, "
                                    "stopwords=none)")
        values[key] = value == "yes" if key != "stopwords" else value != "none"
    if values["compounds"] and language.code not in ("de", "nl", "sv"):
        raise LanguageNameError(f"analyzer {name!r}: compounds= is for german, dutch and swedish")
    if language.kind != "snowball" and (values["fold"] or not values["stopwords"]):
        raise LanguageNameError(f"analyzer {name!r}: {head} takes no fold= or stopwords= option")
    normal = normal_name(language, values)
    if normal != name:
        raise LanguageNameError(f"analyzer {name!r} is not in normal form; write {normal!r}")
    return language, values


def normal_name(language: Language, values: dict[str, bool]) -> str:
    """The analyzer name with the options that differ from the language's defaults."""
    parts = []
    if values["fold"] != language.fold:
        parts.append(f"fold={'yes' if values['fold'] else 'no'}")
    if values["compounds"] != language.compounds:
        parts.append(f"compounds={'yes' if values['compounds'] else 'no'}")
    if not values["stopwords"]:
        parts.append("stopwords=none")
    return language.analyzer + (":" + ",".join(parts) if parts else "")


@lru_cache(maxsize=64)
def language_analyzer(name: str) -> Callable[[str], list[str]]:
    """The analyzer for a language analyzer name (not ``auto``, which needs the index: see ``auto``)."""
    language, values = parse(name)
    return analyzer_for(language, values["fold"], values["compounds"], values["stopwords"])


# A catalog kind -> the segmenter class that analyzes it (``langs.segmenters``); the other kinds are Snowball's.
SEGMENTERS = {"chinese": "ChineseAnalyzer", "japanese": "JapaneseAnalyzer", "korean": "KoreanAnalyzer"}


@lru_cache(maxsize=128)
def analyzer_for(language: Language, fold: bool, compounds: bool, stop: bool = True) -> Callable[[str], list[str]]:
    """Usage: ``analyzer_for(LANGUAGES["de"], False, True)``; built on first use, dictionaries loaded lazily."""
    segmenter = SEGMENTERS.get(language.kind)
    if segmenter is not None:
        from vaulteval.index.langs import segmenters

        return getattr(segmenters, segmenter)()
    from vaulteval.index.langs.snowball import SnowballAnalyzer

    return SnowballAnalyzer(language, fold_accents=fold, compounds=compounds, stop=stop)


def code_analyzer(code: str) -> Callable[[str], list[str]]:
    """The default analyzer of a language code (``auto``'s choice for a chunk in that language)."""
    language = LANGUAGES.get(code, PLAIN)
    return analyzer_for(language, language.fold, language.compounds)
