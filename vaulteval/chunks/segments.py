"""The packed chunk store: chunk records framed in a few immutable segment files under ``<meta>/store/``.

Usage::

    with SegmentWriter(meta) as seg:                   # a writer, under the vault lock
        where = seg.append(record)                     # Location("store/seg-….vcs@16", size, crc)
    reader = StoreReader(vault.meta_dir)               # queries: one pinned descriptor per segment
    rec = reader.record("store/seg-….vcs@16", size, crc)    # the record (a dict), or None

A segment is ``MAGIC`` then frames: payload length (u32 LE), CRC-32 of the
payload (u32 LE), payload (the record as compact UTF-8 JSON; a ``contextualized_text`` that is
exactly ``prefix``, a blank line and ``raw_text`` is left out and marked
``"~ctx": 1``, and rebuilt when read). A record is
named by its segment and the frame's offset; the index row that names it also
holds the frame's size and CRC, so a truncated, bit-flipped or moved frame is
refused before it is parsed. A segment is written to a hidden temporary
sibling and renamed into place once complete; a published segment is never
changed again (new records go to a new segment), which is what lets a reader
keep the generation it opened while a writer publishes the next one.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import struct
import zlib

from vaulteval.vault.metadir import MetaDir, NotRegularFile, read_flags

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the retrieve path does not import typing
if TYPE_CHECKING:
    from pathlib import Path

STORE_DIR = "store"
MAGIC = b"VEVCHS\x00\x01"
FRAME = struct.Struct("<II")
MAX_RECORD_BYTES = 1 << 24  # a record holds at most 7,000 characters of chunk and 1,000 of prefix
SEGMENT_RE = re.compile(r"^seg-[0-9a-f]{16}\.vcs$")
_LOCATION_RE = re.compile(r"^store/(seg-[0-9a-f]{16}\.vcs)@([0-9]{1,15})$")
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


_PARSED: dict[str, tuple[str, int] | None] = {}
# Every location seen, parsed: a provision asks about each record's location several times (catalog check,
# segment scan, segment lists, index header). Bounded: emptied when it grows past this many.
_LOCATIONS: dict[str, tuple[str, int] | None] = {}
_LOCATIONS_MAX = 1 << 19


def parse_location(location: str) -> tuple[str, int] | None:
    """(segment file name, frame offset) of ``store/seg-<16 hex>.vcs@OFFSET``; None for anything else."""
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


def _parse_location(location: str) -> tuple[str, int] | None:
    head, at, tail = location.partition("@")
    if len(head) == 30 and at and 0 < len(tail) <= 15 and tail.isdigit() and tail.isascii():
        name = head[6:]
        known = _PARSED.get(name)
        if known is None:  # a segment name is checked once; offsets are plain digits
            known = _PARSED[name] = (name, 0) if _LOCATION_RE.match(f"{head}@0") else None
        if known is not None and int(tail) >= len(MAGIC):
            return name, int(tail)
    return None


def segment_of(location: str) -> str | None:
    parsed = parse_location(location)
    return parsed[0] if parsed else None


class Location(tuple):
    """Where one record lives: (``store/<segment>@<offset>``, frame size in bytes, CRC-32 of the payload)."""

    __slots__ = ()

    def __new__(cls, where: str, size: int, crc: int) -> "Location":
        return tuple.__new__(cls, (where, size, crc))

    where = property(lambda self: self[0])
    size = property(lambda self: self[1])
    crc = property(lambda self: self[2])


# A record's contextualized text is its prefix, a blank line and its chunk text: stored once, rebuilt on read.
_DERIVED = "contextualized_text"
_MARK = "~ctx"


def encode(record: dict) -> bytes:
    """The payload of one record: compact JSON, without a contextualized text that its other fields give."""
    import json

    prefix, raw = record.get("prefix"), record.get("raw_text")
    if (isinstance(prefix, str) and prefix and isinstance(raw, str) and _MARK not in record
            and record.get(_DERIVED) == f"{prefix}\n\n{raw}"):
        record = {k: v for k, v in record.items() if k != _DERIVED}
        record[_MARK] = 1
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _rebuilt(record: dict) -> dict | None:
    if record.pop(_MARK, None) != 1:
        return record
    prefix, raw = record.get("prefix"), record.get("raw_text")
    if _DERIVED in record or not isinstance(prefix, str) or not isinstance(raw, str):
        return None
    record[_DERIVED] = f"{prefix}\n\n{raw}"
    return record


def decode_frame(frame: bytes, size: int, crc: int) -> dict | None:
    """The record in one frame read at its location, when its length and CRC are the ones expected."""
    import json

    if len(frame) != size or size < FRAME.size or size - FRAME.size > MAX_RECORD_BYTES:
        return None
    length, stored = FRAME.unpack_from(frame)
    payload = frame[FRAME.size:]
    if length != len(payload) or stored != crc or zlib.crc32(payload) != crc:
        return None
    return decode_payload(payload)


def decode_payload(payload: bytes) -> dict | None:
    """The record a payload holds (its derived text rebuilt), or None when it is not one."""
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
        self.offset = len(MAGIC)
        self.count = 0
        # Each record appended (not compaction's copied payloads), by location: (frame size, CRC, record).
        self.written: dict[str, tuple[int, int, dict]] = {}

    def __enter__(self) -> "SegmentWriter":
        return self

    def append(self, record: dict) -> Location:
        payload = encode(record)
        where = self.append_payload(payload, zlib.crc32(payload))
        self.written[where[0]] = (where[1], where[2], record)
        return where

    def append_payload(self, payload: bytes, crc: int) -> Location:
        """A payload already framed elsewhere (compaction copies frames it has checked)."""
        frame = FRAME.pack(len(payload), crc) + payload
        where = Location(f"{STORE_DIR}/{self.name}@{self.offset}", len(frame), crc)
        self._parts.append(frame)
        self._buffered += len(frame)
        self.offset += len(frame)
        self.count += 1
        if self._buffered >= 1 << 20:
            self._flush()
        return where

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
    still reads the very bytes the index was built from.
    """

    def __init__(self, meta_dir: "Path | str"):
        self.meta_dir = str(meta_dir)
        self._fds: dict[str, int] = {}
        self._keys: dict[str, tuple] = {}

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
        if not stat.S_ISREG(st.st_mode) or os.pread(fd, len(MAGIC), 0) != MAGIC:
            os.close(fd)
            raise NotRegularFile(errno.EINVAL, "not a chunk segment", name)
        self._fds[name] = fd
        self._keys[name] = (st.st_dev, st.st_ino)
        return fd

    def pin(self, names: list[str]) -> None:
        """Open every named segment now (raises FileNotFoundError when one is already gone)."""
        for name in names:
            if SEGMENT_RE.match(name):
                self.open_segment(name)

    def frame(self, location: str, size: int) -> bytes | None:
        """The bytes of the frame at ``location``, or None when the location or its segment is unusable."""
        parsed = parse_location(location)
        if parsed is None or not 0 < size <= MAX_RECORD_BYTES + FRAME.size:
            return None
        try:
            return os.pread(self.open_segment(parsed[0]), size, parsed[1])
        except OSError:
            return None

    def record(self, location: str, size: int, crc: int) -> dict | None:
        """The record stored at ``location`` when its frame has the expected size and CRC, else None."""
        frame = self.frame(location, size)
        return None if frame is None else decode_frame(frame, size, crc)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def scan_segment(data: bytes) -> tuple[list[tuple[int, int, int]], str | None]:
    """Every frame of a whole segment as (offset, size, crc), and what is wrong with the rest (None when sound).

    Used by ``index verify`` / ``doctor --deep``: a truncated tail or a flipped bit is named here.
    """
    if data[: len(MAGIC)] != MAGIC:
        return [], "not a vaulteval chunk segment (bad magic)"
    out, pos = [], len(MAGIC)
    while pos < len(data):
        if pos + FRAME.size > len(data):
            return out, f"truncated frame header at byte {pos}"
        length, crc = FRAME.unpack_from(data, pos)
        end = pos + FRAME.size + length
        if length > MAX_RECORD_BYTES or end > len(data):
            return out, f"truncated record at byte {pos}"
        if zlib.crc32(data[pos + FRAME.size:end]) != crc:
            return out, f"record at byte {pos} fails its checksum"
        out.append((pos, end - pos, crc))
        pos = end
    return out, None
