"""The packed chunk store: chunk records in compressed blocks of a few immutable segment files under ``<meta>/store/``.

Usage::

    with SegmentWriter(meta) as seg:                   # a writer, under the vault lock
        where = seg.append(record)                     # Location("store/seg-….vcs@8#0", size, crc)
    reader = StoreReader(vault.meta_dir)               # queries: one pinned descriptor per segment
    rec = reader.record("store/seg-….vcs@8#0", size, crc)   # the record (a dict), or None

A segment (format 2) is ``MAGIC`` then blocks of records (``vaulteval.chunks.blocks``):
each record's payload is the record as compact UTF-8 JSON without the fields its
other fields give (a ``contextualized_text`` that is exactly ``prefix``, a blank
line and ``raw_text``; a ``chunk_id`` that is ``<page_address>:<chunk_index>``; a
``char_count`` that is the length of ``raw_text``; a ``body_hash`` that is the
``sha256:`` of ``raw_text``), each marked and rebuilt when read. A field that is
not what the others give is stored as written (and refused where it is checked).
A record is named by its segment, its block's offset and its number in the
block; the index row that names it also holds the payload's length and
CRC-32, so a truncated, bit-flipped or moved record is refused before it is
parsed. A segment is written to a hidden temporary sibling and renamed into
place once complete; a published segment is never changed again (new records
go to a new segment), which is what lets a reader keep the generation it opened
while a writer publishes the next one. A segment of another format is not read:
its records count as missing, and ``provision`` writes its pages' records again.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import zlib
from typing import TYPE_CHECKING

from vaulteval.chunks.blocks import BLOCK_TARGET, MAX_BLOCK_RECORDS, MAX_RECORD_BYTES, held_record, \
    inflate_blocks, pack_block, read_record
from vaulteval.vault.metadir import MetaDir, NotRegularFile, read_flags

if TYPE_CHECKING:
    from pathlib import Path

STORE_DIR = "store"
MAGIC = b"VEVCHS\x00\x02"
SEGMENT_RE = re.compile(r"^seg-[0-9a-f]{16}\.vcs$")
# A reader kept open for many queries holds its store's blocks inflated, up to this many bytes (the tldr
# vault's 38k pages: 34 MB); past it, records are read and inflated when served.
HOLD_BYTES = 64 << 20
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


# Every location seen, parsed: a provision asks about each record's location several times (catalog check,
# segment scan, segment lists, index header). Bounded: emptied when it grows past this many.
_LOCATIONS: dict[str, "tuple[str, tuple[int, int]] | None"] = {}
_LOCATIONS_MAX = 1 << 19


def parse_location(location: str) -> "tuple[str, tuple[int, int]] | None":
    """(segment file name, (block offset, record number)) of a location ``store/seg-<16 hex>.vcs@OFFSET#N``;
    None for anything else."""
    try:
        return _LOCATIONS[location]
    except KeyError:
        pass
    except TypeError:  # not hashable: not a location
        return None
    if len(_LOCATIONS) >= _LOCATIONS_MAX:
        _LOCATIONS.clear()
    parsed = _LOCATIONS[location] = _parse_location(location) if isinstance(location, str) else None
    return parsed


_LOCATION = re.compile(r"store/(seg-[0-9a-f]{16}\.vcs)@([0-9]{1,15})#([0-9]{1,4})")


def _parse_location(location: str) -> "tuple[str, tuple[int, int]] | None":
    match = _LOCATION.fullmatch(location)
    if match is None or int(match[2]) < len(MAGIC):
        return None
    return (match[1], (int(match[2]), int(match[3]))) if int(match[3]) < MAX_BLOCK_RECORDS else None


def segment_of(location: str) -> str | None:
    parsed = parse_location(location)
    return parsed[0] if parsed else None


class Location(tuple):
    """Where one record lives: (``store/<segment>@<block>#<n>``, payload length, CRC-32 of the payload)."""

    __slots__ = ()

    def __new__(cls, where: str, size: int, crc: int) -> "Location":
        return tuple.__new__(cls, (where, size, crc))

    where = property(lambda self: self[0])
    size = property(lambda self: self[1])
    crc = property(lambda self: self[2])


# Fields other fields give: left out of the payload, replaced by a mark, rebuilt on read.
_DERIVED = "contextualized_text"
_MARK = "~ctx"
_ID_MARK, _COUNT_MARK, _HASH_MARK = "~id", "~n", "~bh"
_MARKS = (_MARK, _ID_MARK, _COUNT_MARK, _HASH_MARK)


def _body_hash(raw: str) -> str:
    from vaulteval.vault.digest import text_sha256  # no hashlib (OpenSSL) import on a CLI query

    return text_sha256(raw)


def encode(record: dict) -> bytes:
    """The payload of one record: compact JSON, without the fields its other fields give."""
    import json

    prefix, raw = record.get("prefix"), record.get("raw_text")
    address, idx = record.get("page_address"), record.get("chunk_index")
    out = dict(record)
    if not (set(_MARKS) & set(record)):
        if isinstance(prefix, str) and prefix and isinstance(raw, str) and record.get(_DERIVED) == f"{prefix}\n\n{raw}":
            del out[_DERIVED]
            out[_MARK] = 1
        if (isinstance(address, str) and type(idx) is int and "chunk_id" in record
                and record["chunk_id"] == f"{address}:{idx}"):
            del out["chunk_id"]
            out[_ID_MARK] = 1
        if isinstance(raw, str) and "char_count" in record and type(record["char_count"]) is int \
                and record["char_count"] == len(raw):
            del out["char_count"]
            out[_COUNT_MARK] = 1
        if isinstance(raw, str) and "body_hash" in record and record["body_hash"] == _body_hash(raw):
            del out["body_hash"]
            out[_HASH_MARK] = 1
    return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _rebuilt(record: dict) -> dict | None:
    marks = tuple(record.pop(mark, None) for mark in _MARKS)
    if marks == (None, None, None, None):
        return record
    if any(m not in (None, 1) for m in marks):
        return None
    prefix, raw = record.get("prefix"), record.get("raw_text")
    if marks[0] is not None:
        if _DERIVED in record or not isinstance(prefix, str) or not isinstance(raw, str):
            return None
        record[_DERIVED] = f"{prefix}\n\n{raw}"
    if marks[1] is not None:
        address, idx = record.get("page_address"), record.get("chunk_index")
        if "chunk_id" in record or not isinstance(address, str) or type(idx) is not int:
            return None
        record["chunk_id"] = f"{address}:{idx}"
    if marks[2] is not None:
        if "char_count" in record or not isinstance(raw, str):
            return None
        record["char_count"] = len(raw)
    if marks[3] is not None:
        if "body_hash" in record or not isinstance(raw, str):
            return None
        record["body_hash"] = _body_hash(raw)
    return record


def decode_payload(payload: bytes) -> dict | None:
    """The record a payload holds (its derived fields rebuilt), or None when it is not one."""
    import json

    try:
        record = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    return _rebuilt(record) if isinstance(record, dict) else None


class SegmentWriter:
    """Appends records to one new segment; publishes it on a clean exit, removes it on any failure."""

    def __init__(self, meta: MetaDir):
        import secrets

        self._folder = meta.sub(STORE_DIR, create=True)
        self.name = f"seg-{secrets.token_hex(8)}.vcs"
        self._tmp = f".{self.name}.{os.getpid()}.tmp"
        self._fd = -1
        self._parts: list[bytes] = [MAGIC]
        self._buffered = len(MAGIC)
        self.offset = len(MAGIC)  # where the block being filled will start
        self._block: list[bytes] = []
        self._block_raw = 0
        self.count = 0
        # Each record appended (not compaction's copied payloads), by location: (payload length, CRC, record).
        self.written: dict[str, tuple[int, int, dict]] = {}

    def __enter__(self) -> "SegmentWriter":
        return self

    def append(self, record: dict) -> Location:
        payload = encode(record)
        where = self.append_payload(payload, zlib.crc32(payload))
        self.written[where[0]] = (where[1], where[2], record)
        return where

    def append_payload(self, payload: bytes, crc: int) -> Location:
        """A payload already checked elsewhere (compaction copies records it has checked)."""
        if len(payload) > MAX_RECORD_BYTES:
            raise ValueError(f"a chunk record of {len(payload)} bytes is over the store's limit")
        where = Location(f"{STORE_DIR}/{self.name}@{self.offset}#{len(self._block)}", len(payload), crc)
        self._block.append(payload)
        self._block_raw += len(payload)
        self.count += 1
        if self._block_raw >= BLOCK_TARGET or len(self._block) >= MAX_BLOCK_RECORDS:
            self._end_block()
        return where

    def _end_block(self) -> None:
        if not self._block:
            return
        block = pack_block(self._block)
        self._parts.append(block)
        self._buffered += len(block)
        self.offset += len(block)
        self._block, self._block_raw = [], 0
        if self._buffered >= 1 << 20:
            self._flush()

    def _flush(self) -> None:
        if self._fd < 0:
            self._folder._check()
            self._fd = os.open(self._tmp, _WRITE_FLAGS, 0o644, dir_fd=self._folder.fd)
        view = memoryview(b"".join(self._parts))
        while view:
            view = view[os.write(self._fd, view):]
        self._parts, self._buffered = [], 0

    def publish(self) -> str | None:
        """Make the segment durable and visible under its name; None when nothing was appended."""
        from vaulteval.vault.testhooks import pause_point

        if self.count == 0:
            self.abort()
            return None
        self._end_block()
        self._flush()
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        pause_point("segment-written")
        self._folder.replace(self._tmp, self.name)
        os.fsync(self._folder.fd)
        return self.name

    def abort(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        try:
            os.unlink(self._tmp, dir_fd=self._folder.fd)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        self._folder.close()

    def __exit__(self, exc_type, *rest) -> None:
        try:
            if exc_type is None:
                self.publish()
            else:
                self.abort()
        finally:
            self.close()


class StoreReader:
    """Reads records by location; each segment is opened once (no symlink, regular files only) and kept open.

    Keeping the descriptor is what pins a generation: a writer may remove a
    segment once no published index names it, and a reader that opened it
    still reads the very bytes the index was built from. A reader kept open
    for many queries may ``hold`` those bytes' blocks inflated instead.
    """

    def __init__(self, meta_dir: "Path | str"):
        self.meta_dir = str(meta_dir)
        self._fds: dict[str, int] = {}
        self._keys: dict[str, tuple] = {}
        self._held: dict[tuple[str, int], tuple] = {}  # (segment, block offset) -> the block inflated
        self._held_segments: set[str] = set()
        self.held_bytes = 0

    def open_segment(self, name: str) -> int:
        fd = self._fds.get(name)
        if fd is not None:
            return fd
        dir_fd = os.open(os.path.join(self.meta_dir, STORE_DIR), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                         | getattr(os, "O_CLOEXEC", 0))
        try:
            fd = os.open(name, read_flags(), dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        st = os.fstat(fd)
        magic = os.pread(fd, len(MAGIC), 0) if stat.S_ISREG(st.st_mode) else b""
        if magic != MAGIC:  # not a segment, or one of another format: its records count as missing
            os.close(fd)
            raise NotRegularFile(errno.EINVAL, "not a chunk segment of this format", name)
        self._fds[name] = fd
        self._keys[name] = (st.st_dev, st.st_ino)
        return fd

    def pin(self, names: list[str]) -> None:
        """Open every named segment now (raises FileNotFoundError when one is already gone)."""
        for name in names:
            if SEGMENT_RE.match(name):
                self.open_segment(name)

    def hold(self, budget: int) -> None:
        """Inflate the open segments' blocks once and keep them, up to ``budget`` raw bytes in all: a record is
        then a slice of memory with the same checks (``blocks.inflate_blocks``). Segments are immutable once
        published, so these are the bytes the records would be read from."""
        for name, fd in list(self._fds.items()):  # another thread's query may open a segment meanwhile
            try:
                size = os.fstat(fd).st_size
                if name in self._held_segments or size > budget - self.held_bytes:
                    continue
                held, used = inflate_blocks(os.pread(fd, size, 0), len(MAGIC), budget - self.held_bytes)
            except OSError:
                continue  # its records are read from the file, each checked when served
            self._held.update(((name, offset), block) for offset, block in held.items())
            self._held_segments.add(name)
            self.held_bytes += used

    def payload(self, location: str, size: int, crc: int) -> bytes | None:
        """The payload at ``location`` when it has the expected length and CRC, else None (the location, its
        segment or its block is unusable)."""
        parsed = parse_location(location)
        if parsed is None:
            return None
        name, key = parsed
        if not 0 <= size <= MAX_RECORD_BYTES:
            return None
        try:
            fd = self.open_segment(name)
            block = self._held.get((name, key[0]))
            return read_record(fd, key[0], key[1], size, crc) if block is None else \
                held_record(block, key[1], size, crc)
        except OSError:
            return None

    def record(self, location: str, size: int, crc: int) -> dict | None:
        """The record stored at ``location`` when its payload has the expected length and CRC, else None."""
        payload = self.payload(location, size, crc)
        return None if payload is None else decode_payload(payload)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
