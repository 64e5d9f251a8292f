"""The on-disk index format: one self-checking file of plain arrays.

Usage::

    write_sections(bm25_dir, "index.vti", header, {"doc_len": np.array(...), "terms": b"..."})
    header, sections = read_sections(path)      # verified, memory-mapped (or read_sections(path, fh))

Layout: ``MAGIC`` (8 bytes) | header length (u32) | header CRC32 (u32) | header
JSON | sections, each 16-byte aligned. The header records the schema version,
parameters, every section's offset/size/dtype, the total file size and a CRC32
of the section bytes; a truncated, bit-flipped or foreign file is refused.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from vaulteval.vault.metadir import MetaDir, NotRegularFile, open_regular
from vaulteval.vault.testhooks import pause_point

MAGIC = b"VEVIDX\x00\x01"
SCHEMA_VERSION = 1
_PREFIX = struct.Struct("<8sII")
_ALIGN = 16
_BLOCK = 1 << 20


class IndexFileError(Exception):
    """The index file is missing, truncated, corrupt or of another schema."""


def _pad(n: int) -> int:
    return (-n) % _ALIGN


def write_sections(folder: MetaDir, file_name: str, header: dict[str, Any],
                   sections: dict[str, np.ndarray | bytes]) -> int:
    """Serialise the sections with a checksummed header and publish atomically; returns the size."""
    layout: dict[str, list] = {}
    blobs: list[bytes] = []
    offset = 0
    for name, value in sections.items():
        if isinstance(value, (bytes, bytearray)):
            data, dtype, count = bytes(value), "bytes", len(value)
        else:
            arr = np.ascontiguousarray(value)
            data, dtype, count = arr.tobytes(), arr.dtype.str, int(arr.size)
        layout[name] = [offset, len(data), dtype, count]
        blobs.append(data)
        pad = _pad(len(data))
        if pad:
            blobs.append(b"\x00" * pad)
        offset += len(data) + pad
    body = b"".join(blobs)
    full_header = dict(header, schema_version=SCHEMA_VERSION, sections=layout, body_size=len(body),
                       body_crc32=zlib.crc32(body))
    # Section offsets are relative to the body start; the header size is only known after encoding.
    head = json.dumps(full_header, sort_keys=True, ensure_ascii=False).encode("utf-8")
    head += b" " * _pad(_PREFIX.size + len(head))
    data = _PREFIX.pack(MAGIC, len(head), zlib.crc32(head)) + head + body
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
        raise IndexFileError("index file format version differs from this vaulteval")
    head = fh.read(head_len)
    if len(head) != head_len or zlib.crc32(head) != head_crc:
        raise IndexFileError("index header is truncated or corrupt")
    header = json.loads(head)
    if not isinstance(header, dict):
        raise IndexFileError("index header is not an object")
    if header.get("schema_version") != SCHEMA_VERSION:
        raise IndexFileError(f"index schema {header.get('schema_version')} is not {SCHEMA_VERSION}")
    return header, _PREFIX.size + head_len


def _check_layout(header: dict[str, Any], body_size: int) -> None:
    """The header's section table must describe byte ranges inside the body (the CRC covers only the body)."""
    sections = header.get("sections")
    if not isinstance(header.get("body_size"), int) or not isinstance(header.get("body_crc32"), int) \
            or not isinstance(sections, dict):
        raise IndexFileError("index header lacks its section table")
    for name, entry in sections.items():
        ok = isinstance(entry, list) and len(entry) == 4 and all(isinstance(v, int) and not isinstance(v, bool)
                                                                 for v in (entry[0], entry[1], entry[3]))
        if ok:
            offset, nbytes, dtype, count = entry
            ok = isinstance(dtype, str) and offset >= 0 and nbytes >= 0 and count >= 0 \
                and offset + nbytes <= body_size
            if ok and dtype != "bytes":
                try:
                    ok = np.dtype(dtype).kind in "iuf"
                except TypeError:
                    ok = False
        if not ok:
            raise IndexFileError(f"index section {name!r} is malformed")


def read_header(path: Path) -> dict[str, Any]:
    """Usage: ``read_header(path)["n_docs"]``: the checked header only, no body check."""
    try:
        with open_regular(path) as fh:
            return _read_header(fh)[0]
    except FileNotFoundError:
        raise IndexFileError("index file is missing") from None
    except NotRegularFile:
        raise IndexFileError("index file is not a regular file") from None
    except (OSError, ValueError) as exc:
        raise IndexFileError(f"index header unreadable: {exc}") from None


def read_sections(path: Path, fh=None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Verify the whole file, then memory-map it and return (header, {name: array or memoryview}).

    ``fh`` is the file already opened (through the meta folder's descriptor); else ``path`` is opened.
    """
    if fh is None:
        try:
            fh = open_regular(path)
        except FileNotFoundError:
            raise IndexFileError("index file is missing") from None
        except NotRegularFile:
            raise IndexFileError("index file is not a regular file") from None
        except OSError as exc:
            raise IndexFileError(f"index file unreadable: {exc.strerror}") from None
    with fh:
        try:
            header, body_start = _read_header(fh)
        except ValueError as exc:
            raise IndexFileError(f"index header unreadable: {exc}") from None
        size = os.fstat(fh.fileno()).st_size
        _check_layout(header, size - body_start)
        if size != body_start + header["body_size"]:
            raise IndexFileError("index file is truncated or has trailing bytes")
        # Stream the CRC through a small buffer: the check never holds the file in memory.
        crc = 0
        buf = bytearray(_BLOCK)
        view = memoryview(buf)
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            crc = zlib.crc32(view[:n], crc)
        if crc != header["body_crc32"]:
            raise IndexFileError("index body checksum mismatch (corrupt file)")
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    sections: dict[str, Any] = {}
    for name, (offset, nbytes, dtype, count) in header["sections"].items():
        if dtype != "bytes" and np.dtype(dtype).itemsize * count != nbytes:
            raise IndexFileError(f"index section {name} has an inconsistent size")
        start = body_start + offset
        if dtype == "bytes":
            sections[name] = memoryview(mapped)[start : start + nbytes]
        else:
            sections[name] = np.frombuffer(mapped, dtype=np.dtype(dtype), count=count, offset=start)
    return header, sections
