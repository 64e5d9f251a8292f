"""The on-disk index format: one file of plain arrays, checked block by block as it is read.

Usage::

    write_sections(bm25_dir, "index.vti", header, {"doc_len": np.array(...), "terms": b"..."})
    header, sections = read_sections(path)      # header, section table, small sections checked (or (path, fh))
    sections["doc_len"]                         # the whole section as a numpy array, its blocks checked first
    sections.check("post_docs", 100, 200)       # check only the blocks holding elements 100..199
    sections.raw("post_docs")[100:200]          # ... then read them (a memoryview: no numpy needed)
    sections.verify_all()                       # every byte (doctor --deep, index verify)

Layout: ``MAGIC`` (8 bytes) | header length (u32) | header CRC32 (u32) | header
JSON | block table (one CRC32 per block of every section) | sections, each
16-byte aligned. The header records the schema version, the block size, every
section's offset/size/dtype/CRC32/first block, the CRC32 of the block table and
the body size. Opening reads only the header, the block table and the small
sections; a query checks the blocks it reads, once per open file. Every section
written through ``write_sections`` gets block checksums; nothing else is needed.

Reading needs no numpy: ``raw`` gives memoryviews cast to the section's element
type, so a CLI query never pays numpy's import (most of a call's time). numpy
is imported when whole arrays are asked for (``sections[name]``, ``raw_array``)
and for writing.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import sys
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from collections import namedtuple
from typing import TYPE_CHECKING

from vaulteval.vault.metadir import MetaDir, NotRegularFile, open_regular
from vaulteval.vault.testhooks import pause_point

MAGIC = b"VEVIDX\x00\x02"
SCHEMA_VERSION = 2
BLOCK_SIZE = 16 * 1024
# Sections up to this size are checked whole when the file is opened.
SMALL_SECTION = 64 * 1024
_PREFIX = struct.Struct("<8sII")
_ALIGN = 16
# Element types a section may hold (numpy's dtype.str: byte order, kind, size) and their memoryview formats.
_FORMATS = {"i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "i8": "q", "u8": "Q",
            "f2": "e", "f4": "f", "f8": "d"}
_NATIVE = "<" if sys.byteorder == "little" else ">"

if TYPE_CHECKING:
    from typing import Any

    import numpy as np


def _itemsize(dtype: str) -> int | None:
    """Bytes per element of a section dtype such as ``<u4``; None when it is not one of ``_FORMATS``."""
    if len(dtype) == 3 and dtype[0] in "<>|=" and dtype[1:] in _FORMATS:
        return int(dtype[2])
    return None


def _native_format(dtype: str) -> str | None:
    """The memoryview format reading ``dtype`` in this machine's byte order, or None (numpy must swap)."""
    if dtype[0] == "|" or dtype[0] == "=" or dtype[0] == _NATIVE or dtype[2] == "1":
        return _FORMATS[dtype[1:]]
    return None


class IndexFileError(Exception):
    """The index file is missing, truncated, corrupt or of another schema."""


class IndexCorrupt(IndexFileError):
    """A section or block of the index fails its checksum; ``section`` and ``block`` say where."""

    def __init__(self, message: str, section: str | None = None, block: int | None = None):
        super().__init__(message)
        self.section, self.block = section, block


