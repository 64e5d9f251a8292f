"""Resolve ``[[wikilinks]]`` to vault pages the way Obsidian does.

Usage::

    resolver = LinkResolver.from_vault(vault)
    resolver.resolve("[[books/Notes#Template|how I take notes]]")   # -> "wiki/books/Notes.md"
    resolver.link_status("wiki/sleep/Naps.md", "./adenosine")       # -> ("wiki/sleep/adenosine.md", "resolved")

``resolve`` takes a key with no note around it (a query set's judgment, a page
to read). Order: exact path (``wiki/x/Note``, ``x/Note`` or ``Note``, with or
without ``.md``; the notes folder's own prefix is optional), then the shortest
unique path suffix (a bare name is a suffix of one component), each first
case-sensitive then case-insensitive; last the ``aliases:`` of every page's
frontmatter. ``#heading``, ``^block`` and ``|display`` parts are ignored.
Several matches at the first level that has any are an :class:`AmbiguousLink`;
none is an :class:`UnknownLink`.

``link_status`` resolves a link written in a note, in every format Obsidian's
"New link format" setting writes: a path relative to the note (``./x``,
``../assets/x.png``), a path from the vault root (``folder/x``, ``/folder/x``)
or the shortest unique name; with or without ``.md``. Among several notes of
one name the one in the linking note's folder wins, then the shortest path,
as Obsidian opens them. A link to a file that is not a note (an image, a PDF)
is looked up among the vault's files.

It lives in ``chunks`` so both the pipeline-level note reader and query sets use it.
"""

from __future__ import annotations

import os
import posixpath
import unicodedata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault


class UnknownLink(UsageError):
    """A wikilink or path names no page of the vault."""


class AmbiguousLink(UsageError):
    """A wikilink matches several pages; write more of its path."""

    candidates: tuple[str, ...] = ()


