"""Where a vault keeps its notes, and which paths Obsidian itself leaves out.

Usage::

    notes_rel = notes_root(root, explicit=None)         # "wiki", "" (the vault root) or "my/notes"
    rules = IgnoreRules.from_vault(root)                # .obsidian/app.json userIgnoreFilters
    rules.excluded("Archive/old.md")                    # -> True when a filter matches

The notes folder is, in order: ``--notes-dir``, the folder the last
``provision --notes-dir`` recorded in ``.vault-meta/vaulteval/``,
``"notes_dir"`` in ``.vaulteval.json``, ``wiki/`` when it exists (the
claude-obsidian layout), the vault root when ``.obsidian/`` exists (a plain
Obsidian vault). Page paths stay relative to the vault root either way.

Obsidian's "Excluded files" setting (``userIgnoreFilters``) holds entries of
two kinds: ``/regex/`` is a regular expression searched in the vault-relative
path; anything else is a path prefix (``Archive/`` leaves out the folder,
``Templates`` also leaves out ``Templates.md``). Both are read as untrusted
input: a filter that is not a string, too long, or not a valid expression is
ignored with a warning.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from vaulteval.errors import UsageError, VaultSelectionError

CONFIG_FILE = ".vaulteval.json"
OBSIDIAN_DIR = ".obsidian"
APP_SETTINGS = ".obsidian/app.json"
MAX_SETTINGS_BYTES = 1 << 20
MAX_FILTER_CHARS = 500
MAX_FILTERS = 1000


def read_config(root: Path) -> dict:
    """The vault's ``.vaulteval.json`` as a dict ({} when absent or empty); a malformed file is a usage error."""
    path = root / CONFIG_FILE
    try:
        raw = path.read_bytes()[: MAX_SETTINGS_BYTES + 1]
    except OSError:
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: must hold a JSON object")
    return data


def _clean_notes_dir(root: Path, value: object, origin: str, *, exists: bool = True) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{origin}: notes_dir must be a string naming a folder inside the vault")
    rel = value.replace("\\", "/").strip()
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":") or ".." in parts:
        raise UsageError(f"{origin}: notes_dir {value!r} must be a folder inside the vault (relative, no '..')")
    if any(p.startswith(".") for p in parts):
        raise UsageError(f"{origin}: notes_dir {value!r} is a hidden folder, which Obsidian and vaulteval skip")
    if not exists:
        return "/".join(parts)
    folder = root.joinpath(*parts)
    if not folder.is_dir():
        raise VaultSelectionError(f"{origin}: notes folder {value!r} does not exist in {root}")
    real_root = os.path.realpath(root)
    real = os.path.realpath(folder)
    if real != real_root and not real.startswith(real_root + os.sep):
        raise UsageError(f"{origin}: notes folder {value!r} resolves outside the vault (symlink escape)")
    return "/".join(parts)


def notes_root(root: Path, explicit: str | None = None) -> str:
    """The notes folder relative to ``root`` ("" for the root itself); see the module docstring for the order."""
    return choose_notes_dir(root, explicit)[0]


