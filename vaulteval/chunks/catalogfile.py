"""The chunk catalog's file: a binary table of pages and records, checked by one CRC-32.

Usage::

    table = Table.from_entries({"wiki/a.md": {"hash": ..., "address": ..., "chunks": 1, "stat": [..], "records": [..]}})
    data, table = encode(settings, rows)   # rows: (path, address, hash, stat, chunks, records)
    settings, table = decode(data)         # raises CatalogFileError for anything but such a file
    table.index["wiki/a.md"], table.records(i), table.listing()

Columns of fixed-size numbers are read and written whole (``array``), page
paths and addresses are NUL-terminated blobs, and one CRC-32 covers the header
and body, so a provision loads and rewrites 38,000 pages without parsing or
writing JSON per page, and an unchanged page's records are copied as numbers.
A file that is truncated, bit-flipped or of the wrong shape is refused whole;
the caller then reads every note again. Layout: docs/index-format.md, "Chunk catalog".
"""

from __future__ import annotations

import json
import re
import struct
import sys
import zlib
from array import array
from itertools import accumulate, chain

from vaulteval.chunks.blocks import MAX_BLOCK_RECORDS
from vaulteval.chunks.segments import MAGIC as SEGMENT_MAGIC, MAX_RECORD_BYTES, SEGMENT_RE, STORE_DIR

MAGIC = b"VEVCAT\x00\x02"  # records by segment, block offset and record number; segments by name
SCHEMA = 4
_PREFIX = struct.Struct("<8sII")  # magic, header length, CRC-32 of everything after these 16 bytes
_HASH_HEAD = "sha256:"
_NO_HASH = bytes(32)  # a hash that is not a SHA-256 (another tool's entry): never equal to a page's hash
_ADDRESSES_RE = re.compile(rb"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,63}\x00)*")
_MAX_COUNT = 1 << 26
_MAX_CHUNKS = 100_000
_SWAP = sys.byteorder != "little"


def _split(where: str) -> tuple[str, int, int]:
    """(segment, block offset, record number) of a location ``store/<segment>@<offset>#<n>``."""
    name, _, at = where[6:].partition("@")
    at, _, nth = at.partition("#")
    return name, int(at), int(nth)


def _where(lead: str, off: int, nth: int) -> str:
    return f"{lead}{off}#{nth}"


class CatalogFileError(ValueError):
    """The catalog file is not one this tool wrote, or it was damaged; ``str()`` says how."""


class Table:
    """A catalog's pages as columns, in address order; records are numbers until asked for."""

    def __init__(self, rels: list[str], addresses: list[str], hashes: list[str], stats: list, chunks: list[int],
                 segments: list[str], seg: array, off: array, nth: array, size: array, crc: array):
        self.rels, self.addresses, self.hashes, self.stats, self.chunks = rels, addresses, hashes, stats, chunks
        self.segments, self.seg, self.off, self.nth, self.size, self.crc = segments, seg, off, nth, size, crc
        self.first = [0, *accumulate(chunks)][:len(chunks)]  # page i's records start at record first[i]
        self.index = dict(zip(rels, range(len(rels))))
        self.from_file = False  # True for the table ``decode`` read from a catalog file

    def __len__(self) -> int:
        return len(self.rels)

    def records(self, i: int) -> list[list]:
        """Page ``i``'s records as ``[location, payload length, CRC]``, chunk 0 first."""
        lead = [f"{STORE_DIR}/{name}@" for name in self.segments]
        k = self.first[i]
        return [[_where(lead[self.seg[j]], self.off[j], self.nth[j]), self.size[j], self.crc[j]]
                for j in range(k, k + self.chunks[i])]

    def keys(self) -> list:
        """Each record's place in its segment as ``parse_location`` gives it: (block offset, number)."""
        return list(zip(self.off, self.nth))

    def entry(self, i: int) -> dict:
        return {"hash": self.hashes[i], "address": self.addresses[i], "chunks": self.chunks[i],
                "stat": list(self.stats[i]) if self.stats[i] is not None else None, "records": self.records(i)}

    def listing(self) -> list[tuple[str, int, int, str]]:
        """Every record as (location, payload length, CRC, chunk id), in (address, chunk index) order."""
        lead = [f"{STORE_DIR}/{name}@" for name in self.segments]
        ids = [f"{address}:{n}" for address, count in zip(self.addresses, self.chunks) for n in range(count)]
        # _where inline: one f-string per record, no call (a provision lists every record).
        return list(zip([f"{lead[s]}{o}#{n}" for s, o, n in zip(self.seg, self.off, self.nth)], self.size,
                        self.crc, ids))

    @classmethod
    def from_entries(cls, entries: dict[str, dict]) -> "Table":
        """A table of entries in the dict form (a test's forgery), by address."""
        order = sorted(entries, key=lambda rel: entries[rel]["address"])
        names = sorted({where[6:where.index("@")] for info in entries.values() for where, _, _ in info["records"]})
        number = {name: i for i, name in enumerate(names)}
        seg, off, nth, size, crc = array("I"), array("Q"), array("H"), array("I"), array("I")
        for rel in order:
            for where, frame_size, frame_crc in entries[rel]["records"]:
                name, at, n = _split(where)
                seg.append(number[name])
                off.append(at)
                nth.append(n)
                size.append(frame_size)
                crc.append(frame_crc)
        stats = [tuple(entries[rel]["stat"]) if entries[rel].get("stat") is not None else None for rel in order]
        return cls(order, [entries[rel]["address"] for rel in order], [entries[rel]["hash"] for rel in order],
                   stats, [entries[rel]["chunks"] for rel in order], names, seg, off, nth, size, crc)


