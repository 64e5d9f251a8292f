"""Which languages and scripts an embedding model covers, and whether it can read a query.

Usage::

    coverage = model_coverage("all-minilm:latest")      # Coverage(languages=("en",), scripts=("Latin",))
    coverage.reads("普洱茶的冲泡方法")                      # False: most letters are Han
    model_coverage("nomic-embed-text-v2-moe").reads("...") # True: multilingual

A model declares coverage through a known-name table, or for a local
sentence-transformers folder through the ``language:`` field of its model
card (README.md front matter). A model declared by neither is ``unknown`` and
is trusted with every query (nothing is inferred from its name). A query is
unreadable when at least half of its letters are in scripts the model does not
cover; the caller then keeps the BM25 order, labelled ``model-language``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ALL_SCRIPTS = ("*",)
# Languages whose text is written in the Latin script (what an English-only or Western model reads).
_LATIN_LANGUAGES = {"en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "no", "fi", "pl", "cs", "ro", "tr", "id"}

# Known model families (matched on the model's last path component, lower case, tag removed).
_KNOWN: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"^(paraphrase-)?multilingual|^multilingual-e5|^labse|^bge-m3|^nomic-embed-text-v2"), ("multilingual",)),
    (re.compile(r"^(all-)?minilm|^all-mpnet|^nomic-embed-text(-v1(\.5)?)?$|^bge-(small|base|large)-en|^mxbai-embed"),
     ("en",)),
]


@dataclass(frozen=True)
class Coverage:
    """Languages (ISO codes, ``multilingual`` or ``unknown``) and the scripts they are written in."""

    languages: tuple[str, ...]
    scripts: tuple[str, ...]

    def reads(self, text: str) -> bool:
        """Usage: ``coverage.reads(query)`` -> False when most of the query's letters are in uncovered scripts."""
        if self.scripts == ALL_SCRIPTS:
            return True
        counts = script_counts(text)
        total = sum(counts.values())
        if not total:
            return True
        foreign = sum(n for script, n in counts.items() if script not in self.scripts)
        return foreign * 2 < total

    def to_dict(self) -> dict[str, list[str]]:
        return {"languages": list(self.languages), "scripts": list(self.scripts)}


def _coverage(languages: tuple[str, ...]) -> Coverage:
    if "multilingual" in languages or "unknown" in languages:
        return Coverage(languages, ALL_SCRIPTS)
    scripts = {"Latin"} if all(lang in _LATIN_LANGUAGES for lang in languages) else set(ALL_SCRIPTS)
    return Coverage(languages, tuple(sorted(scripts)))


@lru_cache(maxsize=64)
def model_coverage(model: str) -> Coverage:
    """Usage: ``model_coverage(name_or_folder)`` -> Coverage; ``unknown`` when nothing declares it."""
    base = model.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower().split(":", 1)[0]
    for pattern, languages in _KNOWN:
        if pattern.search(base):
            return _coverage(languages)
    declared = _model_card_languages(model)
    return _coverage(declared) if declared else Coverage(("unknown",), ALL_SCRIPTS)


_CARD_LANGUAGE = re.compile(r"^language:\s*(.*)$")
_CARD_ITEM = re.compile(r"^\s*-\s*([A-Za-z-]+)\s*$")


def _model_card_languages(model: str) -> tuple[str, ...]:
    """The ``language:`` of a local model folder's README front matter (a string or a list), else ()."""
    card = Path(model) / "README.md"
    try:
        if not card.is_file():
            return ()
        lines = card.read_text(encoding="utf-8", errors="replace").splitlines()[:200]
    except OSError:
        return ()
    if not lines or lines[0].strip() != "---":
        return ()
    found: list[str] = []
    for i, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            break
        m = _CARD_LANGUAGE.match(line)
        if not m:
            continue
        value = m.group(1).strip()
        if value:
            found.extend(v.strip(" '\"") for v in value.strip("[]").split(",") if v.strip())
        else:
            for item in lines[i + 1:]:
                sub = _CARD_ITEM.match(item)
                if not sub:
                    break
                found.append(sub.group(1))
    return tuple(lang.lower() for lang in found if lang)


def script_of(ch: str) -> str | None:
    """Usage: ``script_of("京")`` -> ``"Han"``; None for anything that is not a letter."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    for script, marker in (("Latin", "LATIN"), ("Han", "CJK"), ("Hiragana", "HIRAGANA"), ("Katakana", "KATAKANA"),
                           ("Hangul", "HANGUL"), ("Cyrillic", "CYRILLIC"), ("Greek", "GREEK"), ("Arabic", "ARABIC"),
                           ("Hebrew", "HEBREW"), ("Devanagari", "DEVANAGARI"), ("Thai", "THAI")):
        if name.startswith(marker) or f" {marker} " in f" {name} ":
            return script
    return "Other"


def script_counts(text: str) -> dict[str, int]:
    """Usage: ``script_counts("tea 茶")`` -> ``{"Latin": 3, "Han": 1}``."""
    counts: dict[str, int] = {}
    for ch in unicodedata.normalize("NFKC", text):
        script = script_of(ch)
        if script is not None:
            counts[script] = counts.get(script, 0) + 1
    return counts
