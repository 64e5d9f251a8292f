"""One indexed chunk's metadata, as a row of the index's ``docs`` section.

Usage: ``DocMeta.from_json(line).chunk_id``; ``doc.to_json()`` -> the row's bytes.
"""

from __future__ import annotations

import json
from collections import namedtuple

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
if TYPE_CHECKING:
    from typing import Any

# chunk_file is relative to the meta dir: chunks/<address>/chunk-NNN.json
_Fields = namedtuple("_Fields", "chunk_id chunk_file page_path page_address chunk_index body_hash page_body_hash "
                     "context_hash size mtime_ns")


class DocMeta(_Fields):
    """One indexed chunk, as recorded at build time (a named tuple: cheap to build; collections.namedtuple
    rather than typing.NamedTuple, which would import typing on every CLI query)."""

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

    def to_json(self) -> bytes:
        d = {"id": self.chunk_id, "file": self.chunk_file, "page": self.page_path, "addr": self.page_address,
             "ci": self.chunk_index, "bh": self.body_hash, "ph": self.page_body_hash, "ch": self.context_hash,
             "sz": self.size, "mt": self.mtime_ns}
        return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