def _column(col: array) -> bytes:
    if _SWAP:
        col = array(col.typecode, col)
        col.byteswap()
    return col.tobytes()


def _read_column(code: str, data: memoryview, start: int, count: int) -> tuple[array, int]:
    col = array(code)
    end = start + count * col.itemsize
    col.frombytes(data[start:end])
    if _SWAP:
        col.byteswap()
    return col, end


def _digest(value: object) -> bytes:
    if isinstance(value, str) and len(value) == 71 and value.startswith(_HASH_HEAD):
        try:
            return bytes.fromhex(value[7:])
        except ValueError:
            pass
    return _NO_HASH


def encode(settings: dict, rows: list[tuple]) -> tuple[bytes, Table]:
    """The file for ``rows`` (path, address, hash, stat, chunks, records), in the order given. ``records`` is a list
    of ``[location, payload length, CRC]`` or ``(table, i)``: page ``i`` of a loaded ``Table``, copied as numbers
    (a run of consecutive pages at once). Also returns the table a reader of the file gets."""
    names: dict[str, int] = {}
    seg, off, nth, size, crc = array("I"), array("Q"), array("H"), array("I"), array("I")
    stats = array("q")
    run: list = []  # [table, first page, end page] of consecutive copied pages

    def flush() -> None:
        table, lo, hi = run
        remap = [names.setdefault(n, len(names)) for n in table.segments]
        k0, k1 = table.first[lo], table.first[hi - 1] + table.chunks[hi - 1]
        part = table.seg[k0:k1]
        seg.extend(part if remap == list(range(len(remap))) else array("I", [remap[s] for s in part]))
        off.extend(table.off[k0:k1])
        nth.extend(table.nth[k0:k1])
        size.extend(table.size[k0:k1])
        crc.extend(table.crc[k0:k1])
        run.clear()

    stats.extend(chain.from_iterable([row[3] if row[3] is not None else _NO_STAT for row in rows]))
    for row in rows:
        records = row[5]
        if isinstance(records, tuple):
            table, i = records
            if run and run[0] is table and run[2] == i:
                run[2] = i + 1
                continue
            if run:
                flush()
            run.extend((table, i, i + 1))
            continue
        if run:
            flush()
        for where, frame_size, frame_crc in records:
            name, at, n = _split(where)
            seg.append(names.setdefault(name, len(names)))
            off.append(at)
            nth.append(n)
            size.append(frame_size)
            crc.append(frame_crc)
    if run:
        flush()
    used = set(seg)
    order = [n for n, i in names.items() if i in used]  # a segment no record uses any more is not named
    if len(order) != len(names) or order != sorted(order):
        ranked = {n: i for i, n in enumerate(sorted(order))}
        renumber = [ranked.get(n, 0) for n in names]
        seg = array("I", [renumber[s] for s in seg])
        order = sorted(order)
    paths = "".join([row[0] + "\0" for row in rows]).encode("utf-8")
    addresses = "".join([row[1] + "\0" for row in rows]).encode("ascii")
    header = dict(settings, schema=SCHEMA, pages=len(rows), records=len(seg), paths=len(paths),
                  addresses=len(addresses), segments=order)
    body = b"".join([_digests([row[2] for row in rows]), _column(stats), _column(array("I", [row[4] for row in rows])),
                     _column(seg), _column(off), _column(size), _column(crc), _column(nth), paths, addresses])
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    data = _PREFIX.pack(MAGIC, len(head), zlib.crc32(body, zlib.crc32(head))) + head + body
    it = iter(stats)
    sigs = [sig if sig[0] >= 0 and sig[1] >= 0 else None for sig in zip(it, it, it)]
    table = Table([row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows], sigs,
                  [row[4] for row in rows], order, seg, off, nth, size, crc)
    return data, table


def _digests(hashes: list) -> bytes:
    """32 raw bytes per ``sha256:<hex>`` hash; zeros for anything else (never equal to a page's hash)."""
    n = len(hashes)
    try:
        joined = "".join(hashes)
    except TypeError:
        joined = ""
    if n and len(joined) == 71 * n and all(joined[k::71] == c * n for k, c in enumerate(_HASH_HEAD)):
        # Every hash is 71 characters with the head in its place (the usual case): one replace, one decode; the
        # length check makes sure only those heads went.
        try:
            raw = bytes.fromhex(joined.replace(_HASH_HEAD, ""))
            if len(raw) == 32 * n:
                return raw
        except ValueError:
            pass
    try:
        return bytes.fromhex("".join([h[7:] if isinstance(h, str) and len(h) == 71 and h.startswith(_HASH_HEAD)
                                      else _ZEROS for h in hashes]))
    except ValueError:  # a bad hex digit somewhere: page by page
        return b"".join([_digest(h) for h in hashes])


