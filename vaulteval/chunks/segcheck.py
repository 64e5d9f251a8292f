"""Which records of the packed store are whole: the segments a catalog names, mapped and checked once per run.

Usage::

    maps = Segments(meta, table.segments, recorded)   # recorded: name -> (size, CRC-32) from the catalog
    sound = maps.sound_pages(table)                    # per page: every record a whole frame that checks
    maps.payload(location, size, crc)                  # the bytes of one, or None
    sums[name] = whole_file(meta, name)                # a segment just published, for the next catalog

A segment whose size and whole-file CRC-32 are the ones the catalog recorded is
exactly as written, every frame in it checked when it was; a record there is
only matched against its frame header. Any other segment is scanned frame by
frame (``scan_segment``), so a cut tail or a flipped bit is still found.
"""

from __future__ import annotations

import mmap
import os
import zlib
from typing import TYPE_CHECKING

from vaulteval.chunks.segments import FRAME, MAGIC, STORE_DIR, parse_location, scan_segment

if TYPE_CHECKING:
    from vaulteval.chunks.catalogfile import Table
    from vaulteval.vault.metadir import MetaDir


class Segments:
    """The segments a catalog names, mapped read-only: which frames are whole and check. ``sums`` holds each
    sound segment's (size, CRC-32) for the next catalog; ``damaged`` the others (compaction copies out of them)."""

    def __init__(self, meta: "MetaDir | None", names, recorded: dict[str, tuple[int, int] | None]):
        self.maps: dict[str, mmap.mmap | None] = {name: None for name in names}
        self.frames: dict[str, set[tuple[int, int, int]]] = {}
        self.whole: set[str] = set()
        self.sums: dict[str, tuple[int, int]] = {}
        self.damaged: set[str] = set(names)
        if meta is None or not meta.is_dir(STORE_DIR):
            return
        with meta.sub(STORE_DIR) as folder:
            for name in names:
                try:
                    with folder.open_read(name) as fh:
                        size = os.fstat(fh.fileno()).st_size
                        mm = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) if size else None
                except (OSError, ValueError):
                    continue
                if mm is None:
                    continue
                self.maps[name] = mm
                crc = zlib.crc32(mm)
                if recorded.get(name) == (size, crc) and mm[:len(MAGIC)] == MAGIC:
                    self.whole.add(name)
                else:
                    found, problem = scan_segment(mm)
                    self.frames[name] = set(found)
                    if problem is not None:
                        continue
                self.damaged.discard(name)
                self.sums[name] = (size, crc)

    def holds_at(self, name: str, offset: int, size: int, crc: int) -> bool:
        """Whether a whole frame with this size and CRC starts at ``offset`` of segment ``name``."""
        if name in self.whole:
            mm = self.maps[name]
            return offset + size <= len(mm) and size >= FRAME.size and FRAME.unpack_from(mm, offset) == (
                size - FRAME.size, crc)
        return (offset, size, crc) in self.frames.get(name, ())

    def holds(self, where: str, size: int, crc: int) -> bool:
        parsed = parse_location(where)
        return parsed is not None and self.holds_at(parsed[0], parsed[1], size, crc)

    def sound_pages(self, table: "Table") -> list[bool]:
        """Per page of the catalog: whether every one of its records is a whole frame with its size and CRC."""
        import numpy as np  # loaded by provision's build anyway

        seg = np.frombuffer(table.seg, dtype=np.uint32)
        off = np.frombuffer(table.off, dtype=np.uint64).astype(np.int64)
        size = np.frombuffer(table.size, dtype=np.uint32).astype(np.int64)
        crc = np.frombuffer(table.crc, dtype=np.uint32)
        ok = np.zeros(len(seg), dtype=bool)
        for number, name in enumerate(table.segments):
            sel = np.flatnonzero(seg == number)
            if not len(sel):
                continue
            if name in self.whole:  # frames as written: the header at each offset must say this size and CRC
                mm = self.maps[name]
                at, want = off[sel], size[sel]
                inside = (want >= FRAME.size) & (at + want <= len(mm))
                head = np.frombuffer(mm, dtype=np.uint8)[np.where(inside, at, 0)[:, None] + np.arange(FRAME.size)]
                words = np.ascontiguousarray(head).view("<u4")
                ok[sel] = inside & (words[:, 0] == want - FRAME.size) & (words[:, 1] == crc[sel])
                del head
            elif name in self.frames:
                frames = self.frames[name]
                ok[sel] = [(o, z, c) in frames for o, z, c in zip(off[sel].tolist(), size[sel].tolist(),
                                                                   crc[sel].tolist())]
        bad = np.concatenate([[0], np.cumsum(~ok)])
        first = np.array(table.first, dtype=np.int64)
        return ((bad[first + np.array(table.chunks, dtype=np.int64)] - bad[first]) == 0).tolist()

    def payload(self, where: str, size: int, crc: int) -> bytes | None:
        """The payload at ``where`` when a whole frame with this size and CRC starts there."""
        parsed = parse_location(where)
        if parsed is None or not self.holds_at(parsed[0], parsed[1], size, crc):
            return None
        return self.maps[parsed[0]][parsed[1] + FRAME.size: parsed[1] + size]


def whole_file(meta: "MetaDir", name: str) -> tuple[int, int] | None:
    """(size, CRC-32) of a segment just published: the next run then checks it with one CRC, frame by frame never."""
    try:
        with meta.sub(STORE_DIR) as folder, folder.open_read(name) as fh:
            data = fh.read()
    except OSError:
        return None
    return len(data), zlib.crc32(data)
