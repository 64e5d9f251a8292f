"""Why a candidate matched and where: its best passage, the query words it holds, its lines and date.

Usage::

    passages = Passages("how often should I descale", index, vault)   # one per query; work happens on use
    passages.snippet(raw_text)              # the sentence that best matches, with what fits around it
    passages.matched_terms(context_text)    # ["often", "descale"]
    passages.location("wiki/howto/Descaling.md", raw_text)
    # {"heading_path": [...], "first_line": 12, "last_line": 19, "modified": "2026-11-30T08:12:44Z"}

A sentence scores the summed IDF of the distinct query terms it holds (terms
as the index's analyzer makes them); ties go to the earlier sentence. The
snippet is that sentence, then the sentences after it and those before it in
its paragraph while the whole stays within ``SNIPPET_CHARS``, cut at
whitespace; a chunk where no sentence matches (the words were in its title or
tags) gives its start.
"""

from __future__ import annotations

import math
import re
import time

from vaulteval.index.docterms import passage_analyzer
from vaulteval.index.tokenize import WORD_RE, term_matcher


TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
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
    """What an open Retriever keeps across queries so a chunk served again is not analysed again: each chunk's
    sentences, and each (query, chunk) pair's snippet and matched terms (a Retriever has one index, so a
    query's terms and their weights are the same every time it is asked); for an analyzer without a
    ``TermMatcher``, the analyzer's terms of each text."""

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
        self._analyze = passage_analyzer(index.analyzer_name, index.header, query)
        # A memo shared across queries holds for a fixed analyzer; ``auto`` analyzes in each query's languages.
        self._memo = memo if memo is not None and index.analyzer_name != "auto" else TextMemo()
        # The query terms a text holds, found without listing the text's terms (None: analyze the text).
        self._match = term_matcher(index.analyzer_name) if index.analyzer_name != "auto" else None
        self._weights: dict[str, float] | None = None
        self._wanted: frozenset[str] = frozenset()
        self._words: list[tuple[str, list[str]]] = []
        # Chunk text -> the weighted query terms it holds, as its snippet's sentences showed them (matcher only).
        self._held: dict[str, frozenset[str]] = {}
        self.check: "QueryCheck | None" = None  # the query's integrity checks: the notes' signatures they saw

    def weights(self) -> dict[str, float]:
        """IDF of each distinct query term the index holds (others cannot have matched)."""
        if self._weights is None:
            index, weights = self.index, {}
            for piece in self.query.split():
                terms = self._analyze(piece)
                if terms:
                    self._words.append((piece.strip(".,;:!?¿¡\"'()[]{}«»“”‘’"), terms))
                for term in terms:
                    tid = index.term_id(term) if term not in weights else -1
                    if tid >= 0:
                        start, end = index.posting_range(tid)
                        df = end - start
                        weights[term] = math.log(1.0 + (index.n_docs - df + 0.5) / (df + 0.5))
            self._weights, self._wanted = weights, frozenset(weights)
        return self._weights

    def _found(self, text: str) -> frozenset[str]:
        """The weighted query terms among the analyzer's terms of ``text``."""
        if self._match is not None:
            return self._match(text, self._wanted)
        return self._wanted.intersection(self._memo.terms(self.index.analyzer_name, self._analyze, text))

    def _best(self, text: str, spans: list[tuple[int, int]]) -> int:
        """The first of the sentences ``spans`` with the highest score, or -1 when none scores above 0.

        A sentence scores the IDF of the weighted query terms it holds, summed by ``fsum``: exact, so the same
        in any set order (ties break the same way in every process), and every weight is above 0, so a
        sentence holding all the terms has the highest score there is: the sentences after it are not read.
        """
        weights = self.weights()
        if not weights:
            return -1
        if self._match is not None:
            found = self._match.each(text, spans, self._wanted)
        else:
            found = (self._found(text[s:e]) for s, e in spans)
        best, top, everything = -1, 0.0, len(self._wanted)
        held: frozenset[str] = frozenset()
        for i, terms in enumerate(found):
            if terms:
                held |= terms
                score = math.fsum([weights[term] for term in terms])
                if score > top:
                    best, top = i, score
                    if len(terms) == everything:
                        break
        if self._match is not None:
            # The text's terms are its sentences' terms (tokenize's note on pieces): what they held is what it holds.
            self._held[text] = held
        return best

    def snippet(self, text: str, limit: int = SNIPPET_CHARS) -> str:
        """The passage of ``text`` (a chunk's raw text) around its best-matching sentence."""
        return self._memo.answer(("snippet", self.query, text, limit), lambda: self._snippet(text, limit))

    def _snippet(self, text: str, limit: int) -> str:
        spans = self._memo.sentences(text)
        best = self._best(text, spans)
        if best < 0:
            return _cut(text, 0, len(text), limit)
        start, end = spans[best]
        if end - start > limit:
            return _cut(text, self._focus(text, start, end, limit), end, limit)
        lo = hi = best
        while hi + 1 < len(spans) and spans[hi + 1][1] - start <= limit:  # what follows first
            hi, end = hi + 1, spans[hi + 1][1]
        # Then what precedes, within the same paragraph: text before a blank line is about something else.
        while lo > 0 and end - spans[lo - 1][0] <= limit and "\n\n" not in text[spans[lo - 1][1]:start]:
            lo, start = lo - 1, spans[lo - 1][0]
        return _cut(text, start, end, limit)

    def _focus(self, text: str, start: int, end: int, limit: int) -> int:
        """Where to start a window on an over-long sentence: a little before its first matching word."""
        weights = self.weights()
        for word in WORD_RE.finditer(text, start, end):
            if any(term in weights for term in self._analyze(word.group(), bounded=False)):
                return max(start, min(word.start() - limit // 4, end - limit))
        return start

    def matched_terms(self, text: str, raw: str | None = None) -> list[str]:
        """The query's words found in ``text`` (the indexed text, prefix included), as written in the query;
        for a word the analyzer splits (CJK n-grams) its longest pieces that matched. ``raw``: the chunk's
        text, which ``text`` ends with after its prefix and a blank line (its snippet's sentences were read)."""
        return list(self._memo.answer(("matched", self.query, text), lambda: tuple(self._matched_terms(text, raw))))

    def _present(self, text: str, raw: str | None) -> frozenset[str]:
        """``_found(text)``, from what the snippet of ``raw`` found when ``text`` is ``raw`` after a line break:
        the terms of a text split after a newline are the terms of its two parts (tokenize's note on pieces)."""
        held = self._held.get(raw) if raw is not None else None
        if held is not None:
            if text == raw:
                return held
            cut = len(text) - len(raw)
            if cut > 0 and text[cut - 1] == "\n" and text.endswith(raw):
                return held if len(held) == len(self._wanted) else held | self._found(text[:cut])
        return self._found(text)

    def _matched_terms(self, text: str, raw: str | None) -> list[str]:
        self.weights()
        present = self._present(text, raw)
        out: list[str] = []
        for surface, terms in self._words:
            hits = [t for t in terms if t in present]
            if not hits:
                continue
            if len(terms) == 1:
                out.append(surface or terms[0])
            else:
                out.extend(t for t in hits if not any(t != u and t in u for u in hits))
        return list(dict.fromkeys(out))

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
