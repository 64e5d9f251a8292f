"""The incremental ``prefix`` run over the packed store: plan every page, write what changed, compact, publish.

Usage::

    report = run_prefix(vault, rebuild=False, peek=False, params=ChunkParams())   # opens the meta folder itself

- A page whose stat signature (size, mtime_ns, inode) is the one in the catalog,
  and which was not modified within ``RACY_NS`` of the catalog's writing, is
  not even read (git's rule); otherwise it is read and hashed, and re-chunked
  only when its hash changed.
- A record equal to the stored one in every field but ``created_at`` keeps its
  location; every other record is appended to one new segment.
- When the dead share of the segments in use passes ``COMPACT_DEAD_SHARE`` (or
  they are more than ``MAX_SEGMENTS``, or one is damaged anywhere), every live
  record is copied into the new segment and the old ones fall out of use.
- The new segment is published before the catalog that names it; the index in
  service keeps naming the old segments, which stay until the next writer finds
  them named by neither (``vaulteval.chunks.storegc``).
"""

from __future__ import annotations

import logging
from operator import itemgetter
from typing import TYPE_CHECKING

from vaulteval.chunks import chunking, obsidian
from vaulteval.chunks.catalog import ChunkParams, load_table, prefix_key, settings_of, write_catalog, written_ns
from vaulteval.chunks.catalogfile import Table
from vaulteval.chunks.segcheck import Segments
from vaulteval.chunks.segments import STORE_DIR, SegmentWriter, decode_payload, parse_location
from vaulteval.chunks.store import PrefixReport, _duplicate, _record_intact, build_records, note_signature, \
    progress_bar, read_note
from vaulteval.errors import PageMissing
from vaulteval.vault.metadir import MetaDir
from vaulteval.vault.testhooks import pause_point

if TYPE_CHECKING:
    from collections.abc import Callable

    from vaulteval.vault.vault import Page, Vault

log = logging.getLogger(__name__)

