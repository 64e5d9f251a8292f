"""Which records of the packed store are whole: the segments a catalog names, mapped and checked once per run.

Usage::

    maps = Segments(meta, table.segments)      # every block inflated, every record's CRC checked
    sound = maps.sound_pages(table)            # per page of the catalog: every record whole, with its size and CRC
    maps.payload(location, size, crc)          # the bytes of one record, or None

Every segment is checked whole at every provision (``scan_segment`` with
``deep``): each block's numbers and CRC, its stream inflated to exactly its raw
length, each record's CRC. A stream forged behind a right table, a cut tail or
a flipped bit is found here, so the pages whose records it holds are chunked
again instead of reused. (A shortcut by a whole-file CRC recorded in the
catalog is not taken: the catalog is as forgeable as the segment, and a record
the index build then reuses without reading it would never be repaired.)
"""

from __future__ import annotations

import mmap
import os
import zlib
from typing import TYPE_CHECKING

from vaulteval.chunks.blocks import block_payloads, scan_blocks
from vaulteval.chunks.segments import MAGIC, STORE_DIR, parse_location

if TYPE_CHECKING:
    from vaulteval.chunks.catalogfile import Table
    from vaulteval.vault.metadir import MetaDir


def scan_segment(data: bytes, *, deep: bool = True) -> tuple[list, str | None]:
    """Every record of a whole segment as (key, size, crc) (the key as ``parse_location`` gives it), and what is
    wrong with the rest (None when sound). ``deep`` (``index verify`` / ``doctor --deep``) also inflates every
    block and checks each record's CRC; a truncated tail or a flipped bit is named here. A segment of another
    format is not read (``provision`` writes its pages' records again).
    """
    if data[: len(MAGIC)] != MAGIC:
        return [], "not a chunk segment of this vaulteval's format (bad magic)"
    return scan_blocks(data, len(MAGIC), deep=deep)


class Segments:
    """The segments a catalog names, mapped read-only and scanned once: which records are whole and check.
    ``damaged`` holds the segments with a problem anywhere (compaction copies out of them)."""

    def __init__(self, meta: "MetaDir | None", names):
        self.maps: dict[str, mmap.mmap | None] = {name: None for name in names}
        self.frames: dict[str, set[tuple]] = {}
        self.damaged: set[str] = set(self.maps)
        self._block: tuple[tuple[str, int], list[bytes] | None] | None = None
        if meta is None or not meta.is_dir(STORE_DIR):
            return
        with meta.sub(STORE_DIR) as folder:
            for name in self.maps:
                try:
                    with folder.open_read(name) as fh:
                        size = os.fstat(fh.fileno()).st_size
                        mm = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) if size else None
                except (OSError, ValueError):
                    continue
                if mm is None:
                    continue
                found, problem = scan_segment(mm)
                self.maps[name], self.frames[name] = mm, set(found)
                if problem is None:
                    self.damaged.discard(name)

    def holds(self, where: str, size: int, crc: int) -> bool:
        """Whether a whole record with this size and CRC is at ``where``."""
        parsed = parse_location(where)
        return parsed is not None and (parsed[1], size, crc) in self.frames.get(parsed[0], ())

    def sound_pages(self, table: "Table") -> list[bool]:
        """Per page of the catalog: whether every one of its records is whole, with its size and CRC."""
        ok = [False] * len(table.seg)
        for j, (s, key, size, crc) in enumerate(zip(table.seg, table.keys(), table.size, table.crc)):
            ok[j] = (key, size, crc) in self.frames.get(table.segments[s], ())
        return [all(ok[k:k + n]) for k, n in zip(table.first, table.chunks)]

    def payload(self, where: str, size: int, crc: int) -> bytes | None:
        """The payload at ``where`` when a whole record with this size and CRC is there."""
        parsed = parse_location(where)
        if parsed is None or (parsed[1], size, crc) not in self.frames.get(parsed[0], ()):
            return None
        name, key = parsed
        if self._block is None or self._block[0] != (name, key[0]):  # records of one block are asked in a row
            self._block = ((name, key[0]), block_payloads(self.maps[name], key[0]))
        payloads = self._block[1]
        payload = payloads[key[1]] if payloads is not None and key[1] < len(payloads) else None
        return payload if payload is not None and zlib.crc32(payload) == crc else None