def choose_notes_dir(root: Path, explicit: str | None = None, *, change: bool = False) -> tuple[str, str]:
    """(the notes folder relative to ``root``, where it came from: ``flag``, ``record``, ``config``, ``wiki`` or
    ``obsidian``). A ``--notes-dir`` that disagrees with the folder ``provision --notes-dir`` recorded is a usage
    error naming both, unless ``change`` (``provision --rebuild``, which records the new one)."""
    from vaulteval.vault.notesrecord import RECORD_REL, read_notes_record

    recorded = read_notes_record(root)
    if explicit is not None:
        chosen = _clean_notes_dir(root, explicit, "--notes-dir", exists=False)
        if recorded is not None and chosen != recorded and not change:
            raise UsageError(
                f"--notes-dir {explicit!r} disagrees with the notes folder {recorded or '.'!r} recorded in "
                f"{RECORD_REL} by provision; drop --notes-dir, or move the notes folder with: vaulteval provision "
                f"--vault {root} --notes-dir {explicit} --rebuild")
        return _clean_notes_dir(root, explicit, "--notes-dir"), "flag"
    if recorded is not None:
        try:
            return _clean_notes_dir(root, recorded or ".", f"{root / RECORD_REL}"), "record"
        except UsageError as exc:
            raise type(exc)(f"{exc} (recorded by provision --notes-dir); record the right one with: vaulteval "
                            f"provision --vault {root} --notes-dir DIR --rebuild") from None
    configured = read_config(root).get("notes_dir")
    if configured is not None:
        return _clean_notes_dir(root, configured, str(root / CONFIG_FILE)), "config"
    if (root / "wiki").is_dir():
        return "wiki", "wiki"
    if (root / OBSIDIAN_DIR).is_dir():
        return "", "obsidian"
    raise VaultSelectionError(
        f"{root} has no wiki/ folder and no .obsidian/ folder; pass --notes-dir DIR "
        f"(or set \"notes_dir\" in {CONFIG_FILE}) to name the folder that holds your notes"
    )


def _warn(message: str, *args: object) -> None:
    # logging is imported only when there is something to say: retrieve's lean start skips it.
    import logging

    logging.getLogger(__name__).warning(message, *args)


class IgnoreRules:
    """Obsidian's excluded-files filters, applied to vault-relative POSIX paths."""

    __slots__ = ("prefixes", "patterns")

    def __init__(self, prefixes: tuple[str, ...] = (), patterns: tuple[re.Pattern, ...] = ()):
        self.prefixes, self.patterns = tuple(prefixes), tuple(patterns)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IgnoreRules) and (self.prefixes, self.patterns) == (other.prefixes, other.patterns)

    def __hash__(self) -> int:
        return hash((self.prefixes, self.patterns))

    def __repr__(self) -> str:
        return f"IgnoreRules(prefixes={self.prefixes!r}, patterns={self.patterns!r})"

    @classmethod
    def from_vault(cls, root: Path) -> "IgnoreRules":
        path = root / APP_SETTINGS
        try:
            if path.is_symlink() or not path.is_file():
                return cls()
            raw = path.read_bytes()[: MAX_SETTINGS_BYTES + 1]
            settings = json.loads(raw) if len(raw) <= MAX_SETTINGS_BYTES else {}
        except (OSError, ValueError):
            _warn("%s is unreadable or not JSON; no Obsidian exclusions applied", APP_SETTINGS)
            return cls()
        filters = settings.get("userIgnoreFilters") if isinstance(settings, dict) else None
        return cls.parse(filters if isinstance(filters, list) else [])

    @classmethod
    def parse(cls, filters: list) -> "IgnoreRules":
        prefixes: list[str] = []
        patterns: list[re.Pattern] = []
        for entry in filters[:MAX_FILTERS]:
            if not isinstance(entry, str) or not entry.strip() or len(entry) > MAX_FILTER_CHARS:
                _warn("ignoring unusable Obsidian exclusion %r", entry)
                continue
            if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
                try:
                    patterns.append(re.compile(entry[1:-1]))
                except re.error:
                    _warn("ignoring Obsidian exclusion %r: not a valid regular expression", entry)
                continue
            prefixes.append(entry.replace("\\", "/").lstrip("/"))
        return cls(tuple(prefixes), tuple(patterns))

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.patterns)

    def excluded(self, rel: str) -> bool:
        """True when Obsidian's settings leave the vault path ``rel`` out."""
        return any(rel.startswith(p) for p in self.prefixes) or any(p.search(rel) for p in self.patterns)

    def folder_excluded(self, rel_dir: str) -> bool:
        """True when every path under ``rel_dir`` is left out by a prefix (so the walk can skip the folder)."""
        return any((rel_dir + "/").startswith(p) for p in self.prefixes)


def hidden(rel: str) -> bool:
    """True for a path with a dot-component (``.obsidian``, ``.trash``, ``.vault-meta``, any dot-folder or dot-file)."""
    return any(part.startswith(".") for part in rel.split("/"))
