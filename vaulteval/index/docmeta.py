"""One indexed chunk's metadata, as a row of the index's ``docs`` section.

Usage: ``DocMeta.from_json(line).chunk_id``; ``doc.to_json()`` -> the row's bytes.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple


class DocMeta(NamedTuple):
    """One indexed chunk, as recorded at build time (a NamedTuple: cheap to import and to build)."""

    chunk_id: str
    chunk_file: str  # relative to the meta dir: chunks/<address>/chunk-NNN.json
    page_path: str
    page_address: str
    chunk_index: int
    body_hash: str
    page_body_hash: str
    context_hash: str
    size: int
    mtime_ns: int

    @classmethod
    def from_json(cls, line: bytes) -> "DocMeta":
        return cls.from_dict(json.loads(line))

    @classmethod
    def from_dict(cls, d: Any) -> "DocMeta":
        """A checked row: strings where strings belong, whole numbers where numbers do (else ValueError)."""
        if not isinstance(d, dict):
            raise ValueError("index document row is not an object")
        strs = [d.get(k) for k in ("id", "file", "page", "addr", "bh", "ph", "ch")]
        ints = [d.get(k) for k in ("ci", "sz", "mt")]
        if not all(isinstance(v, str) for v in strs) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in ints):
            raise ValueError("index document row has fields of the wrong type")
        return cls(d["id"], d["file"], d["page"], d["addr"], d["ci"], d["bh"], d["ph"], d["ch"], d["sz"], d["mt"])

    def to_json(self) -> bytes:
        d = {"id": self.chunk_id, "file": self.chunk_file, "page": self.page_path, "addr": self.page_address,
             "ci": self.chunk_index, "bh": self.body_hash, "ph": self.page_body_hash, "ch": self.context_hash,
             "sz": self.size, "mt": self.mtime_ns}
        return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
