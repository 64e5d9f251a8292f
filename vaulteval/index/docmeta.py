"""One indexed chunk's metadata, as a row of the index's ``docs`` section.

Usage: ``DocMeta.from_row(row, store).chunk_id``; ``doc.to_row(positions)`` -> the row's bytes, where ``store``
is the index header's list of segments and ``positions`` maps each to its place in it.

A row is compact (``ROW_COMPACT`` first): numbers and the three hashes as raw bytes, the location as the
segment's place in ``store``, its block offset and record number, then the address and the page path; the
chunk id is the address, ``:`` and the chunk index. A chunk whose fields do not fit that shape (a hash that
is not ``sha256:`` and 64 lower-case hex digits, ...) gets a row of compact JSON instead, which begins with ``{``.
"""

from __future__ import annotations

import json
import struct
from collections import namedtuple
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# chunk_file is relative to the meta dir: store/<segment>@<block>#<n>
_Fields = namedtuple("_Fields", "chunk_id chunk_file page_path page_address chunk_index body_hash page_body_hash "
                     "context_hash size mtime_ns")


class DocMeta(_Fields):
    """One indexed chunk, as recorded at build time (a named tuple: cheap to build)."""

    __slots__ = ()

    @classmethod
    def from_json(cls, line: bytes) -> "DocMeta":
        return cls.from_dict(json.loads(line))

    @classmethod
    def from_dict(cls, d: Any) -> "DocMeta":
        """A checked row: strings where strings belong, whole numbers where numbers do (else ValueError)."""
        if not isinstance(d, dict):
            raise ValueError("index document row is not an object")
        g = d.get
        row = (g("id"), g("file"), g("page"), g("addr"), g("ci"), g("bh"), g("ph"), g("ch"), g("sz"), g("mt"))
        # Exact types (JSON gives no subclasses; bool is not an int here), tested inline: builds parse 10^5 rows.
        s, i = str, int
        if not (type(row[0]) is s and type(row[1]) is s and type(row[2]) is s and type(row[3]) is s
                and type(row[4]) is i and type(row[5]) is s and type(row[6]) is s and type(row[7]) is s
                and type(row[8]) is i and type(row[9]) is i):
            raise ValueError("index document row has fields of the wrong type")
        return cls(*row)

    @classmethod
    def from_row(cls, row: bytes, store: "list[str]") -> "DocMeta":
        """A row of either kind, checked (else ValueError)."""
        if row[:1] == b"{":
            return cls.from_json(row)
        if row[:1] != ROW_COMPACT or len(row) < _ROW.size:
            raise ValueError("index document row is of an unknown kind")
        _, seg, number, block, ci, size, crc, bh, ph, ch, n_addr = _ROW.unpack_from(row)
        if seg >= len(store) or _ROW.size + n_addr > len(row):
            raise ValueError("index document row names a segment or a length out of range")
        address = row[_ROW.size:_ROW.size + n_addr].decode("utf-8")
        page = row[_ROW.size + n_addr:].decode("utf-8")
        return cls(f"{address}:{ci}", f"store/{store[seg]}@{block}#{number}", page, address, ci,
                   "sha256:" + bh.hex(), "sha256:" + ph.hex(), "sha256:" + ch.hex(), size, crc)

    def to_row(self, positions: "dict[str, int]") -> bytes:
        """The compact row when every field fits it, else the JSON row (``positions``: segment -> place)."""
        compact = self._compact(positions)
        return compact if compact is not None else self.to_json()

    def _compact(self, positions: "dict[str, int]") -> bytes | None:
        head, at, tail = self.chunk_file.partition("@")
        block, mark, number = tail.partition("#")
        seg = positions.get(head[6:]) if head.startswith("store/") else None
        hashes = [_digest(h) for h in (self.body_hash, self.page_body_hash, self.context_hash)]
        address = self.page_address.encode("utf-8")
        if (seg is None or not mark or not (block.isdigit() and number.isdigit() and block.isascii()
                                            and number.isascii()) or None in hashes or len(address) > 255
                or self.chunk_id != f"{self.page_address}:{self.chunk_index}"
                or f"{head}@{int(block)}#{int(number)}" != self.chunk_file
                or not (0 <= self.chunk_index < 1 << 32 and 0 <= self.size < 1 << 32 and 0 <= self.mtime_ns < 1 << 32
                        and int(number) < 1 << 16 and int(block) < 1 << 64)):
            return None
        return _ROW.pack(ROW_COMPACT[0], seg, int(number), int(block), self.chunk_index, self.size, self.mtime_ns,
                         *hashes, len(address)) + address + self.page_path.encode("utf-8")

    def to_json(self) -> bytes:
        d = {"id": self.chunk_id, "file": self.chunk_file, "page": self.page_path, "addr": self.page_address,
             "ci": self.chunk_index, "bh": self.body_hash, "ph": self.page_body_hash, "ch": self.context_hash,
             "sz": self.size, "mt": self.mtime_ns}
        return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


ROW_FORMAT = 2  # the index header's ``row_format``: compact rows (or JSON ones); an index of another is rebuilt
ROW_COMPACT = b"\x01"
# kind, segment's place in the header's store list, record number in its block, block offset, chunk index,
# payload length, payload CRC-32, body hash, page hash, indexed text's hash, address length
_ROW = struct.Struct("<BHHQIII32s32s32sB")


def _digest(value: str) -> bytes | None:
    """The 32 bytes of ``sha256:<64 lower-case hex digits>``; None for any other string."""
    if len(value) != 71 or not value.startswith("sha256:"):
        return None
    try:
        raw = bytes.fromhex(value[7:])
    except ValueError:
        return None
    return raw if raw.hex() == value[7:] else None


def store_names(header: dict) -> list[str]:
    """The index header's segment list, as compact rows index it (anything that is not a name matches nothing)."""
    store = header.get("store") or []
    return [n if isinstance(n, str) else "" for n in store] if isinstance(store, list) else []


def parse_rows(blob: bytes, offsets: list[int], header: dict) -> list[DocMeta]:
    """Every row of a ``docs`` section cut at ``offsets`` (n_docs + 1 of them), checked (else ValueError)."""
    if not blob:
        return []
    if offsets[0] != 0 or offsets[-1] != len(blob) or any(a > b for a, b in zip(offsets, offsets[1:])):
        raise ValueError("index document offsets are out of order")
    store, parse = store_names(header), DocMeta.from_row
    return [parse(blob[a:b], store) for a, b in zip(offsets, offsets[1:])]