class _Section(namedtuple("_SectionEntry", "offset nbytes dtype count crc32 first_block")):
    """One row of the section table; ``offset`` counts from the body start."""

    __slots__ = ()

    @property
    def n_blocks(self) -> int:
        return -(-self.nbytes // BLOCK_SIZE)


def _pad(n: int) -> int:
    return (-n) % _ALIGN


def _block_crcs(data: bytes) -> list[int]:
    view = memoryview(data)
    return [zlib.crc32(view[i : i + BLOCK_SIZE]) for i in range(0, len(data), BLOCK_SIZE)]


def write_sections(folder: MetaDir, file_name: str, header: dict[str, Any],
                   sections: dict[str, np.ndarray | bytes]) -> int:
    """Serialise the sections with a checksummed header and block table, publish atomically; returns the size."""
    import numpy as np

    layout: dict[str, list] = {}
    blobs: list[bytes] = []
    crcs: list[int] = []
    offset = 0
    for name, value in sections.items():
        if isinstance(value, (bytes, bytearray, memoryview)):
            data, dtype, count = bytes(value), "bytes", len(value)
        else:
            arr = np.ascontiguousarray(value)
            data, dtype, count = arr.tobytes(), arr.dtype.str, int(arr.size)
        layout[name] = [offset, len(data), dtype, count, zlib.crc32(data), len(crcs)]
        crcs.extend(_block_crcs(data))
        blobs.append(data)
        pad = _pad(len(data))
        if pad:
            blobs.append(b"\x00" * pad)
        offset += len(data) + pad
    table = np.asarray(crcs, dtype="<u4").tobytes()
    table += b"\x00" * _pad(len(table))
    full_header = dict(header, schema_version=SCHEMA_VERSION, block_size=BLOCK_SIZE, n_blocks=len(crcs),
                       blocks_crc32=zlib.crc32(table), sections=layout, body_size=offset)
    # Section offsets are relative to the body start; the header size is only known after encoding.
    head = json.dumps(full_header, sort_keys=True, ensure_ascii=False).encode("utf-8")
    head += b" " * _pad(_PREFIX.size + len(head))
    data = b"".join([_PREFIX.pack(MAGIC, len(head), zlib.crc32(head)), head, table, *blobs])
    pause_point("index-serialised")
    folder.write_bytes(file_name, data, durable=True)
    pause_point("index-published")
    return len(data)


def _read_header(fh) -> tuple[dict[str, Any], int]:
    prefix = fh.read(_PREFIX.size)
    if len(prefix) != _PREFIX.size:
        raise IndexFileError("index file is truncated (no header)")
    magic, head_len, head_crc = _PREFIX.unpack(prefix)
    if magic[:6] != MAGIC[:6]:
        raise IndexFileError("not a vaulteval index file")
    if magic != MAGIC:
        found = int.from_bytes(magic[6:], "big")
        raise IndexFileError(f"index file format {found} is not {int.from_bytes(MAGIC[6:], 'big')} "
                             "(written by another vaulteval version)")
    head = fh.read(head_len)
    if len(head) != head_len or zlib.crc32(head) != head_crc:
        raise IndexFileError("index header is truncated or corrupt")
    header = json.loads(head)
    if not isinstance(header, dict) or header.get("schema_version") != SCHEMA_VERSION:
        found = header.get("schema_version") if isinstance(header, dict) else None
        raise IndexFileError(f"index schema {found} is not {SCHEMA_VERSION}")
    return header, _PREFIX.size + head_len


def checked_open(opener: Any) -> Any:
    """Usage: ``fh = checked_open(lambda: open_regular(path))``: the file ``opener`` opens, or IndexFileError
    saying it is missing, not a regular file (a FIFO, folder, symlink...) or unreadable."""
    try:
        return opener()
    except FileNotFoundError:
        raise IndexFileError("index file is missing") from None
    except NotRegularFile:
        raise IndexFileError("index file is not a regular file") from None
    except OSError as exc:
        raise IndexFileError(f"index file unreadable: {exc.strerror or exc}") from None


def read_header(path: Path) -> dict[str, Any]:
    """Usage: ``read_header(path)["n_docs"]``: the checked header only, no body check."""
    with checked_open(lambda: open_regular(path)) as fh:
        try:
            return _read_header(fh)[0]
        except (OSError, ValueError) as exc:
            raise IndexFileError(f"index header unreadable: {exc}") from None


def _well_formed(entry: Any) -> bool:
    """[offset, bytes, dtype, count, crc32, first block]: whole numbers >= 0 and a plain numeric dtype."""
    if not (isinstance(entry, list) and len(entry) == 6 and isinstance(entry[2], str)):
        return False
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for i, v in enumerate(entry) if i != 2):
        return False
    return entry[2] == "bytes" or _itemsize(entry[2]) is not None


