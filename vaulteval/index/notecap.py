"""What one note may add to the BM25 index: postings and distinct terms, bounded as its bytes are.

Usage::

    dropped = cap_note_terms(pages, chunk_indexes, terms_lists)  # positions whose terms are left out

A note of random CJK text, under the byte bound, makes a new term of nearly
every character pair: its postings and vocabulary, not its bytes, set the cost
of the build, the index's size and every later query. Each note's chunks are
indexed in order while the note stays within ``note_budgets()``; the chunk
that would pass a budget and every chunk after it keep their record and their
place in the index but add no terms (like the bytes past the size bound, they
are not searchable by words), and the note is named in one warning.
"""

from __future__ import annotations

import logging

from vaulteval.chunks.pagetext import MAX_NOTE_BYTES_ENV, max_note_bytes

log = logging.getLogger(__name__)

# Per byte of the note size bound: at 8 MiB, 1,048,576 postings and 262,144 distinct terms, several times what
# a note of prose that size adds (its words repeat), far below a note whose every character pair is new.
BYTES_PER_POSTING = 8
BYTES_PER_TERM = 32


def note_budgets() -> tuple[int, int]:
    """(postings, distinct terms) one note may add, from ``VAULTEVAL_MAX_NOTE_BYTES``."""
    limit = max_note_bytes()
    return limit // BYTES_PER_POSTING, limit // BYTES_PER_TERM


def cap_note_terms(pages: list[str], indexes: list[int], terms: list[list[str]]) -> set[int]:
    """The positions of the chunks past their note's budget (chunks taken in ``indexes`` order per page), whose
    terms the index leaves out; each note capped is named in one warning."""
    max_postings, max_terms = note_budgets()
    totals: dict[str, int] = {}
    for page, chunk_terms in zip(pages, terms):
        totals[page] = totals.get(page, 0) + len(chunk_terms)
    # A note with fewer terms in all than either budget cannot pass one: only the rest are counted.
    heavy = {page for page, total in totals.items() if total > min(max_postings, max_terms)}
    dropped: set[int] = set()
    if not heavy:
        return dropped
    by_page: dict[str, list[int]] = {}
    for i, page in enumerate(pages):
        if page in heavy:
            by_page.setdefault(page, []).append(i)
    for page in sorted(by_page):
        rows = sorted(by_page[page], key=indexes.__getitem__)
        postings, vocabulary = 0, set()
        for n, row in enumerate(rows):
            distinct = set(terms[row])
            postings += len(distinct)
            vocabulary |= distinct
            if postings > max_postings or len(vocabulary) > max_terms:
                dropped.update(rows[n:])
                from vaulteval.vault.notefiles import printable

                log.warning("%s adds more than %d postings or %d distinct terms to the index; its first %d of %d "
                            "chunks are searchable by their words (raise %s to index more)", printable(page),
                            max_postings, max_terms, n, len(rows), MAX_NOTE_BYTES_ENV)
                break
    return dropped
