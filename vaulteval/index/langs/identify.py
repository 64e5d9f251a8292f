"""A text's language: its script first, then py3langid among the languages written in that script.

Usage: ``identify("Wie lange werden ältere Fassungen aufbewahrt?")`` -> ``"de"``;
``page_languages([chunk1, chunk2])`` -> ``["de", "en"]`` (a note's chunks).

Why py3langid: it is langid.py's model (97 languages, naive Bayes over byte n-grams) with a numpy
scorer, runs offline from a 4.5 MB model inside the wheel, needs only numpy, identifies a chunk in
a fraction of a millisecond, and is maintained; fastText's lid.176 needs a 126 MB download
(or a less accurate 917 kB one) and a compiled extension, lingua-py is accurate but its models
are ten times larger and slower to load.

Script decides alone whenever it can: kana is Japanese, Hangul Korean, Han alone Chinese, Greek
Greek, and so on (``scripts``). Only Latin, Cyrillic, Arabic and Devanagari texts need the
identifier, restricted to the catalog's languages of that script, so a Latin text is never called
Breton. A note is identified from all its chunks; a chunk keeps the note's language unless it is
long enough to be identified alone (``CHUNK_ALONE`` letters) or written in another script. Inline
code and fence lines are left out of what is identified, unless they are all a text holds.
"""

from __future__ import annotations

import re
from functools import lru_cache

from vaulteval.index.langs.catalog import LANGUAGES, UNDETERMINED
from vaulteval.index.langs.libraries import need
from vaulteval.index.langs.scripts import candidates_of, script_counts

CHUNK_ALONE = 200    # letters a chunk needs to be identified apart from its note
MAX_CHARS = 4_000    # characters of a text the identifier reads (enough; keeps notes cheap)


@lru_cache(maxsize=1)
def identifier():
    """py3langid's identifier, restricted to the catalog's languages (loaded on first use)."""
    need("py3langid", "auto")
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    model.set_languages([code for code in LANGUAGES if code in set(model.nb_classes)])
    return model


@lru_cache(maxsize=None)
def _classifier(candidates: tuple[str, ...]):
    """The identifier restricted to ``candidates`` (a script's languages), its table widened to float32.

    ``classify`` on it gives the same language as ranking every catalog language and taking the best
    candidate: the naive Bayes scores of the other languages never enter a candidate's score, and the
    model stores its table as float16, which numpy widens to float32 before every product anyway.
    Narrower and pre-widened, a text's scores cost a third less (docs/benchmarks.md)."""
    import copy

    import numpy as np

    model = copy.copy(identifier())
    model.set_languages(list(candidates))
    model.nb_ptc = np.ascontiguousarray(model.nb_ptc, dtype=np.float32)
    return model


def best_among(text: str, candidates: list[str]) -> str:
    """The identifier's most likely language of ``text`` among ``candidates`` (catalog codes)."""
    return _classifier(tuple(candidates)).classify(text[:MAX_CHARS])[0]


# Inline code spans, and the fence lines of code blocks (not what lies between them: a chunk may start
# inside a block, and pairing its fences would then take the prose for the code).
_CODE = re.compile(r"^[ \t>]*(?:```|~~~).*$|`[^`\n]+`", re.M)
_LETTER = re.compile(r"[^\W\d_]")


def prose(text: str) -> str:
    """``text`` without its inline code and fence lines, when letters remain; else ``text`` as it is.

    Commands and identifiers are written in no language: on the tldr pages, whose examples are commands,
    they made short Persian, Arabic, Hindi and Nepali pages look Latin (identified as Malay or Afrikaans),
    and their bytes were a third of what the identifier read (docs/benchmarks.md)."""
    if "`" not in text and "~~~" not in text:
        return text
    stripped = _CODE.sub(" ", text)
    return stripped if _LETTER.search(stripped) else text


def identify(text: str, counts: dict[str, int] | None = None) -> str:
    """The language code of ``text`` (``und`` when it has no letters or its script is not in the catalog).
    ``counts``: the script counts of ``text`` when the caller has them (then ``text`` is taken as it is,
    its code already left out by the caller)."""
    if counts is None:
        text = prose(text)
        counts = script_counts(text)
    _, candidates = candidates_of(counts)
    if not candidates:
        return UNDETERMINED
    if len(candidates) == 1:
        return candidates[0]
    return best_among(text, candidates)


def page_languages(texts: list[str]) -> list[str]:
    """Each chunk's language: the note's, unless the chunk is long enough or in another script. The note
    as a whole is identified only when a chunk needs it (a note of long chunks never is)."""
    if len(texts) == 1:
        return [identify(texts[0])]
    texts = [prose(text) for text in texts]
    note: list[str] = []  # the note's code, once worked out

    def note_code() -> str:
        if not note:
            note.append(identify("\n".join(texts)[:MAX_CHARS]))
        return note[0]

    out = []
    for text in texts:
        counts = script_counts(text)
        script, _ = candidates_of(counts)
        if script is None:
            out.append(note_code())
        elif sum(counts.values()) >= CHUNK_ALONE:
            out.append(identify(text, counts))
        else:
            code = note_code()
            same_script = code in LANGUAGES and LANGUAGES[code].script == script
            out.append(code if same_script else identify(text, counts))
    return out
