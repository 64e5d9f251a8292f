"""A vault: how one is selected, where its notes and derived state live, and its pages.

Usage::

    vault = Vault.select(explicit=None)        # --vault, env, or marker file
    for page in vault.iter_pages(): ...

This is the bottom of the package: it imports nothing above ``vaulteval.vault``.
Opening the index, retrieving and provisioning live in ``vaulteval.pipeline``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from collections import namedtuple
from pathlib import Path

from vaulteval.errors import PageMissing, UsageError, VaultSelectionError
from vaulteval.vault.layout import APP_SETTINGS, IgnoreRules, choose_notes_dir, hidden
from vaulteval.vault.metadir import META_NAME, OWN_NAME
from vaulteval.vault.notefiles import BAD_NAME, name_is_text, printable
from vaulteval.vault.paths import confine, home_path, is_inside, path_text_problem

MARKERS = (".vaulteval.json", ".claude-obsidian.json")
ENV_VARS = ("VAULTEVAL_VAULT", "CLAUDE_OBSIDIAN_VAULT")
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the vaulteval package folder
BUNDLED_SAMPLE = PACKAGE_DIR / "data" / "sample-vault"


def _product_roots() -> set[Path]:
    roots = {PACKAGE_DIR}
    repo = PACKAGE_DIR.parent
    if (repo / "pyproject.toml").is_file() and (repo / "vaulteval").resolve() == PACKAGE_DIR:
        roots.add(repo)
    return roots


def _walk(top: str, stats: dict[str, tuple[int, int, int]] | None = None
          ) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` without symlinks: (folder, its subfolders, its files) top-down, the caller may prune the
    subfolders in place. A link to another note is that note, listed (and indexed) once under its own path; a
    link that leads out of the notes folder, into a hidden folder or to a non-note is never read, so links are
    left out here, from the directory entry's type (no ``lstat`` per file where the file system gives it).
    A folder that cannot be listed is skipped, as ``os.walk`` does. ``stats`` gets each ``.md`` file's (size,
    mtime_ns, inode) by its path, from the directory entry (one ``lstat``, none when it fails)."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        dirs, files = [], []
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
            if stats is not None and not is_dir and entry.name.endswith(".md"):
                try:
                    st = entry.stat(follow_symlinks=False)
                    stats[entry.path] = (st.st_size, st.st_mtime_ns, st.st_ino)
                except OSError:
                    pass
        yield folder, dirs, files
        stack.extend(folder + os.sep + d for d in reversed(dirs))


class Page(namedtuple("_PageFields", "rel abspath")):
    """A note under the notes folder: its vault-relative POSIX path and absolute path."""

    __slots__ = ()

    @property
    def path(self) -> Path:
        return Path(self.abspath)


class Vault:
    """A folder with notes (``wiki/``, or the root of a plain Obsidian vault) and derived state.

    vaulteval's derived state lives in ``.vault-meta/vaulteval/`` (``meta_dir``), a namespace of its own inside
    the ``.vault-meta/`` folder it shares with claude-obsidian (``shared_meta_dir``), whose chunk records and
    index sit directly in ``.vault-meta/`` and are never touched.

    ``notes_dir`` names the notes folder relative to the root ("" or "." for the
    root itself) and wins over ``.vaulteval.json`` and the layout's own signs.
    Without it, the folder the last ``provision --notes-dir`` recorded is used
    (``notes_origin == "record"``); one that disagrees with the record is a usage
    error, unless ``notes_dir_change`` (``provision --rebuild`` records the new one).
    """

    def __init__(self, root: str | os.PathLike[str], *, meta_dir: str | os.PathLike[str] | None = None,
                 notes_dir: str | None = None, notes_dir_change: bool = False,
                 ignore_obsidian_settings: bool = False):
        for what, value in (("vault", root), ("meta folder", meta_dir), ("notes folder", notes_dir)):
            text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
            problem = path_text_problem(text) if isinstance(text, str) else None
            if problem:
                raise VaultSelectionError(f"the {what} path {printable(text)} {problem}; "
                                          "pass --vault PATH to an existing vault")
        root_path = home_path(root)
        if not root_path.is_dir():
            raise VaultSelectionError(f"vault {root_path} is not a directory; pass --vault PATH to an existing vault")
        self.root = root_path.resolve()
        if self.root in _product_roots():
            raise VaultSelectionError(
                f"{self.root} is vaulteval's own folder, not a vault; pass --vault PATH to your vault"
            )
        # "" when the notes are the vault root; page paths are always relative to the root.
        self.notes_rel, self.notes_origin = choose_notes_dir(self.root, notes_dir, change=notes_dir_change)
        self.notes_dir = self.root.joinpath(*self.notes_rel.split("/")) if self.notes_rel else self.root
        # Unusable exclusion settings stop here (exit 2), unless the user chose to go on without them.
        self.ignore_obsidian_settings = ignore_obsidian_settings
        self.ignore = IgnoreRules.from_vault(self.root, ignore_settings=ignore_obsidian_settings)
        self.shared_meta_dir = self.root / META_NAME
        # meta_dir may point outside the vault: evaluation builds variants in a cache.
        self.meta_dir = Path(meta_dir).resolve() if meta_dir else self.shared_meta_dir / OWN_NAME

    # -- selection -------------------------------------------------------
    @classmethod
    def select(cls, explicit: str | os.PathLike[str] | None = None, *, cwd: Path | None = None,
               notes_dir: str | None = None, notes_dir_change: bool = False,
               ignore_obsidian_settings: bool = False) -> "Vault":
        """Usage: ``Vault.select(args.vault)``: --vault, then env vars, then the nearest marker file."""
        kw = {"notes_dir": notes_dir, "notes_dir_change": notes_dir_change,
              "ignore_obsidian_settings": ignore_obsidian_settings}
        if explicit:
            return cls(explicit, **kw)
        for var in ENV_VARS:
            value = os.environ.get(var)
            if value:
                return cls(value, **kw)
        here = (cwd or Path.cwd()).resolve()
        products = _product_roots()
        for folder in (here, *here.parents):
            if any((folder / marker).is_file() for marker in MARKERS):
                return cls(folder, **kw)
            if folder in products:
                # Working inside vaulteval itself: never fall through to a marker further up.
                raise VaultSelectionError(
                    f"{folder} is vaulteval's own folder, not a vault; pass --vault PATH to your vault"
                )
        raise VaultSelectionError(
            "no vault selected: pass --vault PATH, set VAULTEVAL_VAULT, "
            "or run inside a folder holding .vaulteval.json"
        )

    def with_meta(self, meta_dir: str | os.PathLike[str]) -> "Vault":
        """The same vault and notes folder with derived state in ``meta_dir`` (evaluation variants)."""
        return Vault(self.root, meta_dir=meta_dir, notes_dir=self.notes_rel, notes_dir_change=True,
                     ignore_obsidian_settings=self.ignore_obsidian_settings)

    def reopen(self) -> "Vault":
        """The same vault opened again as the CLI would open it now: the same root, ``--notes-dir`` and
        ``--ignore-obsidian-settings``, and every check of opening run again (the notes folder's choice,
        Obsidian's exclusions). Raises what opening raises."""
        return Vault(self.root, meta_dir=self.meta_dir if self.meta_is_external else None,
                     notes_dir=(self.notes_rel or ".") if self.notes_origin == "flag" else None,
                     ignore_obsidian_settings=self.ignore_obsidian_settings)

    def open_inputs(self) -> tuple[str, ...]:
        """The paths opening this vault reads: while none of them changed, ``reopen`` would give the same vault.
        Keep in step with ``__init__`` and ``choose_notes_dir``."""
        from vaulteval.vault.layout import CONFIG_FILE, OBSIDIAN_DIR
        from vaulteval.vault.notesrecord import RECORD_REL

        root = self.root
        paths = (root, root / CONFIG_FILE, root / RECORD_REL, root / "wiki", root / OBSIDIAN_DIR, root / APP_SETTINGS,
                 self.notes_dir)
        return tuple(dict.fromkeys(str(p) for p in paths))  # the notes folder is often wiki/ or the root

    @property
    def is_bundled(self) -> bool:
        """True for the sample vault shipped inside the package (never written to)."""
        return is_inside(PACKAGE_DIR, self.root)

    @property
    def meta_is_external(self) -> bool:
        return not is_inside(self.root, self.meta_dir)

    def require_writable(self) -> None:
        """Refuse provisioning inside the installed product."""
        if self.is_bundled and not self.meta_is_external:
            raise UsageError(
                "the bundled sample vault is read-only; copy it first with: vaulteval sample DEST"
            )

    # -- paths -----------------------------------------------------------
    @property
    def notes_strip(self) -> str | None:
        """The leading part every page path carries (``"wiki"``), or None when notes live at the root."""
        return self.notes_rel or None

    @property
    def notes_label(self) -> str:
        """The notes folder as users see it in messages: ``wiki/`` or ``the vault root``."""
        return f"{self.notes_rel}/" if self.notes_rel else "the vault root"

    def page_rel(self, name: str) -> str:
        """Usage: ``vault.page_rel("Concepts/x.md")`` -> ``"content/Concepts/x.md"``: a page path as a user or an
        agent names it, vault-relative or relative to the notes folder, as the vault path every page has.

        A path without the notes folder's prefix gains it; one with the prefix keeps it unless only the path
        below the notes folder names a file (``content/x.md`` in a notes folder that holds ``content/``). A path
        that is absolute or has ``..`` is returned as given: confinement refuses it with its own message."""
        if not self.notes_rel or not isinstance(name, str):
            return name
        clean = name.replace("\\", "/")
        while clean.startswith("./"):
            clean = clean[2:]
        parts = clean.split("/")
        if not clean or clean.startswith("/") or clean[1:2] == ":" or ".." in parts or "\x00" in clean:
            return name
        lead = self.notes_rel + "/"
        if not clean.startswith(lead):
            return lead + clean
        if not os.path.lexists(self.root / clean) and os.path.lexists(self.notes_dir / clean):
            return lead + clean
        return clean

    def page_path(self, rel: str) -> Path:
        """Usage: ``vault.page_path("wiki/a.md")``: the confined absolute path of a note."""
        return confine(self.notes_dir, rel, strip=self.notes_strip)

    def note_path(self, rel: str) -> Path:
        """A page that is an indexable note: confined, ``.md``, not hidden, not excluded, and present.

        Raises PathEscape (exit 2) for a path leaving the notes folder, PageMissing (exit 3) otherwise.
        """
        path = self.page_path(rel)
        clean = "/".join(p for p in rel.replace("\\", "/").split("/") if p not in ("", "."))
        if not clean.endswith(".md") or hidden(clean):
            raise PageMissing(f"{rel} is not a note (notes are .md files outside hidden folders)")
        if self.ignore.excluded(clean):
            raise PageMissing(f"{rel} is excluded by Obsidian's settings (.obsidian/app.json userIgnoreFilters)")
        if not path.is_file():
            raise PageMissing(f"page {rel} does not exist under {self.notes_label}; check the path")
        return path

    def linked_note(self, rel: str) -> str | None:
        """For a path that is a symlink, the vault path of the note it leads to (None when it is no symlink).

        The target must be a note of this vault: inside the notes folder, ``.md``, not hidden, not excluded
        (PathEscape, exit 2, otherwise: the link stays refused, as every walk skips it)."""
        from vaulteval.errors import PathEscape

        path = self.page_path(rel)
        if not path.is_symlink():
            return None
        real = os.path.realpath(path)
        real_notes = os.path.realpath(self.notes_dir)
        inside = real.startswith(real_notes + os.sep)
        target = (self.notes_rel + "/" if self.notes_rel else "") + real[len(real_notes) + 1:].replace(os.sep, "/")
        if not inside or not target.endswith(".md") or hidden(target) or self.ignore.excluded(target) \
                or not os.path.isfile(real):
            raise PathEscape(f"{printable(rel)} is a symlink that does not lead to a note in {self.notes_label}; "
                             "vaulteval never reads it")
        return target

    def meta_path(self, rel: str) -> Path:
        """Usage: ``vault.meta_path("chunks/c-1/chunk-000.json")``: a confined path under ``meta_dir``."""
        return confine(self.meta_dir, rel)

    skipped_names: list[str] = []  # notes whose file names are not UTF-8, found by the last iter_pages()

    def iter_pages(self, signatures: dict[str, tuple[int, int, int]] | None = None) -> Iterator[Page]:
        """Every ``*.md`` note, sorted; skips dot-folders, Obsidian's exclusions, links that leave the notes folder
        and names that are not UTF-8 (warned about once, listed in ``skipped_names``). ``signatures`` gets each
        note's (size, mtime_ns, inode) by its absolute path, read from the walk's directory entries."""
        notes = str(self.notes_dir)
        lead = self.notes_rel + "/" if self.notes_rel else ""
        ignore = self.ignore
        found: list[Page] = []
        bad: list[str] = []
        for dirpath, dirnames, filenames in _walk(notes, signatures):
            rel_dir = lead + dirpath[len(notes):].replace(os.sep, "/").lstrip("/")
            rel_dir = rel_dir.rstrip("/")
            dirnames[:] = [d for d in dirnames if not d.startswith(".")
                           and not (ignore and ignore.folder_excluded(f"{rel_dir}/{d}" if rel_dir else d))]
            for name in filenames:
                if not name.endswith(".md") or name.startswith("."):
                    continue
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if ignore and ignore.excluded(rel):
                    continue
                if not name_is_text(rel):
                    bad.append(rel)
                    continue
                found.append(Page(rel, dirpath + os.sep + name))
        found.sort(key=lambda p: p.rel)
        for rel in sorted(set(bad) - set(self.skipped_names)):
            import logging  # only here: the retrieve path must not import logging

            logging.getLogger(__name__).warning("skipping %s: %s", printable(rel), BAD_NAME)  # once per vault object
        self.skipped_names = sorted(bad)
        return iter(found)

    # -- pipeline --------------------------------------------------------
    @property
    def vault_args(self) -> str:
        """``--vault ROOT`` plus ``--notes-dir DIR`` when the folder was named by a flag or recorded, for fix hints
        that work when followed as printed."""
        import shlex

        args = f"--vault {shlex.quote(str(self.root))}"
        if self.notes_origin in ("flag", "record"):
            args += f" --notes-dir {shlex.quote(self.notes_rel or '.')}"
        if self.ignore_obsidian_settings:
            args += " --ignore-obsidian-settings"
        return args

    def rebuild_command(self) -> str:
        """The exact shell command that re-provisions this vault."""
        return f"vaulteval provision {self.vault_args}"

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"
