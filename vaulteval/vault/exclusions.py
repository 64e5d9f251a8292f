"""Obsidian's "Excluded files" setting, applied so that it never fails open.

Usage::

    rules = IgnoreRules.from_vault(root)          # .obsidian/app.json userIgnoreFilters; ObsidianSettingsError
    rules.excluded("Archive/old.md")              # -> True when a filter matches
    rules.filters                                 # the entries in force, as written (recorded in the index)

``userIgnoreFilters`` holds entries of two kinds: ``/regex/`` is a regular
expression searched in the vault-relative path; anything else is a path prefix
(``Archive/`` leaves out the folder, ``Templates`` also ``Templates.md``).

A user who excludes a folder expects its notes never to reach an agent, so
settings that cannot be honoured stop the command instead of being dropped:
an ``app.json`` that cannot be read, is over 1 MiB or is not a JSON object, a
``userIgnoreFilters`` that is not a list, an entry that is not a string, too
long, not a valid expression, or one that runs too long on a sample of
hostile paths, are each one ``ObsidianSettingsError`` (exit 2) naming the file,
unless the user passes ``--ignore-obsidian-settings`` (then no exclusions, with
one warning line). Expressions run on the ``regex`` package with a time limit
per match, so a pattern that hangs on a real path stops the command too.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from vaulteval.errors import UsageError

APP_SETTINGS = ".obsidian/app.json"
MAX_SETTINGS_BYTES = 1 << 20
MAX_FILTER_CHARS = 500
MAX_FILTERS = 1000
MATCH_SECONDS = 0.1  # one filter on one path; a real exclusion answers in microseconds
_SAMPLE_SECONDS = 0.05
_SAMPLE_LENGTH = 200  # longer than most note paths, so a pattern slow on these is slow on real ones


class ObsidianSettingsError(UsageError):
    """Obsidian's excluded-files setting cannot be honoured; the command stops rather than serve excluded notes."""


def _refuse(root: Path, what: str) -> ObsidianSettingsError:
    return ObsidianSettingsError(
        f"{root / APP_SETTINGS} {what}; Obsidian's excluded files cannot be honoured, so nothing was read: fix "
        "the file in Obsidian (Settings > Files and links > Excluded files), or pass --ignore-obsidian-settings "
        "to go on without any exclusion")


def _warn(message: str, *args: object) -> None:
    # logging is imported only when there is something to say: retrieve's lean start skips it.
    import logging

    logging.getLogger(__name__).warning(message, *args)


def _read_settings(root: Path) -> bytes | None:
    """The bytes of app.json (None when there is none); a symlink to a regular file is followed."""
    from vaulteval.vault.metadir import open_regular

    path = root / APP_SETTINGS
    try:
        with open_regular(path, follow=True) as fh:  # never blocks on a FIFO named app.json
            return fh.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        if os.path.lexists(path):  # a symlink to nothing: settings the user meant, that cannot be read
            raise _refuse(root, "cannot be read (a symlink to a missing file)") from None
        return None
    except OSError as exc:
        raise _refuse(root, f"cannot be read ({exc.strerror or 'not a regular file'})") from None


