"""Compressed blocks of chunk records: the body of a segment of format 2 (``vaulteval.chunks.segments``).

Usage::

    head_and_body = pack_block([payload, ...])                   # bytes to append to a segment
    payload = read_record(fd, block_offset, i, size, crc)        # one record's payload, or None
    held, used = inflate_blocks(data, start, budget)             # a warm reader's blocks, inflated once
    found, problem = scan_blocks(data, start, deep=True)         # every record of a whole segment

A block is a header (records ``n``, compressed length ``C``, raw length ``U``,
CRC-32 of what follows; four u32 LE), a table of ``n`` (length, CRC-32) pairs,
one per record (u32 LE each), then ``C`` bytes of raw DEFLATE (zlib, no
wrapper) of the ``n`` record payloads one after another (``U`` bytes). Records
are written to a block until it holds ``BLOCK_TARGET`` raw bytes, so a record
costs at most one block's inflation to read. Every size is checked before it
is used, inflation stops at the record's end (``max_length``), so a forged
block can neither ask for more memory than ``MAX_BLOCK_RAW`` nor make a
reader inflate past what it needs.
"""

from __future__ import annotations

import os
import struct
import zlib

HEAD = struct.Struct("<IIII")
ENTRY = 8  # (length, CRC-32) per record
# Raw bytes per block. Reading a record inflates its block up to the record's end, most of a new query's
# check of its candidates: 4 KiB costs a quarter of 16 KiB's inflation for a store a quarter larger.
BLOCK_TARGET = 4 * 1024
MAX_BLOCK_RECORDS = 4096
MAX_RECORD_BYTES = 1 << 24  # a record holds at most 7,000 characters of chunk and 1,000 of prefix
MAX_BLOCK_RAW = MAX_RECORD_BYTES + 16 * 1024  # the last record past the target of any writer so far (16 KiB, 4 KiB)
LEVEL = 6


