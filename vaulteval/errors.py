"""Named errors, each carrying the exit code the CLI reports for it.

Usage: ``raise NotProvisioned("no index", rebuild="vaulteval provision --vault V")``
"""

from __future__ import annotations

# Exit codes are part of the CLI contract (docs/exit-codes.md); keep them stable.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAGE_MISSING = 3
EXIT_NOT_PROVISIONED = 10
EXIT_BUSY = 11
EXIT_CONFLICT = 12


class VaultevalError(Exception):
    """Base class: a problem the user can fix, reported as one line."""

    exit_code = EXIT_FAILED


class UsageError(VaultevalError):
    """A flag, argument or setting is invalid."""

    exit_code = EXIT_USAGE


class VaultSelectionError(UsageError):
    """No vault could be selected, or the selected folder is not a usable vault."""


class PathEscape(UsageError):
    """A path points outside the area of the vault it must stay in."""


class UnsafeMetaPath(UsageError):
    """Derived state would be written, renamed or removed through a symlink or a special file."""


class WriteFailed(VaultevalError):
    """Derived state could not be written (disk full, file too large, read-only vault, no permission)."""

    exit_code = EXIT_FAILED


class PageMissing(VaultevalError):
    """A named page does not exist or cannot be read."""

    exit_code = EXIT_PAGE_MISSING


class VaultReplaced(VaultevalError):
    """The vault folder, its ``.vault-meta`` or vaulteval's folder in it was moved, replaced or swapped for a
    symlink while vaulteval was writing; the run stopped before its next change."""

    exit_code = EXIT_PAGE_MISSING


class NotProvisioned(VaultevalError):
    """The index is missing, corrupt, from another schema, or has no chunks."""

    exit_code = EXIT_NOT_PROVISIONED
    # For a corrupt index: the section and block that failed their checksum, when known.
    where: tuple[str | None, int | None] = (None, None)

    def __init__(self, message: str, rebuild: str | None = None):
        self.rebuild = rebuild
        if rebuild:
            message = f"{message}; rebuild with: {rebuild}"
        super().__init__(message)


class VaultBusy(VaultevalError):
    """Another process holds the vault's write lock."""

    exit_code = EXIT_BUSY


class DuplicateAddress(VaultevalError):
    """Two pages declare the same `address:`; nothing was changed."""

    exit_code = EXIT_CONFLICT


class LedgerInvalid(UsageError):
    """A claim or source ledger is malformed; the message names the file and the field."""