class IgnoreRules:
    """Obsidian's excluded-files filters, applied to vault-relative POSIX paths."""

    __slots__ = ("prefixes", "patterns", "filters")

    def __init__(self, prefixes: tuple[str, ...] = (), patterns: tuple = (), filters: tuple[str, ...] = ()):
        self.prefixes, self.patterns = tuple(prefixes), tuple(patterns)
        self.filters = tuple(filters)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IgnoreRules) and self.filters == other.filters

    def __hash__(self) -> int:
        return hash(self.filters)

    def __repr__(self) -> str:
        return f"IgnoreRules(filters={self.filters!r})"

    @classmethod
    def from_vault(cls, root: Path, *, ignore_settings: bool = False) -> "IgnoreRules":
        """The vault's rules; ObsidianSettingsError (exit 2) when they cannot be honoured, unless
        ``ignore_settings`` (then none, with one warning)."""
        try:
            return cls._load(Path(root))
        except ObsidianSettingsError as exc:
            if not ignore_settings:
                raise
            _warn("--ignore-obsidian-settings: no Obsidian exclusions applied (%s)", str(exc).split(";")[0])
            return cls()

    @classmethod
    def _load(cls, root: Path) -> "IgnoreRules":
        raw = _read_settings(root)
        if raw is None:
            return cls()
        if len(raw) > MAX_SETTINGS_BYTES:
            raise _refuse(root, f"is larger than {MAX_SETTINGS_BYTES} bytes")
        try:
            settings = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _refuse(root, "is not valid UTF-8 JSON") from None
        if not isinstance(settings, dict):
            raise _refuse(root, "does not hold a JSON object")
        filters = settings.get("userIgnoreFilters")
        if filters is None:
            return cls()
        if not isinstance(filters, list):
            raise _refuse(root, "has a userIgnoreFilters that is not a list")
        try:
            return cls.parse(filters)
        except ValueError as exc:
            raise _refuse(root, str(exc)) from None

    @classmethod
    def parse(cls, filters: list) -> "IgnoreRules":
        """Rules from ``userIgnoreFilters`` entries; ValueError naming the first entry that cannot be honoured."""
        if len(filters) > MAX_FILTERS:
            raise ValueError(f"has {len(filters)} excluded-files filters, more than {MAX_FILTERS}")
        prefixes: list[str] = []
        patterns: list = []
        kept: list[str] = []
        for entry in filters:
            if not isinstance(entry, str):
                raise ValueError(f"has an excluded-files filter that is not text: {entry!r}"[:300])
            if not entry.strip():
                continue  # Obsidian keeps no empty filter either
            if len(entry) > MAX_FILTER_CHARS:
                raise ValueError(f"has an excluded-files filter longer than {MAX_FILTER_CHARS} characters")
            kept.append(entry)
            if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
                patterns.append(_bounded_pattern(entry))
                continue
            prefixes.append(entry.replace("\\", "/").lstrip("/"))
        return cls(tuple(prefixes), tuple(patterns), tuple(kept))

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.patterns)

    def excluded(self, rel: str) -> bool:
        """True when Obsidian's settings leave the vault path ``rel`` out."""
        if any(rel.startswith(p) for p in self.prefixes):
            return True
        for pattern in self.patterns:
            try:
                if _search(pattern, rel, MATCH_SECONDS):
                    return True
            except TimeoutError:
                raise ObsidianSettingsError(
                    f"the excluded-files filter /{pattern.pattern}/ of {APP_SETTINGS} took over {MATCH_SECONDS} s "
                    f"on {rel!r}; simplify it in Obsidian, or pass --ignore-obsidian-settings") from None
        return False

    def folder_excluded(self, rel_dir: str) -> bool:
        """True when every path under ``rel_dir`` is left out by a prefix (so the walk can skip the folder)."""
        return any((rel_dir + "/").startswith(p) for p in self.prefixes)


def _search(pattern, text: str, seconds: float):
    """``pattern.search(text)`` within ``seconds``, else TimeoutError. The regex module sometimes stops at its
    time limit with no match instead of raising; a search without a match that used half the limit is taken
    as one that ran out (a real exclusion answers in microseconds), so a hostile filter never fails open.
    Such a search is tried once more first: a process paused by a busy machine is slow once, a hostile
    pattern every time."""
    for _ in range(2):
        start = time.perf_counter()
        found = pattern.search(text, timeout=seconds)
        if found is not None or time.perf_counter() - start < seconds / 2:
            return found
    raise TimeoutError(f"no answer within {seconds} s")


def _bounded_pattern(entry: str):
    """A compiled ``/regex/`` filter that answered in time on a sample of hostile paths (ValueError otherwise)."""
    import regex  # only for vaults with expression filters: it has a time limit per match, ``re`` has none

    try:
        pattern = regex.compile(entry[1:-1])
    except (regex.error, RecursionError, OverflowError) as exc:
        raise ValueError(f"has an excluded-files filter {entry!r} that is not a valid regular expression ({exc})")
    for sample in _samples(entry):
        try:
            _search(pattern, sample, _SAMPLE_SECONDS)
        except TimeoutError:
            raise ValueError(f"has an excluded-files filter {entry!r} too slow to apply (over {_SAMPLE_SECONDS} s "
                             "on a sample path): simplify the expression") from None
    return pattern


def _samples(entry: str) -> list[str]:
    """Paths that make a backtracking pattern blow up: long runs of a character the pattern names, then a
    character it does not expect."""
    chars = {c for c in entry if c.isalnum()} | {"a", "0", " ", "/", ".", "-", "_"}
    return [c * _SAMPLE_LENGTH + end for c in sorted(chars)[:40] for end in ("!", "\n")]
