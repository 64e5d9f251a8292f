"""What an analyzer is (``Analyzer``), and the one registry that turns an analyzer name into one.

Usage::

    analyzer = lookup("german:compounds=no")      # an unknown name or option: one UsageError line (exit 2)
    analyzer("Tresorverwaltung")                  # its terms; bounded=False for an oversized chunk
    analyzer.documents([(page, text), ...])       # (language code, terms) of a build's chunks, in order
    analyzer.queries(index.header)                # what an index built with it analyzes queries with
    pre = analyzer.pre_analyze()                  # a helper the build offers its texts to first (auto), or None
    analyzer.identity({"de", "en"})               # what an index records of it (name, version, libraries)

One name grammar for every analyzer: ``HEAD[:KEY=VALUE,...]``, HEAD one of ``NAMES``, the keys
the head's own, defaults left out, in normal form (any other spelling is refused with the
normal form to write):

- ``default``: claude-obsidian's tokenizer (``index.tokenize``), no keys;
- ``english``: ``stemmer=porter|none``, ``stopwords=lucene|none`` (``index.analyzers``);
- a language analyzer (``german``, ``spanish``, ``chinese``, ...): ``fold=yes|no``,
  ``compounds=yes|no``, ``stopwords=none`` (``index.langs.registry``);
- ``auto``: each chunk in its own language, each query in the languages it may be in
  (``index.langs.auto``), no keys.

The build, the query path, the field index, the workbench's index settings and the CLI all
look names up here; no other module branches on an analyzer's name.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.index import tokenize
from vaulteval.index.langs.catalog import BY_ANALYZER, LANGUAGE_ANALYZERS

if TYPE_CHECKING:
    from collections.abc import Callable

AUTO = "auto"
NAMES = ("default", "english", AUTO, *LANGUAGE_ANALYZERS)


class Analyzer:
    """An analyzer: a name, text -> terms, the languages it serves, and what an index records of it.

    Subclasses set ``name``, ``terms`` (``terms(text, bounded=True)``: ``bounded`` refuses a text over
    ``tokenize.MAX_INPUT_CHARS``) and ``code``; the other methods have the one-language defaults."""

    name = ""
    code = ""  # the language code every chunk gets ("" for an analyzer of no language)
    per_chunk = False  # True when each chunk's language is identified and recorded (the index's doc_langs)
    version = tokenize.ANALYZER_VERSION  # an index of another version is refused (exit 10)
    matcher: "tokenize.TermMatcher | None" = None  # finds wanted terms in a text without listing them
    terms: "Callable[..., list[str]]"

    def __call__(self, text: str, *, bounded: bool = True) -> list[str]:
        return self.terms(text, bounded=bounded)

    @property
    def languages(self) -> tuple[str, ...]:
        """The language codes it analyzes text in."""
        return (self.code,) if self.code else ()

    def documents(self, items: "list[tuple[str, str]]", pre: "object | None" = None) -> "list[tuple[str, list[str]]]":
        """(page, text) pairs -> (language code, terms) pairs, in order; texts are analyzed whole (unbounded)."""
        from vaulteval.index.analyze_all import analyze_all  # a helper process for a large build

        return [(self.code, terms) for terms in analyze_all(self, [text for _, text in items])]

    def queries(self, header: "dict[str, object]") -> "Callable[..., list[str]]":
        """What an index built with this analyzer (``header``: its header) analyzes queries with."""
        return self.terms

    def passages(self, header: "dict[str, object]", query: str) -> "Callable[..., list[str]]":
        """What the words of ``query`` are analyzed with to explain a hit."""
        return self.terms

    def warm(self, header: "dict[str, object]") -> None:
        """Load now what analyzing the queries of an index (``header``) would load on first use."""

    def chunk_analysis(self, header: "dict[str, object]", query: str) -> "Callable[[str | None], tuple]":
        """Chunk language code -> (a name for the analysis, the analyzer of a hit's text in that language)."""
        return lambda code: (self.name, self.terms)

    def per_document(self, codes: "list[str]", ready: "dict[str, list[str]]") -> "Callable[[int], Callable]":
        """Document number -> the analyzer of its fields (``codes``: each chunk's recorded language; ``ready``:
        what ``pre_analyze``'s helper gave back)."""
        return lambda i: self.terms

    def pre_analyze(self) -> "object | None":
        """An optional helper a build offers its texts to before analyzing them (``offer(text)``,
        ``offer_record(record)``, ``terms()`` -> text to terms, ``close()``); None when there is none."""
        return None

    def libraries(self, codes: "set[str] | None" = None) -> "dict[str, str | None]":
        """Versions of the libraries it analyzes with (``codes``: the languages an index's chunks are in)."""
        return {}

    def identity(self, codes: "set[str] | None" = None) -> "dict[str, object]":
        """What an index header records of it: another name, version or library version is another index."""
        return {"analyzer": self.name, "analyzer_version": self.version,
                "analyzer_libraries": self.libraries(codes) or None}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # -- the name's options as index settings (``pipeline.indexsettings``: ``analyzer=german,fold=no``) --
    option_keys: "tuple[str, ...]" = ()  # the index settings this head's names are written with

    @classmethod
    def compose(cls, head: str, options: "dict[str, str]") -> str:
        """The name of ``head`` with ``options`` (index-setting values; their defaults leave a key out)."""
        return head

    def settings(self) -> "dict[str, str]":
        """This name's options as index-setting values, those off their defaults."""
        return {}


def _bounded(inner: "Callable[[str], list[str]]") -> "Callable[..., list[str]]":
    def analyze(text: str, *, bounded: bool = True) -> list[str]:
        if bounded:
            tokenize.check_length(text)
        return inner(text)

    return analyze


def _unknown(name: object) -> UsageError:
    return UsageError(f"unknown analyzer {name!r}: choose one of {', '.join(NAMES)}")


class SeedAnalyzer(Analyzer):
    """``default``: claude-obsidian's tokenizer, bit for bit."""

    def __init__(self, name: str):
        if name != "default":
            raise _unknown(name)
        self.name, self.terms = name, tokenize.tokenize_default
        self.matcher = tokenize.TermMatcher(*tokenize.term_rules(name))


class EnglishAnalyzer(Analyzer):
    """``english`` and its ``stemmer=``/``stopwords=`` variants."""

    code = "en"
    option_keys = ("stemmer", "stopwords")

    def __init__(self, name: str):
        rules = tokenize.term_rules(name)  # a bad option: UsageError with the normal form
        self.name = name
        self.terms = tokenize.tokenize_english if name == "english" else tokenize.option_analyzer(name)
        self.matcher = tokenize.TermMatcher(*rules)

    @classmethod
    def compose(cls, head, options):
        from vaulteval.index.analyzers import english_analyzer_name

        return english_analyzer_name(options.get("stemmer", "snowball"), options.get("stopwords", "short"))

    def settings(self):
        if self.name == "english":
            return {}
        from vaulteval.index.analyzers import parse_analyzer_name

        stemmer, stopwords = parse_analyzer_name(self.name)
        return {k: v for k, v, default in (("stemmer", stemmer, "snowball"), ("stopwords", stopwords, "short"))
                if v != default}

    def libraries(self, codes: "set[str] | None" = None) -> "dict[str, str | None]":
        from vaulteval.index.langs.libraries import versions

        return {"PyStemmer": versions({"snowball"})["PyStemmer"]}


class LanguageAnalyzer(Analyzer):
    """A language's analyzer (Snowball, or a segmenter for Chinese, Japanese, Korean)."""

    option_keys = ("fold", "compounds", "stopwords")

    def __init__(self, name: str):
        from vaulteval.index.langs.registry import LanguageNameError, language_analyzer, parse

        try:
            self.language, self.options = parse(name)
            inner = language_analyzer(name)
        except LanguageNameError as exc:
            raise UsageError(str(exc)) from None
        self.name, self.code, self.terms = name, self.language.code, _bounded(inner)
        self._load = getattr(inner, "load", None)  # a segmenter's dictionary

    def warm(self, header):
        if self._load is not None:
            self._load()

    @classmethod
    def compose(cls, head, options):
        """``fold``/``compounds``: ``default`` (the language's own), ``yes``, ``no``; ``stopwords``: ``none`` or not."""
        from vaulteval.index.langs.registry import normal_name

        language = BY_ANALYZER[head]
        fold, compounds = options.get("fold", "default"), options.get("compounds", "default")
        values = {"fold": language.fold if fold == "default" else fold == "yes",
                  "compounds": language.compounds if compounds == "default" else compounds == "yes",
                  "stopwords": options.get("stopwords") != "none"}
        return normal_name(language, values)

    def settings(self):
        language, options, out = self.language, self.options, {}
        if options["fold"] != language.fold:
            out["fold"] = "yes" if options["fold"] else "no"
        if options["compounds"] != language.compounds:
            out["compounds"] = "yes" if options["compounds"] else "no"
        if not options["stopwords"]:
            out["stopwords"] = "none"
        return out

    def libraries(self, codes: "set[str] | None" = None) -> "dict[str, str | None]":
        from vaulteval.index.langs.libraries import versions

        return versions({self.language.kind} | ({"compounds"} if self.options["compounds"] else set()))


class AutoAnalyzer(Analyzer):
    """``auto``: each chunk in its own language (identified per note), each query in the languages it may be in;
    its optional ``pre_analyze`` hook analyzes a build's Korean texts in a helper process (``langs.ahead``)."""

    per_chunk = True

    def __init__(self, name: str):
        if name != AUTO:
            raise _unknown(name)
        from vaulteval.index.langs.auto import analyze_document

        self.name, self.terms = name, _bounded(analyze_document)

    @property
    def languages(self) -> tuple[str, ...]:
        from vaulteval.index.langs.catalog import LANGUAGES

        return tuple(LANGUAGES)

    def documents(self, items, pre=None):
        from vaulteval.index.langs.auto import analyze_documents

        return analyze_documents(items, pre)

    def _query_side(self, header):
        from vaulteval.index.langs.auto import QueryAnalyzer

        languages = header.get("languages")
        return QueryAnalyzer(languages if isinstance(languages, dict) else {})

    def queries(self, header):
        inner = self._query_side(header)
        analyze = _bounded(inner)
        analyze.languages = inner  # type: ignore[attr-defined]  (the last query's languages: explain output)
        return analyze

    def passages(self, header, query):
        return self._query_side(header).fixed(query)

    def warm(self, header):
        self._query_side(header).warm()

    def chunk_analysis(self, header, query):
        return self._query_side(header).passages(query).of

    def per_document(self, codes, ready):
        from vaulteval.index.langs.auto import field_analyzers

        return field_analyzers(codes, ready)

    def pre_analyze(self):
        from vaulteval.index.langs.ahead import KoreanAhead

        return KoreanAhead()

    def libraries(self, codes=None):
        from vaulteval.index.langs.catalog import LANGUAGES
        from vaulteval.index.langs.libraries import versions

        used = [LANGUAGES[c] for c in (codes or ()) if c in LANGUAGES]
        kinds = {lang.kind for lang in used} | {"identify", "plain"}
        kinds |= {"compounds"} if any(lang.compounds for lang in used) else set()
        return versions(kinds)


_HEADS = {"default": SeedAnalyzer, "english": EnglishAnalyzer, AUTO: AutoAnalyzer,
          **{head: LanguageAnalyzer for head in LANGUAGE_ANALYZERS}}


@lru_cache(maxsize=64)
def _lookup(name: str) -> Analyzer:
    head = _HEADS.get(name.partition(":")[0])
    if head is None:
        raise _unknown(name)
    return head(name)


def lookup(name: object) -> Analyzer:
    """The analyzer a name stands for; an unknown name or option is one ``UsageError`` line."""
    if not isinstance(name, str):
        raise _unknown(name)
    return _lookup(name)


def compose(head: str, options: "dict[str, str]") -> str:
    """Usage: ``compose("german", {"fold": "yes"})`` -> ``"german:fold=yes"``: a head and its options' values."""
    family = _HEADS.get(head)
    if family is None:
        raise _unknown(head)
    return family.compose(head, options)


def option_keys(head: str) -> "tuple[str, ...]":
    """The index settings a head's names are written with (``english``: stemmer, stopwords)."""
    family = _HEADS.get(head)
    return family.option_keys if family is not None else ()


def head_of(name: str) -> str:
    """``german:fold=yes`` -> ``german``."""
    return name.partition(":")[0]


def language_of_head(head: str) -> "object | None":
    """The catalog's language of a language analyzer head (``german``), else None (``default``, ``english``, ``auto``)."""
    return BY_ANALYZER[head] if head in LANGUAGE_ANALYZERS else None


def analyzer_libraries(analyzer: str, codes: "set[str] | None" = None) -> "dict[str, str | None]":
    """Versions of the libraries ``analyzer`` uses (``auto``: those of the ``codes`` its chunks are in)."""
    return lookup(analyzer).libraries(codes)


def built_with_installed_libraries(header: dict, analyzer: str) -> bool:
    """Was the index whose header this is built with the analyzer libraries installed now?

    Postings made by another jieba or PyStemmer would be scored against queries tokenized by this one."""
    return header.get("analyzer_libraries") == (
        analyzer_libraries(analyzer, set(header.get("languages") or ())) or None)


if __name__ == "__main__":  # a build's helper process (``analyze_all``): the named analyzer's terms of its texts
    import sys

    from vaulteval.index.analyze_all import serve

    serve(lookup(sys.argv[1]))