def _section_table(header: dict[str, Any]) -> dict[str, _Section]:
    """The section table, checked for shape, bounds and overlap before any byte of the body is used."""
    if header.get("block_size") != BLOCK_SIZE:
        raise IndexFileError(f"index block size {header.get('block_size')} is not {BLOCK_SIZE}")
    body_size, n_blocks = header.get("body_size"), header.get("n_blocks")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for v in (body_size, n_blocks, header.get("blocks_crc32"))):
        raise IndexFileError("index header lacks its section table")
    table: dict[str, _Section] = {}
    end = next_block = 0
    # JSON keys are sorted by name; the file order is the order of the offsets, and an empty section
    # shares its offset (and first block) with the section after it, so it sorts first.
    sections = header.get("sections")
    if not isinstance(sections, dict) or not all(_well_formed(e) for e in sections.values()):
        raise IndexFileError("index section table is malformed")
    for name, entry in sorted(sections.items(), key=lambda item: (item[1][0], item[1][1] > 0)):
        sec = _Section(*entry)
        itemsize = 1 if sec.dtype == "bytes" else _itemsize(sec.dtype)
        if (sec.offset != end or sec.offset % _ALIGN or sec.nbytes != sec.count * itemsize
                or sec.first_block != next_block):
            raise IndexFileError(f"index section table is inconsistent at {name!r}")
        end = sec.offset + sec.nbytes + _pad(sec.nbytes)
        next_block += sec.n_blocks
        table[name] = sec
    if end != body_size or next_block != n_blocks:
        raise IndexFileError("index section table does not cover the body")
    return table


def read_sections(path: Path, fh=None) -> tuple[dict[str, Any], "Sections"]:
    """Check header, block table and small sections, memory-map the file; return (header, sections).

    ``fh`` is the file already opened (through the meta folder's descriptor); else ``path`` is opened.
    """
    if fh is None:
        fh = checked_open(lambda: open_regular(path))
    with fh:
        try:
            header, table_start = _read_header(fh)
            layout = _section_table(header)
        except (ValueError, TypeError, KeyError) as exc:
            raise IndexFileError(f"index header unreadable: {exc}") from None
        table_bytes = 4 * header["n_blocks"]
        table = fh.read(table_bytes + _pad(table_bytes))
        if len(table) != table_bytes + _pad(table_bytes) or zlib.crc32(table) != header["blocks_crc32"]:
            raise IndexFileError("index block table is truncated or corrupt")
        body_start = table_start + len(table)
        if os.fstat(fh.fileno()).st_size != body_start + header["body_size"]:
            raise IndexFileError("index file is truncated or has trailing bytes")
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if header["body_size"] else b""
    crcs = struct.unpack_from(f"<{header['n_blocks']}I", table)
    sections = Sections(mapped, body_start, layout, crcs)
    sections.file_size = body_start + header["body_size"]  # of the file opened, whatever its path now names
    for name, sec in layout.items():
        if sec.nbytes <= SMALL_SECTION:
            sections.check(name)
        sections.check_padding(name)  # outside every block; at most 15 bytes a section
    return header, sections


def verify_file(path: Path) -> dict[str, Any]:
    """Usage: ``verify_file(bm25_dir / "fields.vti")``: every byte of any file in this format, checked.

    Raises IndexFileError (IndexCorrupt naming the section and block) at the first fault.
    """
    _header, sections = read_sections(path)
    return {"path": str(path), "size_bytes": os.stat(path).st_size, **sections.verify_all()}