RACY_NS = 2_000_000_000  # a note modified this close to the catalog's writing is re-hashed even when its stat agrees
COMPACT_DEAD_SHARE = 0.3
MAX_SEGMENTS = 8
def prefix_pages(vault: "Vault", meta: "MetaDir | None", *, page, rebuild, peek, params: ChunkParams,
                 prefix_settings, page_bytes, pages, distrust: frozenset[str] = frozenset(),
                 signatures: dict | None = None, on_record=None) -> PrefixReport:
    prefixer = None
    report = PrefixReport(peek=peek)
    if prefix_settings is not None and prefix_settings.tier != "synthetic":
        from vaulteval.chunks.prefix_llm import PrefixGenerator

        prefixer = PrefixGenerator(prefix_settings)
        report.tier = prefixer.tier
        # A preview never calls a provider: no page text leaves the machine on --peek.
        if prefixer.tier == "synthetic" or peek:
            prefixer = None

    all_pages = list(pages) if pages is not None else list(vault.iter_pages())
    selected = _select(vault, all_pages, page)
    key = prefix_key(report.tier, prefix_settings)
    stored = load_table(meta, params, key)
    maps = Segments(meta, stored.segments)
    since = written_ns(meta)
    index = {} if rebuild else stored.index

    # Plan every page first so a conflict aborts before anything is written.
    plans: list[tuple[str, object, str, str, list | None, int | None]] = []
    owner: dict[str, str] = {}
    note_limit = chunking.max_note_bytes()
    sound = maps.sound_pages(stored)
    # Locals for the loop over every note (most of them unchanged): no attribute lookups per note.
    stats, hashes, addresses, page_hashes = stored.stats, stored.hashes, stored.addresses, report.page_hashes
    settled = since - RACY_NS  # a note last modified before this is trusted by its stat signature
    for entry in progress_bar(selected, len(selected), "scan"):
        rel = entry.rel
        i = index.get(rel)
        if i is not None and (not sound[i] or rel in distrust):
            i = None
        sig = signatures.get(entry.abspath) if signatures else None
        if sig is None:
            sig = note_signature(entry)
        if i is not None and sig is not None and stats[i] == sig and sig[1] < settled and hashes[i]:
            plan = (rel, None, addresses[i], hashes[i], sig, i)
        else:
            raw = page_bytes.get(entry.rel) if page_bytes is not None else read_note(entry, sig)
            if raw is None:
                continue  # not a regular file, or unreadable: skipped with a warning
            report.page_bytes[entry.rel] = raw
            page_hash = chunking.sha256_bytes(raw)  # of every byte, so doctor's check of the whole note holds
            if i is not None and stored.hashes[i] == page_hash:
                plan = (entry.rel, None, stored.addresses[i], page_hash, sig, i)
            else:
                parsed = chunking.parse_page(chunking.indexable_bytes(raw, entry.rel, note_limit), entry.rel)
                if len(raw) <= note_limit:  # the whole note: what the field index would parse again
                    report.parsed[entry.rel] = parsed
                plan = (entry.rel, parsed, parsed.address or chunking.synthetic_address(entry.rel), page_hash,
                        sig, None)
        address = plan[2]
        if address in owner:
            raise _duplicate(address, owner[address], rel)
        owner[address] = rel
        plans.append(plan)
        page_hashes[rel] = plan[3]
    kept: list[tuple] = []  # a single-page run keeps every other page's entry; a full run rebuilds the catalog
    if page is not None:
        for i, rel in enumerate(stored.rels):
            if rel == page:
                continue
            # A single-page run must still not collide with pages already in the catalog.
            if stored.addresses[i] in owner and owner[stored.addresses[i]] != rel:
                raise _duplicate(stored.addresses[i], rel, owner[stored.addresses[i]])
            kept.append((rel, stored.addresses[i], stored.hashes[i], stored.stats[i], stored.chunks[i], (stored, i)))

    report.pages_seen = len(plans)
    if page is None:
        gone = [i for i, rel in enumerate(stored.rels) if rel not in report.page_hashes]
        report.pages_removed = len(gone)
        report.chunks_removed += sum(stored.chunks[i] for i in gone)
    writer = None if peek or meta is None else SegmentWriter(meta)
    try:
        rows = kept + _write_pages(plans, stored, report, writer, maps, params, prefixer, rebuild, on_record)
        rows.sort(key=itemgetter(1))  # by address: the catalog's order, and the index's document order
        if peek:
            return report
        rows, report.chunks_compacted = _maybe_compact(rows, writer, maps)
        if writer.publish() is not None:
            report.written = writer.written
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        if writer is not None:
            writer.close()
    if page is None and _same_table(stored, rows):
        written = stored  # the file in place holds exactly these rows: writing it again would change nothing
    else:
        written = write_catalog(meta, settings_of(params, key), rows)  # the table a reader of the file gets
    pause_point("catalog-written")
    report.addresses = dict(zip(written.addresses, written.rels))
    report.segments = set(written.segments)
    if page is None:
        report.chunk_listing = written.listing()
    return report


def run_prefix(
    vault: "Vault",
    *,
    page: str | None = None,
    rebuild: bool = False,
    peek: bool = False,
    params: ChunkParams = ChunkParams(),
    prefix_settings=None,
    page_bytes: dict[str, bytes] | None = None,
    pages: list["Page"] | None = None,
    meta: MetaDir | None = None,
    distrust: frozenset[str] = frozenset(),
    signatures: dict[str, tuple[int, int, int]] | None = None,
    on_record: "Callable[[dict], None] | None" = None,
) -> PrefixReport:
    """Chunk pages into records of the packed store under the meta dir; the caller holds the vault lock unless ``peek``.

    New and changed records go to one new segment, published before the
    catalog that names them; published segments are never changed, so the
    index in service keeps reading the records it was built from. ``meta`` is
    the opened meta folder (``vault_lock`` yields it); every change goes through it.
    ``distrust`` names pages whose stored records the index build refused: they are re-chunked.
    ``signatures``: each note's (size, mtime_ns, inode) by absolute path, as the walk that listed ``pages`` saw it.
    ``on_record`` is called with each record written (provision hands ``auto``'s Korean texts to a helper early).
    """
    own = None
    if meta is None:
        try:
            own = meta = MetaDir.open(vault, create=not peek)
            if not peek:
                meta.check_tree()
        except FileNotFoundError:
            meta = None
    try:
        return prefix_pages(vault, meta, page=page, rebuild=rebuild, peek=peek, params=params,
                            prefix_settings=prefix_settings, page_bytes=page_bytes, pages=pages, distrust=distrust,
                            signatures=signatures, on_record=on_record)
    finally:
        if own is not None:
            own.close()


