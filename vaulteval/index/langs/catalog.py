"""The languages vaulteval analyzes: analyzer name, ISO 639-1 code, script and default options.

Usage: ``LANGUAGES["de"].analyzer`` -> ``"german"``; ``BY_ANALYZER["german"].code`` -> ``"de"``.

Every Snowball algorithm of PyStemmer is a language analyzer named after it (``english`` keeps its
own, older analyzer in ``vaulteval.index.tokenize``); Chinese, Japanese and Korean are segmented by
jieba, MeCab (fugashi with unidic-lite) and Kiwi. Languages without a stemmer or segmenter still get
a code (``auto`` records it per chunk) and the ``plain`` analysis: words split, lower-cased, no
stemming. ``fold`` is on where users commonly type without accents; ``compounds`` where words are
glued into compounds.
"""

from __future__ import annotations

from collections import namedtuple

# code: ISO 639-1 as py3langid names it; analyzer: its name ("plain" when there is no stemmer or
# segmenter); script: a scripts.SCRIPTS key; kind: snowball | chinese | japanese | korean | plain;
# fold / compounds: accent folding / compound splitting on by default.
Language = namedtuple("Language", "code analyzer script kind fold compounds", defaults=("snowball", False, False))


_SNOWBALL = [
    ("ar", "arabic", "arabic"), ("hy", "armenian", "armenian"), ("eu", "basque", "latin"),
    ("ca", "catalan", "latin"), ("cs", "czech", "latin"), ("da", "danish", "latin"), ("nl", "dutch", "latin"),
    ("en", "english", "latin"), ("eo", "esperanto", "latin"), ("et", "estonian", "latin"),
    ("fi", "finnish", "latin"), ("fr", "french", "latin"), ("de", "german", "latin"), ("el", "greek", "greek"),
    ("hi", "hindi", "devanagari"), ("hu", "hungarian", "latin"), ("id", "indonesian", "latin"),
    ("ga", "irish", "latin"), ("it", "italian", "latin"), ("lt", "lithuanian", "latin"),
    ("ne", "nepali", "devanagari"), ("no", "norwegian", "latin"), ("fa", "persian", "arabic"),
    ("pl", "polish", "latin"), ("pt", "portuguese", "latin"), ("ro", "romanian", "latin"),
    ("ru", "russian", "cyrillic"), ("sr", "serbian", "cyrillic"), ("st", "sesotho", "latin"),
    ("es", "spanish", "latin"), ("sv", "swedish", "latin"), ("ta", "tamil", "tamil"), ("tr", "turkish", "latin"),
]
# Where people commonly leave accents out when typing (Spanish "matriculas" for "matrículas").
_FOLD = {"es", "pt", "fr", "it", "ca", "ro"}
_COMPOUNDS = {"de", "nl", "sv"}
# Identified and recorded, analyzed plainly (no stemmer or segmenter in the extra).
_PLAIN = [
    ("bg", "cyrillic"), ("uk", "cyrillic"), ("be", "cyrillic"), ("mk", "cyrillic"), ("kk", "cyrillic"),
    ("sk", "latin"), ("sl", "latin"), ("hr", "latin"), ("bs", "latin"), ("lv", "latin"), ("is", "latin"),
    ("vi", "latin"), ("ms", "latin"), ("tl", "latin"), ("sw", "latin"), ("af", "latin"), ("gl", "latin"),
    ("uz", "latin"), ("az", "latin"), ("sq", "latin"), ("cy", "latin"), ("la", "latin"),
    ("he", "hebrew"), ("ur", "arabic"), ("mr", "devanagari"), ("bn", "bengali"), ("ml", "malayalam"),
    ("th", "thai"), ("lo", "lao"), ("ka", "georgian"), ("te", "telugu"), ("kn", "kannada"),
    ("gu", "gujarati"), ("pa", "gurmukhi"), ("si", "sinhala"), ("my", "myanmar"), ("km", "khmer"),
    ("am", "ethiopic"),
]

LANGUAGES: dict[str, Language] = {
    **{code: Language(code, name, script, fold=code in _FOLD, compounds=code in _COMPOUNDS)
       for code, name, script in _SNOWBALL},
    "zh": Language("zh", "chinese", "han", "chinese"),
    "ja": Language("ja", "japanese", "kana", "japanese"),
    "ko": Language("ko", "korean", "hangul", "korean"),
    **{code: Language(code, "plain", script, "plain") for code, script in _PLAIN},
}
BY_ANALYZER: dict[str, Language] = {lang.analyzer: lang for lang in LANGUAGES.values() if lang.kind != "plain"}
# The language analyzers, in name order ("english" is tokenize's own and not repeated here).
LANGUAGE_ANALYZERS = tuple(sorted(name for name in BY_ANALYZER if name != "english"))
UNDETERMINED = "und"  # a chunk with no letters
PLAIN = Language(UNDETERMINED, "plain", "", "plain")  # any code outside the catalog


def languages_of_script(script: str) -> list[str]:
    """Usage: ``languages_of_script("cyrillic")`` -> ``["ru", "sr", "bg", ...]``."""
    return [code for code, lang in LANGUAGES.items() if lang.script == script]