class Sections(Mapping):
    """The sections of an open index file; bytes are used only after their blocks pass their checksums.

    ``sections[name]`` checks the whole section (once) and returns it as a numpy
    array, or a memoryview for ``bytes`` sections. Code that reads a small part
    of a large section calls ``check(name, start, stop)`` and then slices
    ``raw(name)`` (a memoryview in this machine's byte order; numpy only for a
    file of the other byte order). Checked blocks are remembered for the life of
    the object.
    """

    def __init__(self, mapped: Any, body_start: int, layout: dict[str, _Section], crcs: Any):
        self._mapped = mapped
        self._body_start = body_start
        self.file_size = 0  # the whole file's size, set by read_sections
        self._layout = layout
        self._crcs = crcs
        self._ok = bytearray(len(crcs))  # 1 = block checked
        self._whole: set[str] = set()
        self._views: dict[str, Any] = {}
        self._arrays: dict[str, Any] = {}
        self._itemsize = {name: 1 if sec.dtype == "bytes" else _itemsize(sec.dtype) for name, sec in layout.items()}
        whole = memoryview(mapped)
        for name, sec in layout.items():
            start = body_start + sec.offset
            view = whole[start : start + sec.nbytes]
            if sec.dtype == "bytes":
                self._views[name] = view
            elif (fmt := _native_format(sec.dtype)) is not None:
                self._views[name] = view.cast(fmt)
            else:
                self._views[name] = self.raw_array(name)

    def __getitem__(self, name: str) -> Any:
        if name not in self._whole:
            self.check(name)
            self._whole.add(name)
        return self._views[name] if self._layout[name].dtype == "bytes" else self.raw_array(name)

    def raw_array(self, name: str) -> "np.ndarray":
        """The numeric section as a numpy array without any check: slice it only where ``check`` has passed."""
        arr = self._arrays.get(name)
        if arr is None:
            import numpy as np

            sec = self._layout[name]
            arr = np.frombuffer(self._mapped, dtype=np.dtype(sec.dtype), count=sec.count,
                                offset=self._body_start + sec.offset) if sec.count else np.zeros(0, sec.dtype)
            self._arrays[name] = arr
        return arr

    def __contains__(self, name: object) -> bool:
        return name in self._layout

    def __iter__(self) -> Iterator[str]:
        return iter(self._layout)

    def __len__(self) -> int:
        return len(self._layout)

    def dtype(self, name: str) -> str:
        """Usage: ``sections.dtype("post_docs")`` -> ``"<i4"`` (``"bytes"`` for byte sections)."""
        return self._layout[name].dtype

    def file_offset(self, name: str, element: int = 0) -> int:
        """Usage: ``sections.file_offset("post_docs", 10)``: where element 10 of a section sits in the file."""
        sec = self._layout[name]
        return self._body_start + sec.offset + element * self._itemsize[name]

    def block_of(self, name: str, element: int) -> int:
        """The section's block (0-based) holding ``element``."""
        return element * self._itemsize[name] // BLOCK_SIZE

    def block_map(self, name: str) -> tuple[bytearray, int]:
        """(the checked-block flags, the section's first block): a hot loop may skip ``check`` when the
        flags of every block it reads are already 1; it must call ``check`` otherwise."""
        return self._ok, self._layout[name].first_block

    def checked_blocks(self) -> int:
        """How many blocks have passed their checksum since the file was opened."""
        return self._ok.count(1)

    def raw(self, name: str) -> Any:
        """The section without any check, as a memoryview of its elements: slice it only where ``check`` has passed."""
        return self._views[name]

    def check(self, name: str, start: int = 0, stop: int | None = None) -> None:
        """Check the blocks holding elements ``start..stop-1`` (bytes for ``bytes`` sections)."""
        sec = self._layout[name]
        size = self._itemsize[name]
        lo = start * size
        hi = sec.nbytes if stop is None else min(stop * size, sec.nbytes)
        if hi <= lo:
            return
        b0 = sec.first_block + lo // BLOCK_SIZE
        b1 = sec.first_block + (hi - 1) // BLOCK_SIZE + 1
        if self._ok.find(0, b0, b1) < 0:
            return
        for block in range(b0, b1):
            if not self._ok[block]:
                self._check_block(name, sec, block)

    def _check_block(self, name: str, sec: _Section, block: int) -> None:
        i = block - sec.first_block
        start = self._body_start + sec.offset + i * BLOCK_SIZE
        end = self._body_start + sec.offset + min(sec.nbytes, (i + 1) * BLOCK_SIZE)
        if zlib.crc32(memoryview(self._mapped)[start:end]) != self._crcs[block]:
            raise IndexCorrupt(f"index section {name!r} block {i} of {sec.n_blocks} fails its checksum "
                               "(corrupt file)", section=name, block=i)
        self._ok[block] = 1

    def check_padding(self, name: str) -> None:
        """The alignment bytes after a section are outside every block, so they must be zero."""
        sec = self._layout[name]
        start = self._body_start + sec.offset + sec.nbytes
        if any(memoryview(self._mapped)[start : start + _pad(sec.nbytes)]):
            raise IndexCorrupt(f"index padding after section {name!r} is not zero (corrupt file)",
                               section=name, block=max(0, sec.n_blocks - 1))

    def verify_all(self) -> dict[str, Any]:
        """Check every byte: each block, each section's CRC, the zero padding. Raises IndexCorrupt at the first fault."""
        view = memoryview(self._mapped)
        for name, sec in self._layout.items():
            for block in range(sec.first_block, sec.first_block + sec.n_blocks):
                self._check_block(name, sec, block)
            start = self._body_start + sec.offset
            if zlib.crc32(view[start : start + sec.nbytes]) != sec.crc32:
                raise IndexCorrupt(f"index section {name!r} fails its checksum (corrupt file)", section=name)
            self.check_padding(name)
        return {"sections": {name: {"bytes": sec.nbytes, "blocks": sec.n_blocks} for name, sec in self._layout.items()},
                "blocks": len(self._crcs), "block_size": BLOCK_SIZE}
