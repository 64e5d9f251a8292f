"""The terms of the chunks an index build analyzes, and each chunk's language.

Usage: ``for code, terms in document_terms("auto", [(page_path, text), ...]): ...``

Every analyzer but ``auto`` analyzes each text alone and gives every chunk one code (its
language, or ``""`` for ``default``, which has none). ``auto`` identifies a note's chunks together
(``vaulteval.index.langs.auto``), so the build hands over all the texts it re-analyzes at once.
Texts may be longer than the query limit (a chunk from another tool): they are analyzed whole.
"""

from __future__ import annotations

from collections.abc import Callable

from vaulteval.index.tokenize import check_length, get_analyzer

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the start-up budget test keeps typing off the served retrieve
if TYPE_CHECKING:
    from vaulteval.index.langs.ahead import KoreanAhead

LANGS_SECTION = "doc_langs"  # auto indexes: each chunk's language code, newline-terminated


def query_analyzer(analyzer: str, header: "dict[str, object]") -> Callable[..., list[str]]:
    """What an open index analyzes queries with: ``auto`` needs the languages its chunks are in."""
    if analyzer != "auto":
        return get_analyzer(analyzer)
    from vaulteval.index.langs.auto import QueryAnalyzer

    languages = header.get("languages")
    inner = QueryAnalyzer(languages if isinstance(languages, dict) else {})

    def analyze(text: str, *, bounded: bool = True) -> list[str]:
        if bounded:
            check_length(text)
        return inner(text)

    analyze.languages = inner  # type: ignore[attr-defined]  (the last query's languages: explain output)
    return analyze


def passage_analyzer(analyzer: str, header: "dict[str, object]", query: str) -> Callable[..., list[str]]:
    """What the words of ``query`` are analyzed with to explain a hit: the index's analyzer, and for ``auto``
    the languages the query was analyzed in (never a segmenter the query did not need)."""
    if analyzer != "auto":
        return get_analyzer(analyzer)
    from vaulteval.index.langs.auto import QueryAnalyzer

    languages = header.get("languages")
    return QueryAnalyzer(languages if isinstance(languages, dict) else {}).fixed(query)


def chunk_analysis(analyzer: str, header: "dict[str, object]", query: str) -> Callable[..., tuple[str, Callable]]:
    """Usage: ``name, analyze = chunk_analysis("auto", index.header, query)(code)``: what the text of a hit in
    language ``code`` (``doc_language``) is analyzed with to explain ``query``, and a name for that analysis.
    Every analyzer but ``auto`` analyzes every chunk alike; ``auto`` analyzes a chunk in its own language
    (``vaulteval.index.langs.auto.PassageAnalysis``)."""
    if analyzer != "auto":
        analyze = get_analyzer(analyzer)
        return lambda code: (analyzer, analyze)
    from vaulteval.index.langs.auto import QueryAnalyzer

    languages = header.get("languages")
    return QueryAnalyzer(languages if isinstance(languages, dict) else {}).passages(query).of


def doc_language(index: "object", i: int) -> str | None:
    """Chunk ``i``'s language code in an open ``BM25Index`` (None when the index records none), the codes read
    once per open index."""
    codes = index.doc_langs  # type: ignore[attr-defined]
    if codes is None:
        codes = index.doc_langs = doc_languages(index)  # type: ignore[attr-defined]
    return codes[i] if 0 <= i < len(codes) else None


def doc_languages(index: "object") -> list[str]:
    """Each chunk's language code in an open ``BM25Index`` (``[]`` when it records none: not ``auto``)."""
    if not index.has_section(LANGS_SECTION):
        return []
    codes = bytes(index.section(LANGS_SECTION)).decode("ascii", "replace").split("\n")[:-1]
    if len(codes) != index.n_docs:
        raise index.malformed("doc_langs does not hold one code per chunk")
    return codes


def fixed_language(analyzer: str) -> str:
    """The code every chunk of a one-language analyzer gets (``english:...`` -> ``en``; ``default`` -> ``""``)."""
    from vaulteval.index.langs.catalog import BY_ANALYZER

    head = analyzer.partition(":")[0]
    return BY_ANALYZER[head].code if head in BY_ANALYZER else ""


def document_terms(analyzer: str, items: list[tuple[str, str]],
                   ahead: "KoreanAhead | None" = None) -> list[tuple[str, list[str]]]:
    """(page, text) pairs -> (language code, terms) pairs, in the same order (``ahead``: ``auto``'s
    ``KoreanAhead``, see ``langs.ahead``)."""
    if analyzer == "auto":
        from vaulteval.index.langs.auto import analyze_documents

        return analyze_documents(items, ahead)
    from vaulteval.index.analyze_all import analyze_all  # the default analyzer's build path (a helper process)

    code = fixed_language(analyzer)
    return [(code, terms) for terms in analyze_all(analyzer, [text for _, text in items])]


def analyzer_libraries(analyzer: str, codes: set[str] | None = None) -> dict[str, str | None]:
    """Versions of the libraries ``analyzer`` uses (``auto``: those of the ``codes`` its chunks are in)."""
    from vaulteval.index.langs.catalog import LANGUAGES
    from vaulteval.index.langs.libraries import versions
    from vaulteval.index.langs.registry import AUTO, is_language_name, parse

    if analyzer == AUTO:
        used = [LANGUAGES[c] for c in (codes or ()) if c in LANGUAGES]
        kinds = {lang.kind for lang in used} | {"identify", "plain"}
        kinds |= {"compounds"} if any(lang.compounds for lang in used) else set()
        return versions(kinds)
    if is_language_name(analyzer):
        language, options = parse(analyzer)
        return versions({language.kind} | ({"compounds"} if options["compounds"] else set()))
    if analyzer.partition(":")[0] == "english":  # tokenize's own english: PyStemmer only
        return {"PyStemmer": versions({"snowball"})["PyStemmer"]}
    return {}


def built_with_installed_libraries(header: dict, analyzer: str) -> bool:
    """Was the index whose header this is built with the analyzer libraries installed now?

    Postings made by another jieba or PyStemmer would be scored against queries tokenized by this one."""
    return header.get("analyzer_libraries") == (
        analyzer_libraries(analyzer, set(header.get("languages") or ())) or None)
