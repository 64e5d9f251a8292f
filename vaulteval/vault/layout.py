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

Obsidian's "Excluded files" setting (``userIgnoreFilters``) is read by
``vaulteval.vault.exclusions``, which fails closed.
"""

from __future__ import annotations

import os
from pathlib import Path

from vaulteval.errors import UsageError, VaultSelectionError
from vaulteval.vault.exclusions import APP_SETTINGS, IgnoreRules  # noqa: F401  (the rules' old home)

CONFIG_FILE = ".vaulteval.json"
OBSIDIAN_DIR = ".obsidian"
MAX_SETTINGS_BYTES = 1 << 20


def read_config(root: Path) -> dict:
    """The vault's ``.vaulteval.json`` as a dict ({} when absent or empty); a malformed file is a usage error."""
    from vaulteval.vault.bounded import Refused, load_json
    from vaulteval.vault.metadir import read_capped

    path = root / CONFIG_FILE
    try:
        raw = read_capped(path, MAX_SETTINGS_BYTES)  # a FIFO is refused, never waited on
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc}); make it a JSON file or remove it") \
            from None
    if not raw.strip():
        return {}
    try:
        data = load_json(raw)
    except Refused as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); fix it or remove it") from None
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


def hidden(rel: str) -> bool:
    """True for a path with a dot-component (``.obsidian``, ``.trash``, ``.vault-meta``, any dot-folder or dot-file)."""
    return any(part.startswith(".") for part in rel.split("/"))