def _select(vault: "Vault", all_pages: list["Page"], page: str | None) -> list["Page"]:
    if page is None:
        return all_pages
    target = vault.page_path(page)
    if not target.is_file():
        raise PageMissing(f"page {page} does not exist under {vault.notes_label}; check the path")
    selected = [p for p in all_pages if p.rel == page.replace("\\", "/")]
    if not selected:
        raise PageMissing(f"page {page} is not a note vaulteval can read (a .md file under {vault.notes_label}, "
                          "not hidden or excluded)")
    return selected


def _write_pages(plans, stored: Table, report, writer, maps, params, prefixer, rebuild, on_record=None) -> list[tuple]:
    """The new catalog's rows of the planned pages; new and changed records appended to ``writer``."""
    work = [p for p in plans if p[1] is not None]
    report.pages_skipped = len(plans) - len(work)
    rows = [(rel, address, page_hash, sig, stored.chunks[i], (stored, i))
            for rel, parsed, address, page_hash, sig, i in plans if parsed is None]
    for rel, parsed, address, page_hash, sig, _ in progress_bar(work, len(work), "prefix"):
        records = build_records(parsed, address, page_hash, params, prefixer)
        old = stored.index.get(rel) if not rebuild else None
        existing = _stored_records(stored, old, maps) if old is not None else {}
        locations = []
        changed = 0
        for rec in records:
            prev = existing.get(rec["chunk_index"])
            # Every field but the timestamp: an address, index or prefix edited by hand is rewritten too.
            if prev is not None and _same(prev[0], rec):
                locations.append(prev[1])
                continue
            changed += 1
            locations.append(writer.append(rec) if writer is not None else None)
            if on_record is not None:
                on_record(rec)
            pause_point("chunk-written")
        extra = len(set(existing) - {r["chunk_index"] for r in records})
        report.chunks_written += changed
        report.chunks_removed += extra + (
            len(existing) if old is not None and stored.addresses[old] != address else 0)
        if changed or extra:
            report.pages_changed += 1
            report.changed_pages.append(rel)
        if not records:
            report.pages_empty += 1
        for rec in records:
            report.prefix_sources[rec["prefix_source"]] = report.prefix_sources.get(rec["prefix_source"], 0) + 1
        if writer is not None:
            rows.append((rel, address, page_hash, sig, len(records), [list(loc) for loc in locations]))
    return rows


def _same_table(stored: Table, rows: list[tuple]) -> bool:
    """Whether ``rows`` are the loaded catalog file's pages, each copied whole in its place with the stat it
    records (so ``write_catalog`` would write the same bytes). Not rewriting it leaves the file's mtime, the
    catalog's writing time, where it was: a note modified close to it is hashed again, never skipped."""
    if not stored.from_file or len(rows) != len(stored) or len(set(stored.seg)) != len(stored.segments):
        return False
    stats = stored.stats
    for k, row in enumerate(rows):
        copied = row[5]
        if not (isinstance(copied, tuple) and copied[0] is stored and copied[1] == k and row[3] == stats[k]):
            return False
    return True


def _same(old: dict, new: dict) -> bool:
    return ({k: v for k, v in old.items() if k != "created_at"} == {k: v for k, v in new.items() if k != "created_at"}
            and _record_intact(old))


