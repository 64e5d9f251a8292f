"""Why a candidate matched and where: its best passage, the query words it holds, its lines and date.

Usage::

    passages = Passages("how often should I descale", index, vault)   # one per query; work happens on use
    passages.snippet(raw_text, doc)         # the sentence that best matches, with what fits around it
    passages.matched_terms(context_text, doc)   # ["often", "descale"]
    passages.location("wiki/howto/Descaling.md", raw_text)
    # {"heading_path": [...], "first_line": 12, "last_line": 19, "modified": "2026-11-30T08:12:44Z"}

A sentence scores the summed IDF of the distinct query terms it holds (terms
as the index's analyzer makes them of that chunk: with ``auto``, in the chunk's
recorded language); ties go to the earlier sentence. The
snippet is that sentence, then the sentences after it and those before it in
its paragraph while the whole stays within ``SNIPPET_CHARS``, cut at
whitespace; a chunk where no sentence matches (the words were in its title or
tags) gives its start.
"""

from __future__ import annotations

import math
import re
import time
from typing import TYPE_CHECKING

from vaulteval.index.analysis import lookup
from vaulteval.index.tokenize import WORD_RE

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index
    from typing import Callable

    from vaulteval.chunks.integrity import QueryCheck
    from vaulteval.chunks.location import NoteLayouts
    from vaulteval.vault.vault import Vault

SNIPPET_CHARS = 200
LOCATION_FIELDS = ("heading_path", "first_line", "last_line", "modified", "snippet_line", "snippet_heading_path")
# A sentence: from a non-space character to a line's end, to . ! or ? followed by whitespace, or to 。！？
# (the cuts a line was split at before, one possessive pattern now; the old split is the oracle of
# tests/pipeline/test_sentences.py). A sentence that ends at a line's end loses its trailing whitespace.
_SENTENCE = re.compile(r"(?=\S)(?:[^\n.!?。！？]++|[.!?](?!\s))*+[.!?。！？]?")


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, a line being at most one paragraph's sentence run; whitespace trimmed."""
    out = []
    for m in _SENTENCE.finditer(text):
        start, end = m.span()
        if text[end - 1].isspace():
            end = start + len(text[start:end].rstrip())
        out.append((start, end))
    return out


def _cut(text: str, start: int, end: int, limit: int) -> str:
    """``text[start:end]`` within ``limit`` characters, its ends moved to whitespace where a word would be split."""
    if start > 0 and not text[start - 1].isspace() and not text[start].isspace():
        space = min((i for i in (text.find(" ", start, end), text.find("\n", start, end)) if i >= 0), default=-1)
        if 0 <= space < start + limit // 2:
            start = space + 1
    end = min(end, start + limit)
    if end < len(text) and not text[end].isspace() and not text[end - 1].isspace():
        space = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
        if space > start + limit // 2:
            end = space
    return text[start:end].strip()


class TextMemo:
    """What depends on a chunk's text alone (its sentences, the analyzer's terms of a sentence or of the
    indexed text), kept by an open Retriever so a chunk served again is not analysed again; and, for the
    analyzers with a ``TermMatcher``, each (query, chunk text) pair's snippet and matched terms (a Retriever
    has one index, so a query's terms and their weights are the same every time it is asked)."""

    def __init__(self, limit: int = 50_000):
        self.limit = limit
        self._terms: dict[tuple[str, str], tuple[str, ...]] = {}
        self._spans: dict[str, list[tuple[int, int]]] = {}
        self.answers: dict[tuple, object] = {}  # (kind, query, text, ...) -> snippet or matched terms

    def terms(self, analyzer: str, analyze, text: str) -> tuple[str, ...]:
        key = (analyzer, text)
        found = self._terms.get(key)
        if found is None:
            if len(self._terms) >= self.limit:
                self._terms.clear()
            found = self._terms[key] = tuple(analyze(text, bounded=False))
        return found

    def sentences(self, text: str) -> list[tuple[int, int]]:
        found = self._spans.get(text)
        if found is None:
            if len(self._spans) >= self.limit:
                self._spans.clear()
            found = self._spans[text] = _sentences(text)
        return found

    def answer(self, key: tuple, make):
        found = self.answers.get(key)
        if found is None:
            if len(self.answers) >= self.limit:
                self.answers.clear()
            found = self.answers[key] = make()
        return found