def _max_compressed(raw: int) -> int:
    """DEFLATE never needs more than this for ``raw`` bytes (stored blocks: 5 bytes per 16 KiB, plus a margin)."""
    return raw + 5 * (raw // 16384 + 1) + 64


def pack_block(payloads: list[bytes]) -> bytes:
    """One block holding ``payloads`` (at least one), header included."""
    raw = b"".join(payloads)
    comp = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    data = comp.compress(raw) + comp.flush()
    table = struct.pack(f"<{2 * len(payloads)}I", *[v for p in payloads for v in (len(p), zlib.crc32(p))])
    return HEAD.pack(len(payloads), len(data), len(raw), zlib.crc32(data, zlib.crc32(table))) + table + data


def _head(buf, pos: int) -> tuple[int, int, int, int] | None:
    """(n, C, U, crc) of the block header at ``pos`` when its numbers are possible, else None."""
    n, c, u, crc = HEAD.unpack_from(buf, pos)
    if not 0 < n <= MAX_BLOCK_RECORDS or u > MAX_BLOCK_RAW or c > _max_compressed(u):
        return None
    return n, c, u, crc


def _table(body, n: int, u: int) -> tuple | None:
    table = struct.unpack_from(f"<{2 * n}I", body)
    return table if sum(table[0::2]) == u else None


def read_record(fd: int, offset: int, index: int, size: int, crc: int) -> bytes | None:
    """The payload of record ``index`` of the block at ``offset`` when its length and CRC are ``size`` and ``crc``
    (after the block's own CRC); None for anything truncated, damaged or not what the caller expects."""
    head = os.pread(fd, HEAD.size, offset)
    if len(head) != HEAD.size:
        return None
    parsed = _head(head, 0)
    if parsed is None or index >= parsed[0]:
        return None
    n, c, u, block_crc = parsed
    body = os.pread(fd, n * ENTRY + c, offset + HEAD.size)
    if len(body) != n * ENTRY + c or zlib.crc32(body) != block_crc:
        return None
    table = _table(body, n, u)
    if table is None or table[2 * index] != size or table[2 * index + 1] != crc:
        return None
    start = sum(table[0:2 * index:2])
    try:  # inflated only up to this record's end: a forged stream cannot grow past it
        raw = zlib.decompressobj(-15).decompress(memoryview(body)[n * ENTRY:], start + size)
    except zlib.error:
        return None
    payload = raw[start:]
    return payload if len(payload) == size and zlib.crc32(payload) == crc else None


def inflate_blocks(data, start: int, budget: int) -> tuple[dict[int, tuple], int]:
    """The blocks of ``data[start:]`` inflated, by offset, as ``(table, record starts, raw bytes)`` for
    ``held_record``, and the raw bytes they hold. Each passed ``read_record``'s block checks (numbers, CRC, table)
    and inflated to exactly its raw length; it stops at the first block that did not, or that would pass
    ``budget`` raw bytes (what is not held is read from the file, record by record, as before)."""
    held: dict[int, tuple] = {}
    used = 0
    for pos, problem, block in _walk(data, start):
        if problem is not None:
            break
        _, n, c, u, body, table = block
        raw = _inflate_whole(body[n * ENTRY:], n, c, u) if used + u <= budget else None
        if raw is None:
            break
        starts, at = [], 0
        for length in table[0::2]:
            starts.append(at)
            at += length
        held[pos] = (table, tuple(starts), raw)  # of untracked parts only: the collector stops scanning it
        used += u
    return held, used


def held_record(block: tuple, index: int, size: int, crc: int) -> bytes | None:
    """``read_record``'s answer for record ``index`` of a block ``inflate_blocks`` holds: the same checks of the
    record's length and CRC against the table and against what the caller expects."""
    table, starts, raw = block
    if index >= len(starts) or table[2 * index] != size or table[2 * index + 1] != crc:
        return None
    payload = raw[starts[index]:starts[index] + size]
    return payload if zlib.crc32(payload) == crc else None


def _inflate_whole(data, n: int, c: int, u: int) -> bytes | None:
    """The block's ``U`` raw bytes, when its stream inflates to exactly that many and ends there."""
    inflater = zlib.decompressobj(-15)
    try:
        raw = inflater.decompress(data, u + 1)
    except zlib.error:
        return None
    return raw if len(raw) == u and inflater.eof and not inflater.unused_data else None


def _walk(data, start: int):
    """The blocks of ``data[start:]`` in order, as ``(offset, None, (end, n, C, U, body, table))`` once a block's
    numbers, CRC and table passed; the first that does not ends the walk as ``(offset, problem, None)``."""
    pos = start
    while pos < len(data):
        if pos + HEAD.size > len(data):
            yield pos, f"truncated block header at byte {pos}", None
            return
        parsed = _head(data, pos)
        if parsed is None:
            yield pos, f"impossible block header at byte {pos}", None
            return
        n, c, u, crc = parsed
        body_start = pos + HEAD.size
        end = body_start + n * ENTRY + c
        if end > len(data):
            yield pos, f"truncated block at byte {pos}", None
            return
        body = memoryview(data)[body_start:end]
        if zlib.crc32(body) != crc:
            yield pos, f"block at byte {pos} fails its checksum", None
            return
        table = _table(body, n, u)
        if table is None:
            yield pos, f"block at byte {pos} has a record table that does not add up", None
            return
        yield pos, None, (end, n, c, u, body, table)
        pos = end


def scan_blocks(data, start: int, *, deep: bool) -> tuple[list[tuple[tuple[int, int], int, int]], str | None]:
    """Every record of the blocks in ``data[start:]`` as ((block offset, index), length, CRC), and what is wrong
    with the rest (None when sound). ``deep`` inflates every block and checks each record's CRC too (a provision,
    ``index verify``, ``doctor --deep``); otherwise only the block CRCs and tables are checked."""
    out: list[tuple[tuple[int, int], int, int]] = []
    for pos, problem, block in _walk(data, start):
        if problem is not None:
            return out, problem
        _, n, c, u, body, table = block
        if deep:
            raw = _inflate_whole(body[n * ENTRY:], n, c, u)
            if raw is None:
                return out, f"block at byte {pos} does not inflate to its {u} bytes"
            at, whole = 0, memoryview(raw)  # slices of a view: no copy of each record
            for i in range(n):
                if zlib.crc32(whole[at:at + table[2 * i]]) != table[2 * i + 1]:
                    return out, f"record {i} of the block at byte {pos} fails its checksum"
                at += table[2 * i]
        out.extend(((pos, i), table[2 * i], table[2 * i + 1]) for i in range(n))
    return out, None


def block_payloads(data, pos: int) -> list[bytes] | None:
    """Every record payload of the block at ``pos`` of a segment already scanned (compaction, carried records)."""
    parsed = _head(data, pos)
    if parsed is None:
        return None
    n, c, u, _ = parsed
    body = memoryview(data)[pos + HEAD.size:pos + HEAD.size + n * ENTRY + c]
    table = _table(body, n, u)
    raw = _inflate_whole(body[n * ENTRY:], n, c, u) if table is not None else None
    if raw is None:
        return None
    out, at = [], 0
    for i in range(n):
        out.append(raw[at:at + table[2 * i]])
        at += table[2 * i]
    return out
