"""Reading one note's bytes safely: confined to the notes folder, bounded in size, decoded like the chunker.

Usage: ``raw, truncated = read_note_bytes(vault, "wiki/howto/Descaling.md")``
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaulteval.errors import PageMissing
from vaulteval.vault.paths import open_confined

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

MAX_NOTE_BYTES = 4 << 20  # a note larger than this is read up to here and flagged as truncated


def read_note_bytes(vault: "Vault", rel: str, limit: int = MAX_NOTE_BYTES) -> tuple[bytes, bool]:
    """The first ``limit`` bytes of a note and whether there were more; PathEscape / PageMissing as ``note_path``."""
    vault.note_path(rel)
    try:
        with open_confined(vault.notes_dir, rel, strip=vault.notes_strip) as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise PageMissing(f"cannot read {rel}: {exc.strerror}") from None
    return data[:limit], len(data) > limit