def _norm(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def is_wikilink(key: str) -> bool:
    """Usage: ``is_wikilink("[[Grinder]]")`` -> True."""
    key = key.strip()
    return key.startswith("[[") and key.endswith("]]")


def link_target(key: str) -> str:
    """Usage: ``link_target("[[a/B#h|x]]")`` -> ``"a/B"``: the file part of a wikilink, trimmed."""
    text = key.strip()
    if is_wikilink(text):
        text = text[2:-2]
    text = text.split("|", 1)[0]
    text = text.split("#", 1)[0]
    return _norm(text.strip().replace("\\", "/").strip("/"))


class LinkResolver:
    """Page lookup by path, path suffix and alias; aliases are read only when first needed."""

    def __init__(self, pages: Iterable[str], *, read_page: Callable[[str], bytes] | None = None,
                 notes_rel: str = "wiki", list_files: Callable[[], Iterable[str]] | None = None):
        self.pages = sorted(_norm(p) for p in pages)
        self._set = set(self.pages)
        self._folded = {p.casefold(): p for p in reversed(self.pages)}  # the first in path order wins
        self._read_page = read_page
        self._aliases: dict[str, list[str]] | None = None
        self._list_files = list_files
        self._files: dict[str, str] | None = None
        self._files_by_name: dict[str, list[str]] = {}
        self.lead = f"{notes_rel}/" if notes_rel else ""
        # Path without the notes folder and ".md", for exact and suffix matching.
        self._stems = {p: p.removeprefix(self.lead).removesuffix(".md") for p in self.pages}
        self._by_name: dict[str, list[str]] = {}
        self._by_stem: dict[str, list[str]] = {}
        for page, stem in self._stems.items():
            self._by_name.setdefault(stem.rsplit("/", 1)[-1].casefold(), []).append(page)
            self._by_stem.setdefault(stem.casefold(), []).append(page)

    @classmethod
    def from_vault(cls, vault: "Vault") -> "LinkResolver":
        """Usage: ``LinkResolver.from_vault(vault)``: every note of the vault, aliases from frontmatter."""
        pages = {p.rel: p.path for p in vault.iter_pages()}
        return cls(pages, read_page=lambda rel: _read_or_empty(pages[rel]), notes_rel=vault.notes_rel,
                   list_files=lambda: _other_files(vault))

    def has_page(self, rel: str) -> bool:
        return _norm(rel) in self._set

    def resolve(self, key: str) -> str:
        """Usage: ``resolve("[[Grinder]]")`` -> the page's vault path; raises UnknownLink / AmbiguousLink."""
        target = link_target(key)
        if not target:
            raise UnknownLink(f"{key!r} names no page")
        stem = target.removesuffix(".md")
        for exact in (True, False):
            found = self._by_path(stem, exact)
            if found:
                return self._one(key, found)
        aliases = self.aliases().get(target.casefold(), [])
        if aliases:
            return self._one(key, aliases, via="alias")
        raise UnknownLink(f"{key} matches no page, path suffix or alias in the vault's notes")

    def _by_path(self, stem: str, exact: bool) -> list[str]:
        fold = (lambda s: s) if exact else str.casefold
        want = fold(stem.removeprefix(self.lead)) if self.lead and stem.startswith(self.lead) else fold(stem)
        full = [p for p in self._by_stem.get(want.casefold(), []) if fold(self._stems[p]) == want]
        if full:
            return full
        name = stem.rsplit("/", 1)[-1].casefold()
        return [p for p in self._by_name.get(name, []) if fold("/" + self._stems[p]).endswith("/" + want)]

    def _one(self, key: str, found: list[str], via: str = "name") -> str:
        if len(found) == 1:
            return found[0]
        shown = ", ".join(sorted(found)[:5])
        exc = AmbiguousLink(f"{key} matches {len(found)} pages by {via} ({shown}); write more of the path, "
                            f"e.g. [[{_hint(sorted(found)[0].removeprefix(self.lead))}]]")
        exc.candidates = tuple(sorted(found))
        raise exc

    def link_status(self, source: str, target: str, *, markdown: bool = False) -> tuple[str | None, str]:
        """(vault path or None, status) of a link to ``target`` (its file part: no ``#``, no ``|``) written in the
        note ``source``. Status: ``resolved`` (a note), ``not-a-note`` (another file of the vault), ``ambiguous``
        (notes tied by folder and path length), ``unresolved``. ``markdown``: a Markdown link, whose plain path
        is read relative to the note first (a wikilink's from the vault root first)."""
        target = _norm(target.strip().replace("\\", "/"))
        if not target:
            return source, "resolved"  # [[#Heading]] points into the same note
        try:
            return self._note_from(source, target, markdown), "resolved"
        except AmbiguousLink:
            return None, "ambiguous"
        except UnknownLink:
            pass
        ext = posixpath.splitext(target)[1].lower()
        if ext and ext != ".md":
            found = self._file_from(source, target, markdown)
            if found is not None:
                return found, "not-a-note"
        return None, "unresolved"

    def _paths_from(self, source: str, target: str, markdown: bool) -> list[str] | None:
        """The vault paths a path-like target can name, in the order tried (``.md`` still optional); None for a
        bare name. A path from the root may leave out the notes folder; a relative path that climbs out of the
        vault names nothing."""
        folder = posixpath.dirname(source)
        if target.startswith(("./", "../")) or target in (".", ".."):
            joined = posixpath.normpath(posixpath.join(folder, target))
            return [] if joined == ".." or joined.startswith("../") else [joined]
        if "/" not in target:  # a bare name; a Markdown link's may still be a file beside the note
            return [posixpath.join(folder, target)] if markdown else None
        root = posixpath.normpath(target.lstrip("/"))
        rooted = [root] if not self.lead or root.startswith(self.lead) else [self.lead + root, root]
        if target.startswith("/"):
            return rooted
        beside = posixpath.normpath(posixpath.join(folder, target))
        return [beside, *rooted] if markdown else [*rooted, beside]

    def _page_at(self, path: str) -> str | None:
        """The note at vault path ``path``, ``.md`` optional, exact case first."""
        tries = [path] if path.endswith(".md") else [path, path + ".md"]
        for t in tries:
            if t in self._set:
                return t
        for t in tries:
            if t.casefold() in self._folded:
                return self._folded[t.casefold()]
        return None

    def _note_from(self, source: str, target: str, markdown: bool) -> str:
        paths = self._paths_from(source, target, markdown)
        for path in paths or ():
            found = self._page_at(path)
            if found:
                return found
        if target.startswith(("/", "./", "../")):
            raise UnknownLink(f"{target} names no note")
        if paths is None:  # a bare name: the note of that name beside the linking note first
            found = self._page_at(posixpath.join(posixpath.dirname(source), target))
            if found:
                return found
        try:
            return self.resolve(target)
        except AmbiguousLink as exc:
            return _nearest(source, exc)

    def _file_from(self, source: str, target: str, markdown: bool) -> str | None:
        files = self.files()
        for path in self._paths_from(source, target, markdown) or ():
            if path.casefold() in files:
                return files[path.casefold()]
        if target.startswith(("/", "./", "../")):
            return None
        want = "/" + target.casefold()
        folder = posixpath.dirname(source)
        named = self._files_by_name.get(posixpath.basename(want), ())
        found = sorted((p for p in named if ("/" + p.casefold()).endswith(want)),
                       key=lambda p: (posixpath.dirname(p) != folder, len(p), p))
        return found[0] if found else None

    def files(self) -> dict[str, str]:
        """Casefolded vault path -> vault path of every file under the notes folder that is not a note (listed
        once, when a link first needs it)."""
        if self._files is None:
            listed = self._list_files() if self._list_files is not None else ()
            self._files, self._files_by_name = {}, {}
            for rel in sorted(_norm(r) for r in listed):
                if self._files.setdefault(rel.casefold(), rel) == rel:
                    self._files_by_name.setdefault(posixpath.basename(rel.casefold()), []).append(rel)
        return self._files

    def open_link(self, key: str) -> str:
        """The note Obsidian opens for ``key``: as ``resolve``, but among several notes of one name the
        shortest path wins; only a tie is ambiguous (AmbiguousLink listing every tied note)."""
        try:
            return self.resolve(key)
        except AmbiguousLink as exc:
            shortest = min(len(p) for p in exc.candidates)
            best = [p for p in exc.candidates if len(p) == shortest]
            if len(best) == 1:
                return best[0]
            tie = AmbiguousLink(f"{key} matches {len(best)} notes with equally short paths: {', '.join(best)}; "
                                "write more of the path")
            tie.candidates = tuple(best)
            raise tie from None

    def aliases(self) -> dict[str, list[str]]:
        """Casefolded alias -> pages declaring it (frontmatter ``aliases:`` or ``alias:``)."""
        if self._aliases is None:
            self._aliases = {}
            if self._read_page is not None:
                for page in self.pages:
                    for alias in page_aliases(self._read_page(page)):
                        bucket = self._aliases.setdefault(_norm(alias).casefold(), [])
                        if page not in bucket:
                            bucket.append(page)
        return self._aliases

    def suggest(self, key: str) -> str | None:
        """A page the user probably meant (same file name), for error messages."""
        name = link_target(key).removesuffix(".md").rsplit("/", 1)[-1].casefold()
        hits = self._by_name.get(name, [])
        return hits[0] if len(hits) == 1 else None


def _nearest(source: str, exc: AmbiguousLink) -> str:
    """Among notes of one name, the one Obsidian opens from ``source``: in its folder, else the shortest path;
    a tie stays ambiguous."""
    folder = posixpath.dirname(source)
    beside = [p for p in exc.candidates if posixpath.dirname(p) == folder]
    if len(beside) == 1:
        return beside[0]
    shortest = min(len(p) for p in exc.candidates)
    best = [p for p in exc.candidates if len(p) == shortest]
    if len(best) == 1:
        return best[0]
    raise exc


def _other_files(vault: "Vault") -> list[str]:
    """Vault paths of the files under the notes folder that are not notes, outside hidden folders; names only,
    nothing is opened, symlinks are not followed."""
    top = str(vault.notes_dir)
    lead = f"{vault.notes_rel}/" if vault.notes_rel else ""
    out = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel_dir = os.path.relpath(folder, top).replace(os.sep, "/")
        prefix = lead + ("" if rel_dir == "." else rel_dir + "/")
        out += [prefix + n for n in names if not n.endswith(".md") and not n.startswith(".")]
    return out


def _read_or_empty(path) -> bytes:
    """A note's bytes for its aliases; a FIFO, device or unreadable note has none (never a blocking read)."""
    from vaulteval.vault.notefiles import read_note_file

    try:
        return read_note_file(path)
    except OSError:
        return b""


def _hint(page: str) -> str:
    stem = page.removesuffix(".md")
    return "/".join(stem.split("/")[-2:])


def page_aliases(raw: bytes) -> list[str]:
    """Usage: ``page_aliases(path.read_bytes())`` -> the aliases in the page's frontmatter."""
    from vaulteval.chunks.chunking import decode_page, parse_frontmatter, split_frontmatter
    from vaulteval.chunks.obsidian import page_aliases as frontmatter_aliases

    text = decode_page(raw)
    if not text.startswith("---\n"):
        return []
    return frontmatter_aliases(parse_frontmatter(split_frontmatter(text)[0]))