def _stored_records(stored: Table, i: int, maps: Segments) -> dict[int, tuple[dict, list]]:
    out = {}
    for where, size, crc in stored.records(i):
        payload = maps.payload(where, size, crc)
        rec = decode_payload(payload) if payload is not None else None
        idx = rec.get("chunk_index") if isinstance(rec, dict) else None
        if isinstance(idx, int) and not isinstance(idx, bool):
            out[idx] = (rec, (where, size, crc))
    return out


def _live_bytes(table: Table, pages: list[int]) -> dict[str, int]:
    """Payload bytes per segment of the records of ``pages`` of a loaded catalog (summed in numpy: a provision
    copies nearly every page)."""
    import numpy as np

    counts = np.array(table.chunks, dtype=np.int64)[pages]
    first = np.array(table.first, dtype=np.int64)[pages]
    ends = np.cumsum(counts)
    records = np.repeat(first - (ends - counts), counts) + np.arange(int(ends[-1]) if ends.size else 0)
    seg = np.frombuffer(table.seg, dtype=np.uint32)[records]
    size = np.frombuffer(table.size, dtype=np.uint32)[records].astype(np.int64)
    present = np.bincount(seg, minlength=len(table.segments))
    total = np.bincount(seg, weights=size, minlength=len(table.segments))  # float64: exact below 2**53 bytes
    return {table.segments[s]: int(total[s]) for s in np.flatnonzero(present).tolist()}


def _maybe_compact(rows: list[tuple], writer: SegmentWriter, maps: Segments) -> tuple[list[tuple], int]:
    """Copy every live record out of old segments when too much of them is dead; returns the rows (their
    records moved when copied) and the records copied."""
    own = f"{STORE_DIR}/{writer.name}@"
    live: dict[str, int] = {}
    copied_pages: dict[int, tuple[Table, list[int]]] = {}  # pages copied from a loaded catalog, per table
    for row in rows:
        records = row[5]
        if isinstance(records, tuple):  # a page copied from the catalog: its numbers, no location text
            copied_pages.setdefault(id(records[0]), (records[0], []))[1].append(records[1])
            continue
        for where, size, _ in records:
            if not where.startswith(own):
                name = parse_location(where)[0]
                live[name] = live.get(name, 0) + size
    for table, pages in copied_pages.values():
        for name, size in _live_bytes(table, pages).items():
            live[name] = live.get(name, 0) + size
    if not live:
        return rows, 0
    # Record bytes (before compression), as the scan found them: live and dead are counted alike.
    total = sum(size for name in live for _, size, _ in maps.frames.get(name, ()))
    dead_share = 1 - sum(live.values()) / total if total else 0.0
    # A segment damaged outside the live records (a cut tail, a flipped bit in a dead one) is copied out too.
    damaged = bool(maps.damaged & set(live))
    if dead_share <= COMPACT_DEAD_SHARE and len(live) + 1 <= MAX_SEGMENTS and not damaged:
        return rows, 0
    copied = 0
    out = []
    copies = []  # (segment, place in it, row, record) of every record to copy
    for r, (rel, address, page_hash, sig, count, records) in enumerate(rows):
        if isinstance(records, tuple):
            records = records[0].records(records[1])
        moved = [list(rec) for rec in records]
        for k, (where, _, _) in enumerate(moved):
            if not where.startswith(own):
                parsed = parse_location(where)
                copies.append((*(parsed if parsed is not None else ("", (0, 0))), r, k))
        out.append((rel, address, page_hash, sig, count, moved))
    # Copied in the order they sit in the old segments, so each block is inflated once (the rows' order,
    # by address, visits the blocks at random).
    copies.sort()
    for _, _, r, k in copies:
        where, size, crc = out[r][5][k]
        payload = maps.payload(where, size, crc)
        if payload is None:  # checked when planned; a segment changed under the lock is not copied
            raise OSError(f"chunk record {where} changed while compacting")
        out[r][5][k] = list(writer.append_payload(bytes(payload), crc))
        copied += 1
        pause_point("record-compacted")
    return out, copied