_ZEROS = "0" * 64
_NO_STAT = (-1, 0, 0)  # a page without a stat signature


def _whole(v: object, top: int = 1 << 62) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= top


def _header(data: bytes) -> tuple[dict, memoryview]:
    if len(data) < _PREFIX.size:
        raise CatalogFileError("it is shorter than its 16-byte header (truncated)")
    magic, length, crc = _PREFIX.unpack_from(data)
    if magic[:6] != MAGIC[:6]:
        raise CatalogFileError("it is not a vaulteval chunk catalog (bad magic)")
    if magic != MAGIC:
        raise CatalogFileError(f"its format {magic[6:].hex()} is not {MAGIC[6:].hex()}")
    view = memoryview(data)
    if _PREFIX.size + length > len(data):
        raise CatalogFileError("its header runs past the end of the file (truncated)")
    if zlib.crc32(view[_PREFIX.size:]) != crc:
        raise CatalogFileError("it fails its checksum (truncated or corrupt)")
    try:
        header = json.loads(bytes(view[_PREFIX.size:_PREFIX.size + length]))
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("schema") != SCHEMA:
        raise CatalogFileError("its header is not a schema-4 catalog header")
    return header, view[_PREFIX.size + length:]


def read_segments(data: bytes) -> list[str]:
    """The segments a catalog file names (checked like ``decode``, without reading its pages)."""
    return _segments(_header(data)[0])


def _segments(header: dict) -> list[str]:
    listed = header.get("segments")
    if not (isinstance(listed, list) and all(isinstance(n, str) and SEGMENT_RE.match(n) for n in listed)
            and len(set(listed)) == len(listed)):
        raise CatalogFileError("its segment list is malformed")
    return listed


def decode(data: bytes) -> tuple[dict, Table]:
    """(settings, table) of a catalog file; CatalogFileError for anything else."""
    header, body = _header(data)
    segments = _segments(header)
    n, r, n_paths, n_addr = (header.get(k) for k in ("pages", "records", "paths", "addresses"))
    if not (_whole(n, _MAX_COUNT) and _whole(r, _MAX_COUNT) and _whole(n_paths) and _whole(n_addr)):
        raise CatalogFileError("its counts are malformed")
    if len(body) != n * 32 + n * 24 + n * 4 + r * 22 + n_paths + n_addr:
        raise CatalogFileError("its length does not match its counts")
    stats, at = _read_column("q", body, n * 32, 3 * n)
    chunks, at = _read_column("I", body, at, n)
    seg, at = _read_column("I", body, at, r)
    off, at = _read_column("Q", body, at, r)
    size, at = _read_column("I", body, at, r)
    crc, at = _read_column("I", body, at, r)
    nth, at = _read_column("H", body, at, r)
    paths, addresses = bytes(body[at:at + n_paths]), bytes(body[at + n_paths:])
    if sum(chunks) != r or (n and max(chunks) > _MAX_CHUNKS) or (r and (
            max(seg) >= len(segments) or min(off) < len(SEGMENT_MAGIC) or max(off) >= 1 << 50
            or max(size) > MAX_RECORD_BYTES or max(nth) >= MAX_BLOCK_RECORDS)):
        raise CatalogFileError("its record table is out of range")
    addr_list = addresses.decode("ascii").split("\0") if _ADDRESSES_RE.fullmatch(addresses) else []
    if len(addr_list) != n + 1 or addr_list.pop() != "" or any(a >= b for a, b in zip(addr_list, addr_list[1:])):
        raise CatalogFileError("its addresses are malformed or out of order")
    try:
        rels = paths.decode("utf-8").split("\0")
    except UnicodeDecodeError:
        raise CatalogFileError("its page paths are not UTF-8") from None
    if len(rels) != n + 1 or rels.pop() != "" or len(set(rels)) != n:
        raise CatalogFileError("its page paths are malformed")
    digests = bytes(body[:n * 32]).hex()
    hashes = [_HASH_HEAD + digests[k:k + 64] for k in range(0, 64 * n, 64)]
    for i in [i for i, h in enumerate(hashes) if h == _NO_HEX]:
        hashes[i] = ""
    it = iter(stats)
    sigs = [sig if sig[0] >= 0 and sig[1] >= 0 else None for sig in zip(it, it, it)]
    table = Table(rels, addr_list, hashes, sigs, chunks.tolist(), list(segments), seg, off, nth, size, crc)
    table.from_file = True
    settings = {key: header.get(key) for key in ("params", "prefix", "chunker")}
    return settings, table


_NO_HEX = _HASH_HEAD + "0" * 64
