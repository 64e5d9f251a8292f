"""``auto``: each chunk analyzed in its own language, each query in the languages it may be in.

Usage::

    langs_terms = analyze_documents([(page, text), ...])      # [(code, terms), ...], same order
    analyze = QueryAnalyzer({"de": 140, "en": 12})            # the index header's ``languages``
    analyze("Tresor teilen")                                   # German terms (+ plain ones)

Documents: a note's chunks are identified together (``identify.page_languages``) and each chunk is
analyzed with its language's analyzer (``registry.code_analyzer``); the index records the code.

Queries: kana, Hangul or Han pick Chinese/Japanese/Korean (Han alone: Chinese and Japanese when
the vault has both); any other script narrows the candidates to the vault's languages written in
it. One candidate: its analyzer. Several: the query is analyzed in every one of them and the term
lists are combined (each term once, with its largest count). The identifier is not run on
queries: loading its model (68 MB unpacked) takes seconds, far over a CLI query's budget, and a
query's few words are where it errs most; a term from a language the query is not in rarely
occurs in the vault's chunks of that language. When the vault also holds languages of another
script or without a stemmer (whose analyzers leave the query's words unstemmed), or none in the
query's script, the plain split is added too, so a query in a language absent from the vault
still finds what plain BM25 finds. Only the analyzers a query needs are loaded, when it needs them;
a searcher kept open (``Retriever.open``) loads those of the vault's languages as it opens (``warm``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

from vaulteval.index.langs.catalog import LANGUAGES, PLAIN, UNDETERMINED, languages_of_script
from vaulteval.index.langs.registry import analyzer_for, code_analyzer
from vaulteval.index.langs.scripts import CJK, candidates_of, han_languages, main_script, script_counts
from vaulteval.index.langs.words import load as load_split, words

if TYPE_CHECKING:
    from vaulteval.index.langs.ahead import KoreanAhead

MIN_SHARE = 0.005  # a language under this share of the chunks is left out of queries (a stray misidentification)


def analyze_documents(items: list[tuple[str, str]], ahead: "KoreanAhead | None" = None) -> list[tuple[str, list[str]]]:
    """(page, text) pairs -> (language code, terms) pairs, in the same order.

    ``ahead``: the helper the build has been giving its Hangul texts to (``langs.ahead``); the Korean chunks are
    analyzed last, from what it gives back, so the rest is done meanwhile."""
    from vaulteval.index.langs.identify import page_languages  # a build's: a query never identifies

    by_page: dict[str, list[int]] = {}
    for i, (page, _) in enumerate(items):
        by_page.setdefault(page, []).append(i)
    by_code: dict[str, list[int]] = {}
    for indices in by_page.values():
        for i, code in zip(indices, page_languages([items[i][1] for i in indices])):
            by_code.setdefault(code, []).append(i)
    out: list[tuple[str, list[str]] | None] = [None] * len(items)
    # A language's chunks together (Kiwi takes them in one call); Korean last, while the helper works on it.
    for code in sorted(by_code, key=lambda code: code == KOREAN):
        indices = by_code[code]
        texts = [items[i][1] for i in indices]
        ready = ahead.terms() if code == KOREAN and ahead is not None else {}
        for i, terms in zip(indices, _with_ready(code_analyzer(code), texts, ready)):
            out[i] = (code, terms)
    return out  # type: ignore[return-value]


KOREAN = "ko"


def _with_ready(analyze: Callable, texts: list[str], ready: dict[str, list[str]]) -> list[list[str]]:
    """Each text's terms: from ``ready`` when it holds the text, the rest analyzed here, together."""
    many = getattr(analyze, "many", None)
    if not ready:
        return many(texts) if many is not None else list(map(analyze, texts))
    missing = [text for text in texts if text not in ready]
    done = dict(zip(missing, many(missing) if many is not None else map(analyze, missing))) if missing else {}
    return [ready[text] if text in ready else done[text] for text in texts]


def field_analyzers(codes: list[str], ready: dict[str, list[str]]) -> Callable[[int], Callable[[str], list[str]]]:
    """Chunk number -> the analyzer of its fields: its recorded language's (``codes``), a Korean chunk's
    answering first from ``ready`` (the build's ``KoreanAhead``)."""
    if ready:
        with_ready = _ReadyFirst(code_analyzer(KOREAN), ready)
        return lambda i: with_ready if codes[i] == KOREAN else code_analyzer(codes[i])
    return lambda i: code_analyzer(codes[i])


