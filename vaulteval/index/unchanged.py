"""Whether a build would write the index already in service again: then it is kept, not rewritten.

Usage (inside the build, after every listed record was matched to the previous index)::

    if same_as_previous(old, old_docs, docs, reuse_pairs, lengths, analyzer == "auto", header):
        ...  # keep bm25/index.vti as it is; the field index built for it stays valid too

A provision after which no note changed reuses every row and posting of the
previous index in the same order; the file it would write differs from the one
in service only by ``built_at``. Writing it again costs the postings merge, the
row copy, the field index and two durable writes, for the same bytes.

The previous index passed ``BM25Index.verify`` (every byte, and what its numbers
mean) before any of it is reused, as on the rebuilding path. What a rebuild
would change besides is checked here: a vocabulary out of order (sorted), a
term left without postings (dropped), postings out of document order within a
term (sorted), and any header value the build sets. When one differs the caller rebuilds, so a forged or stale
file is handled as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaulteval.index.reader import LANGS_SECTION
from vaulteval.index.postings import canonical

if TYPE_CHECKING:
    from vaulteval.index.docmeta import DocMeta
    from vaulteval.index.reader import BM25Index

# Header values a build writes that depend on the build's moment or on the postings (checked apart).
_NOT_COMPARED = ("built_at", "n_terms", "avgdl")


def same_as_previous(old: "BM25Index", old_docs: "list[DocMeta]", docs: "list[DocMeta]",
                     reuse_pairs: list[tuple[int, int]], lengths: list[int], with_langs: bool,
                     header: dict) -> bool:
    """True when the build's documents are the previous index's, each in its place with its location and
    length, and the new ``header`` (without ``built_at``, ``n_terms``, ``avgdl``) equals the old one's values.
    ``with_langs``: the build writes each chunk's language (``auto``)."""
    n = old.n_docs
    if len(docs) != n or len(reuse_pairs) != n or any(a != b for a, b in reuse_pairs):
        return False
    if any(new.chunk_file != prev.chunk_file for new, prev in zip(docs, old_docs)):
        return False
    if old.doc_len.tolist() != lengths:
        return False
    if with_langs != old.has_section(LANGS_SECTION):  # each reused chunk's code is copied from the old section
        return False
    old_header = old.header
    for key, value in header.items():
        if key not in _NOT_COMPARED and old_header.get(key) != value:
            return False
    if set(old_header) - set(header) - {"schema_version", "block_size", "n_blocks", "blocks_crc32", "sections",
                                        "body_size", *_NOT_COMPARED}:
        return False  # a key this build would not write
    return canonical(old.all_terms(), old.section("post_offsets"), old.section("post_docs"))
