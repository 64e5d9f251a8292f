"""The ``docs`` section of a new index, with the previous index's rows of unmoved records copied in runs.

Usage (inside the build): ``blob, offsets = rows_section(old, old_docs, docs, pairs, positions)``.

An incremental build keeps almost every row: a record that did not move keeps
its row byte for byte, but for the segment's place in the header's ``store``
list, which a new segment may shift. Those rows are copied from the previous
index's section in runs of consecutive rows (a handful for a few edited notes),
and the place is set in all of them at once; only the other rows are encoded.
The bytes are the ones ``DocMeta.to_row`` would give each row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vaulteval.index.docmeta import ROW_COMPACT, ROW_FORMAT

if TYPE_CHECKING:
    from vaulteval.index.docmeta import DocMeta
    from vaulteval.index.reader import BM25Index


def rows_section(old: "BM25Index | None", old_docs: "list[DocMeta]", docs: "list[DocMeta]",
                 pairs: list[tuple[int, int]], positions: dict[str, int]) -> tuple[bytes, np.ndarray]:
    """(the section's bytes, its n_docs + 1 offsets) for ``docs``; ``pairs`` are (old document, new document)
    of the records reused from ``old`` (verified with it), ``positions`` each segment's place in the new
    index's ``store``."""
    n = len(docs)
    prev = np.full(n, -1, dtype=np.int64)  # the old row copied for each new document, or -1: encode it
    place = np.zeros(n, dtype=np.int64)
    compact = np.zeros(n, dtype=bool)
    old_blob, old_off = b"", np.zeros(1, dtype=np.int64)
    if old is not None and pairs and old.header.get("row_format") == ROW_FORMAT:
        old_blob = bytes(old.section("docs"))
        old_off = np.asarray(old.section("doc_offsets"), dtype=np.int64)
        kept = [(a, b) for a, b in pairs if old_docs[a].chunk_file == docs[b].chunk_file]
        if kept:
            a, b = np.array(kept, dtype=np.int64).T
            data = np.frombuffer(old_blob, dtype=np.uint8)
            starts = old_off[a]
            is_compact = data[starts] == ROW_COMPACT[0]
            # A compact row names its segment by its place in the old store list: bytes 1-2, little-endian.
            old_place = np.where(is_compact, data[np.minimum(starts + 1, data.size - 1)].astype(np.int64)
                                 | (data[np.minimum(starts + 2, data.size - 1)].astype(np.int64) << 8), 0)
            lut = np.full(1 << 16, -1, dtype=np.int64)
            for i, name in enumerate((old.header.get("store") or [])[:1 << 16]):
                if isinstance(name, str) and name in positions:
                    lut[i] = positions[name]
            new_place = np.where(is_compact, lut[old_place], 0)
            ok = new_place >= 0  # a segment the new list lacks: that row is encoded again
            prev[b[ok]], place[b[ok]], compact[b[ok]] = a[ok], new_place[ok], is_compact[ok]
    reused = prev >= 0
    encode = np.flatnonzero(~reused)
    fresh = dict(zip(encode.tolist(), [docs[j].to_row(positions) for j in encode.tolist()]))
    lengths = np.zeros(n, dtype=np.int64)
    lengths[reused] = old_off[prev[reused] + 1] - old_off[prev[reused]]
    lengths[encode] = np.fromiter(map(len, fresh.values()), dtype=np.int64, count=len(fresh))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # Runs of rows copied from consecutive old rows; every encoded row is a run of its own.
    run_start = np.ones(n, dtype=bool)
    if n > 1:
        run_start[1:] = ~(reused[1:] & reused[:-1] & (prev[1:] == prev[:-1] + 1))
    bounds = np.flatnonzero(run_start).tolist() + [n]
    pieces = []
    for s, e in zip(bounds, bounds[1:]):
        if reused[s]:
            pieces.append(old_blob[old_off[prev[s]]:old_off[prev[e - 1] + 1]])
        else:
            pieces.append(fresh[s])
    out = bytearray(b"".join(pieces))
    patch = np.flatnonzero(reused & compact)
    if patch.size:
        view = np.frombuffer(out, dtype=np.uint8)
        at = offsets[patch] + 1
        view[at] = place[patch] & 0xFF
        view[at + 1] = place[patch] >> 8
    return bytes(out), offsets