class _ReadyFirst:
    """An analyzer that answers from ``ready`` (text -> terms) when it holds the text."""

    def __init__(self, analyze: Callable[[str], list[str]], ready: dict[str, list[str]]):
        self.analyze, self.ready = analyze, ready

    def __call__(self, text: str) -> list[str]:
        found = self.ready.get(text)
        return found if found is not None else self.analyze(text)


def analyze_document(text: str) -> list[str]:
    """One text on its own (a field such as a title): identified, then analyzed in that language."""
    from vaulteval.index.langs.identify import identify

    return code_analyzer(identify(text))(text)


def query_analyzer(code: str, alone: bool = True) -> Callable[[str], list[str]]:
    """A language's analyzer for queries. Analyzed in this language ``alone``: exactly its chunks'
    analyzer (a stopword left in a query can stem to a word its chunks kept: German ``eine`` gives
    ``ein``, as ``einer`` does). Among several: without stopword lists and compound splitting, whose
    word lists cost a load per language, more than a CLI query may spend (a chunk keeps each compound
    beside its parts, so a compound in the query still meets the same compound in a note)."""
    language = LANGUAGES.get(code, PLAIN)
    return analyzer_for(language, language.fold, language.compounds and alone, alone)


class QueryAnalyzer:
    """The query side of ``auto`` for an index whose chunks are in ``languages`` (code -> chunks)."""

    def __init__(self, languages: dict[str, int]):
        total = sum(languages.values()) or 1
        self.present = [code for code, n in languages.items()
                        if code in LANGUAGES and n / total >= MIN_SHARE]
        self.last: list[str] = []  # the languages the last query was analyzed in (for explain output)
        # A text's candidate languages follow from its main script alone (``candidates_of``): the choice is
        # worked out once per script.
        self._by_script: dict[str | None, tuple[list[str], bool]] = {None: ([], True)}

    def languages_for(self, text: str) -> tuple[list[str], bool]:
        """(codes to analyze ``text`` in, whether the plain split is added)."""
        counts = script_counts(text)
        found = self._by_script.get(main_script(counts))
        if found is None:
            script, candidates = candidates_of(counts)
            found = self._by_script[script] = self._choose(script, candidates)
        codes, with_plain = found
        return list(codes), with_plain

    def _choose(self, script: str, candidates: list[str]) -> tuple[list[str], bool]:
        if script == "han":  # Han alone: Chinese or Japanese kanji
            candidates = han_languages(self.present)
        in_vault = [c for c in self.present if c in candidates or (LANGUAGES[c].script == script and script != "han")]
        if not in_vault:
            return candidates[:1], True
        # The plain split meets the words that analyzers of other scripts (and plain languages) leave
        # unstemmed; CJK text in a vault that has its language is segmented there, never split plainly.
        foreign = any(LANGUAGES[c].script != script or LANGUAGES[c].kind == "plain" for c in self.present)
        return in_vault, foreign and script not in CJK

    def fixed(self, query: str) -> Callable[..., list[str]]:
        """An analyzer for any text in the languages ``query`` is analyzed in (the query's own words)."""
        codes, with_plain = self.languages_for(query)
        combined = _combination(tuple(codes), with_plain)
        return lambda text, bounded=True: combined(text)

    def warm(self) -> None:
        """Load now what the first query in each script of the vault's languages would load: their analyzers,
        with the segmenters' dictionaries (for a searcher kept open, whose first answers then wait for none)."""
        scripts = dict.fromkeys(LANGUAGES[code].script for code in self.present)
        load_split(scripts)
        for script in scripts:
            codes, with_plain = self._choose(script, languages_of_script(script))
            for analyze in _analyzers(tuple(codes), with_plain):
                load = getattr(analyze, "load", None)
                if load is not None:
                    load()

    def passages(self, query: str) -> "PassageAnalysis":
        """How a hit's passages are analyzed to explain ``query`` (see ``PassageAnalysis``)."""
        return PassageAnalysis(self, query)

    def __call__(self, text: str) -> list[str]:
        codes, with_plain = self.languages_for(text)
        return self._combined(codes, with_plain, text)

    def _combined(self, codes: list[str], with_plain: bool, text: str) -> list[str]:
        self.last = codes + ([UNDETERMINED] if with_plain else [])
        combined = _combination(tuple(codes), with_plain)
        return combined(text)