class Passages:
    """The per-query parts of explaining a hit; every method works on one candidate's texts."""

    def __init__(self, query: str, index: "BM25Index", vault: "Vault | None" = None,
                 layouts: "Callable[[], NoteLayouts] | None" = None, memo: TextMemo | None = None):
        self.query, self.index, self.vault = query, index, vault
        self._layouts = layouts  # gives a Retriever's notes worked out for earlier queries (opened on first use)
        analysis = self._analysis_kind = lookup(index.analyzer_name)
        # The query's words and a hit's text, by its language, each analysed on first use: a query whose
        # answers show no snippet or matched terms analyses nothing here.
        self._query_words: "Callable[..., list[str]] | None" = None
        self._by_language: "Callable[[str | None], tuple] | None" = None
        self._memo = memo if memo is not None else TextMemo()  # keyed by the analysis's name: shared across queries
        self._weights: dict[str, float] | None = None
        self._ranges: dict[str, tuple[int, int]] = {}  # each weighted term's postings
        self._by_postings = analysis.per_chunk  # auto: what matched a chunk is read from its postings
        self._in_doc: dict[int, set[str]] = {}
        self._words: list[tuple[str, list[str], bool]] = []  # (as written, its terms, whether they are alternatives)
        # Every chunk analysed alike (not ``auto``): the query terms a text holds are found without listing the
        # text's terms, and what a chunk's sentences held is kept for its matched terms.
        self._match = analysis.matcher if not self._by_postings else None
        self._wanted: frozenset[str] = frozenset()
        self._held: dict[str, frozenset[str]] = {}
        self.check: "QueryCheck | None" = None  # the query's integrity checks: the notes' signatures they saw

    def _analyze(self, text: str) -> list[str]:
        """``text`` analysed as the query's words are."""
        if self._query_words is None:
            self._query_words = self._analysis_kind.passages(self.index.header, self.query)
        return self._query_words(text)

    def _chunk(self, code: str | None) -> tuple[str, "Callable[..., list[str]]"]:
        """(a name for the analysis, the analyzer) of a hit's text in language ``code``."""
        if self._by_language is None:
            self._by_language = self._analysis_kind.chunk_analysis(self.index.header, self.query)
        return self._by_language(code)

    def weights(self) -> dict[str, float]:
        """IDF of each distinct query term the index holds (others cannot have matched)."""
        if self._weights is None:
            index, weights = self.index, {}
            for piece in self.query.split():
                terms = self._analyze(piece)
                if terms:
                    self._words.extend(self._written(piece.strip(".,;:!?¿¡\"'()[]{}«»“”‘’"), terms))
                for term in terms:
                    tid = index.term_id(term) if term not in weights else -1
                    if tid >= 0:
                        start, end = self._ranges[term] = index.posting_range(tid)
                        df = end - start
                        weights[term] = math.log(1.0 + (index.n_docs - df + 0.5) / (df + 0.5))
            self._weights, self._wanted = weights, frozenset(weights)
        return self._weights

    def _written(self, surface: str, terms: list[str]) -> list[tuple[str, list[str], bool]]:
        """A query piece's words as ``matched_terms`` shows them. ``auto`` analyzes a word in several languages,
        so the terms of a word outside CJK text are alternatives (its stems in each), and the word is shown as
        written when any of them matched; a piece of several such words (``docker-exec``) is shown word by word."""
        if not self._by_postings:  # one language: a word's terms are its pieces
            return [(surface, terms, False)]
        from vaulteval.index.langs.words import has_cjk, words

        if has_cjk(surface):
            return [(surface, terms, False)]  # n-grams and segments: pieces of the word
        split = words(surface)
        if len(split) == 1:
            return [(surface, terms, True)]
        return [(word, found, True) for word in split if (found := self._analyze(word))]

    def _analysis(self, doc: int | None) -> tuple[str, "Callable[..., list[str]]"]:
        """(name, analyzer) of the text of chunk ``doc`` (None: a chunk whose number is not known)."""
        return self._chunk(None if doc is None else self.index.doc_language(doc))

    def _matched(self, doc: int | None):
        """The weighted query terms that can have matched chunk ``doc``: with ``auto``, those whose postings hold
        it (the index's own analysis of the chunk, whatever a passage's analysis makes of its words); else all."""
        weights = self.weights()
        if not self._by_postings or doc is None:
            return weights.keys()
        found = self._in_doc.get(doc)
        if found is None:
            holds = self.index.choose_scorer(warm=False).holds
            found = self._in_doc[doc] = {term for term, (start, end) in self._ranges.items() if holds(start, end, doc)}
        return found

    def _score(self, text: str, analysis: tuple[str, "Callable[..., list[str]]"], matched) -> float:
        weights = self.weights()
        terms = self._memo.terms(*analysis, text)
        # fsum: the same sum in any set order, so ties between sentences break the same way in every process;
        # being exact, it sums only the terms that have a weight (a term without one adds 0.0).
        found = matched.intersection(terms) if isinstance(matched, set) else matched & terms
        return math.fsum([weights[term] for term in found])

    def _best(self, text: str, spans: list[tuple[int, int]]) -> int:
        """With a ``TermMatcher``: the first of the sentences ``spans`` with the highest score, or -1 when none
        scores above 0 (``_score``'s sums). Every weight is above 0 and ``fsum`` is exact, so a sentence
        holding all the terms has the highest score there is: the sentences after it are not read."""
        weights = self.weights()
        if not weights:
            return -1
        best, top, everything = -1, 0.0, len(self._wanted)
        held: frozenset[str] = frozenset()
        for i, terms in enumerate(self._match.each(text, spans, self._wanted)):
            if terms:
                held |= terms
                score = math.fsum([weights[term] for term in terms])
                if score > top:
                    best, top = i, score
                    if len(terms) == everything:
                        break
        # The text's terms are its sentences' terms (tokenize's note on pieces): what they held is what it holds.
        self._held[text] = held
        return best

    def snippet(self, text: str, doc: int | None = None, limit: int = SNIPPET_CHARS) -> str:
        """The passage of ``text`` (the raw text of chunk number ``doc``) around its best-matching sentence."""
        if self._match is not None:  # every chunk analysed alike: ``doc`` changes nothing
            return self._memo.answer(("snippet", self.query, text, limit), lambda: self._snippet(text, doc, limit))
        return self._snippet(text, doc, limit)

    def _snippet(self, text: str, doc: int | None, limit: int) -> str:
        spans = self._memo.sentences(text)
        analysis = self._analysis(doc) if self.weights() else None
        matched = self._matched(doc) if analysis else None
        if self._match is not None:
            best = self._best(text, spans)
        else:
            scores = [self._score(text[s:e], analysis, matched) for s, e in spans] if matched else []
            best = scores.index(max(scores)) if scores and max(scores) > 0.0 else -1
        if best < 0:
            return _cut(text, 0, len(text), limit)
        start, end = spans[best]
        if end - start > limit:
            return _cut(text, self._focus(text, start, end, limit, analysis[1], matched), end, limit)
        lo = hi = best
        while hi + 1 < len(spans) and spans[hi + 1][1] - start <= limit:  # what follows first
            hi, end = hi + 1, spans[hi + 1][1]
        # Then what precedes, within the same paragraph: text before a blank line is about something else.
        while lo > 0 and end - spans[lo - 1][0] <= limit and "\n\n" not in text[spans[lo - 1][1]:start]:
            lo, start = lo - 1, spans[lo - 1][0]
        return _cut(text, start, end, limit)

    def _focus(self, text: str, start: int, end: int, limit: int, analyze: "Callable[..., list[str]]",
               matched) -> int:
        """Where to start a window on an over-long sentence: a little before its first matching word."""
        for word in WORD_RE.finditer(text, start, end):
            if any(term in matched for term in analyze(word.group(), bounded=False)):
                return max(start, min(word.start() - limit // 4, end - limit))
        return start

    def matched_terms(self, text: str, doc: int | None = None, raw: str | None = None) -> list[str]:
        """The query's words found in ``text`` (the indexed text of chunk number ``doc``, prefix included), as
        written in the query; for a word the analyzer splits (CJK n-grams) its longest pieces that matched.
        ``raw``: the chunk's text, which ``text`` ends with after its prefix and a blank line."""
        if self._match is not None:
            return list(self._memo.answer(("matched", self.query, text),
                                          lambda: tuple(self._matched_terms(text, doc, raw))))
        return self._matched_terms(text, doc, raw)

    def _present(self, text: str, raw: str | None) -> frozenset[str]:
        """The weighted query terms ``text`` holds, from what the snippet of ``raw`` found when ``text`` is
        ``raw`` after a line break: a text split after a newline has its parts' terms (tokenize's note on pieces)."""
        held = self._held.get(raw) if raw is not None else None
        if held is not None:
            if text == raw:
                return held
            cut = len(text) - len(raw)
            if cut > 0 and text[cut - 1] == "\n" and text.endswith(raw):
                return held if len(held) == len(self._wanted) else held | self._match(text[:cut], self._wanted)
        return self._match(text, self._wanted)

    def _matched_terms(self, text: str, doc: int | None, raw: str | None) -> list[str]:
        weights = self.weights()
        if not weights:
            return []
        if self._match is not None:
            present = self._present(text, raw)
        elif self._by_postings and doc is not None:
            present = set(self._matched(doc))
        else:
            present = set(self._memo.terms(*self._analysis(doc), text)) & set(weights)
        out: list[str] = []
        for surface, terms, alternatives in self._words:
            hits = [t for t in terms if t in present]
            if not hits:
                continue
            if alternatives or len(terms) == 1:
                out.append(surface or terms[0])
            else:
                out.extend(t for t in hits if not any(t != u and t in u for u in hits))
        if not self._by_postings:
            return list(dict.fromkeys(out))
        first: dict[str, str] = {}  # auto shows words as written: "SteamOS" once after "steamos-finalize"'s "steamos"
        for word in out:
            first.setdefault(word.casefold(), word)
        return list(first.values())

    def location(self, page_path: str, raw: str, snippet: str | None = None) -> dict:
        """Heading path and file lines of the chunk ``raw`` (and of ``snippet`` in it), and the note's modified
        time (UTC); each None when the note cannot be read now or the chunk is no longer in it."""
        out = dict.fromkeys(LOCATION_FIELDS)
        if self.vault is None:
            return out
        from vaulteval.chunks.integrity import stat_signature
        from vaulteval.chunks.location import UNKNOWN, NoteLayouts
        from vaulteval.errors import PathEscape
        from vaulteval.vault.paths import read_confined

        if self._layouts is not None and self.check is not None:
            # The note as this query's verification saw it: a layout worked out for that very signature
            # (remembered by the Retriever), or the bytes the verification read, answer without reading again.
            signature = self.check.note_signature(page_path)
            where = self._layouts().locate_known(page_path, signature, raw, snippet)
            data = self.check.note_bytes(page_path) if where is UNKNOWN else None
            if data is not None:
                where = self._layouts().locate(page_path, data, raw, snippet, signature, signature[3] / 1e9)
            if where is not UNKNOWN:
                out["modified"] = _utc(signature[3])
                if where is not None:
                    out.update(where)
                return out
        try:
            st, data = read_confined(self.vault.notes_dir, page_path, self.vault.notes_strip)
        except (OSError, PathEscape):
            return out
        out["modified"] = _utc(st.st_mtime_ns)
        if self._layouts is None:  # no Retriever to keep them: this query's own
            own = NoteLayouts()
            self._layouts = lambda: own
        where = self._layouts().locate(page_path, data, raw, snippet, stat_signature(st), st.st_mtime)
        if where is not None:
            out.update(where)
        return out


def _utc(mtime_ns: int) -> str:
    """A modification time in whole seconds, UTC, ISO 8601."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime_ns // 1_000_000_000))
