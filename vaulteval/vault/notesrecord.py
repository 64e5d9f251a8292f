"""The notes folder ``provision --notes-dir DIR`` chose, remembered in vaulteval's derived state.

Usage::

    recorded = read_notes_record(root)                 # "wiki", "" (the vault root) or None when none is recorded
    write_notes_record(meta, "notes")                  # provision, under the vault lock

The record is ``.vault-meta/vaulteval/notes-folder.json``; the vault's own
files (``.vaulteval.json`` included) are never written. It is read from the
vault root one folder at a time without following a symlink, and every byte
of it is input: a malformed record is one usage error naming the file and the
command that writes it again.
"""

from __future__ import annotations

import json
import os

from vaulteval.errors import UnsafeMetaPath, UsageError
from vaulteval.vault.metadir import META_NAME, META_REL, OWN_NAME, NotRegularFile, open_dir, read_regular

RECORD_NAME = "notes-folder.json"
RECORD_REL = f"{META_REL}/{RECORD_NAME}"
SCHEMA = "vaulteval.notes-folder.v1"
_MAX_BYTES = 64 * 1024


class BadNotesRecord(UsageError):
    """The recorded notes folder cannot be read back."""


def read_notes_record(root: os.PathLike[str] | str) -> str | None:
    """The recorded notes folder relative to ``root`` ("" for the root), or None when there is no record."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    opened = [fd]
    try:
        for name in (META_NAME, OWN_NAME):
            try:
                opened.append(open_dir(opened[-1], name, name))
            except (OSError, UnsafeMetaPath):
                # Missing, or a symlink that every writer refuses anyway: no record to follow.
                return None
        try:
            raw = read_regular(RECORD_NAME, dir_fd=opened[-1])
        except FileNotFoundError:
            return None
        except (NotRegularFile, OSError) as exc:
            raise _bad(root, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    finally:
        for f in opened:
            os.close(f)
    return _parse(root, raw)


def _parse(root: os.PathLike[str] | str, raw: bytes) -> str:
    if len(raw) > _MAX_BYTES:
        raise _bad(root, "is too large")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _bad(root, "is not UTF-8 JSON") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("notes_dir"), str):
        raise _bad(root, f"is not a {SCHEMA} record")
    value = data["notes_dir"]
    return "" if value in (".", "") else value


def _bad(root: os.PathLike[str] | str, what: str) -> BadNotesRecord:
    return BadNotesRecord(f"{os.path.join(os.fspath(root), RECORD_REL)} {what}; record the notes folder again with "
                          f"vaulteval provision --vault {os.fspath(root)} --notes-dir DIR --rebuild")


def write_notes_record(meta, notes_rel: str) -> None:
    """Publish the record atomically through the meta folder the vault lock pinned (``MetaDir``)."""
    data = {"schema": SCHEMA, "notes_dir": notes_rel or "."}
    meta.write_bytes(RECORD_NAME, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8"),
                     durable=True)