def _analyzers(codes: tuple[str, ...], with_plain: bool) -> list[Callable[[str], list[str]]]:
    analyzers = [query_analyzer(c, len(codes) == 1) for c in codes]
    if with_plain:
        analyzers.append(analyzer_for(PLAIN, False, False))
    return analyzers


@lru_cache(maxsize=32)
def _combination(codes: tuple[str, ...], with_plain: bool) -> Callable[[str], list[str]]:
    analyzers = _analyzers(codes, with_plain)
    if len(analyzers) == 1:
        return analyzers[0]
    if all(hasattr(analyze, "of_words") for analyze in analyzers):
        return _SharedSplit(analyzers)
    return lambda text: _merged([analyze(text) for analyze in analyzers])


def _merged(outputs: list[list[str]]) -> list[str]:
    """Each term once per output that has it, as many times as the output with the most of it; the terms in
    order of first appearance, outputs taken in turn."""
    best: dict[str, int] = {}
    for terms in outputs:
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        for term, n in counts.items():
            if n > best.get(term, 0):
                best[term] = n
    return [term for term, n in best.items() for _ in range(n)]


class _SharedSplit:
    """Several Snowball analyzers over one word split: what each makes of a word is worked out once (a
    hit's passages are analyzed in every language of a Latin query, word after word the same)."""

    def __init__(self, analyzers: list):
        self.analyzers = analyzers
        self._memo: dict[str, tuple[tuple[str, ...], ...]] = {}

    def _of(self, word: str) -> tuple[tuple[str, ...], ...]:
        found = self._memo.get(word)
        if found is None:
            if len(self._memo) > 100_000:
                self._memo.clear()
            found = self._memo[word] = tuple(tuple(analyze.of_words([word])) for analyze in self.analyzers)
        return found

    def __call__(self, text: str) -> list[str]:
        per_word = [self._of(word) for word in words(text)]
        best: dict[str, int] = {}
        seen: set[tuple[tuple[str, ...], ...]] = set()
        # The same counts and order as _merged of each analyzer's output. An analyzer whose terms for every word
        # are those of one before it (most stems agree across languages) adds nothing to ``best``: skipped.
        for column in zip(*per_word):
            if column in seen:
                continue
            seen.add(column)
            for term, n in Counter(chain.from_iterable(column)).items():
                if n > best.get(term, 0):
                    best[term] = n
        return [term for term, n in best.items() for _ in range(n)]


_SEGMENTED = ("chinese", "japanese", "korean")


class PassageAnalysis:
    """How the sentences of a hit are analyzed for one query: in the chunk's recorded language (``doc_langs``)
    alone, not in every language of the query's script, so a query's hits cost one stemmer each.

    A chunk in the language the query was analyzed in alone gets exactly its analyzer (the index's analysis
    of the chunk, already loaded for the query). Otherwise the chunk's language is analyzed as a query in
    several languages analyzes it: stemmed, without the stopword list and compound splitting, whose word lists
    would load per language; the caller keeps only the terms the index holds for that chunk, so a sentence
    never scores a term that did not match. A chunk in Chinese, Japanese or Korean the query was not analyzed
    in is analyzed without its segmenter (``without_dictionary``: Kiwi alone takes seconds to load), which
    gives the words a query in another script can hold as the segmenter gives them. ``of(None)`` (no recorded
    language) is the query's own analysis."""

    def __init__(self, analyzer: QueryAnalyzer, query: str):
        self.codes, self.with_plain = analyzer.languages_for(query)
        self._query = analyzer.fixed(query)

    def of(self, code: str | None) -> tuple[str, Callable[..., list[str]]]:
        """(a name for the analysis, for memos; the analyzer) of a chunk in language ``code``."""
        if code is None:
            return "auto?" + "+".join(self.codes) + ("+und" if self.with_plain else ""), self._query
        language = LANGUAGES.get(code, PLAIN)
        if language.kind in _SEGMENTED and code not in self.codes:
            return f"auto/{code}:nodict", _unbounded(code_analyzer(code).without_dictionary)  # type: ignore[attr-defined]
        alone = self.codes == [code]
        return f"auto/{code}" + ("" if alone else ":bare"), _unbounded(query_analyzer(code, alone))


def _unbounded(analyze: Callable[[str], list[str]]) -> Callable[..., list[str]]:
    return lambda text, bounded=True: analyze(text)
