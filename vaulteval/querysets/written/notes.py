"""What a worksheet knows about each note: its visible text, language, length, link degree and folder.

Usage::

    notes = read_notes(vault)          # list[NoteFacts] in path order, one per readable note
    notes[0].text, notes[0].language   # the text as indexed (frontmatter left out), "en"

The text is the body as Obsidian's reading view shows it, the text the index cuts into chunks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaulteval.vault.notefiles import read_note_file

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

MAX_NOTE_BYTES = 2_000_000  # a larger file is data, not a note
STUB_LETTERS = 200  # a note whose visible text has fewer letters has too little to ask about
_LETTER = re.compile(r"[^\W\d_]")
_LINK = re.compile(r"(?<!!)\[\[([^\[\]\n|#]+)")
_PLACEHOLDER = re.compile(r"\{\{[^{}\n]{1,60}\}\}|<%[^\n]{0,200}%>")
_TEMPLATE_DIR = re.compile(r"(?i)(^|/)[^/]*templates?[^/]*/")


@dataclass
class NoteFacts:
    """One note as the sampler sees it."""

    path: str
    note_hash: str
    title: str
    text: str
    language: str
    folder: str
    letters: int
    out_links: tuple[str, ...]
    template: bool
    in_links: int = 0

    @property
    def stub(self) -> bool:
        return self.letters < STUB_LETTERS

    @property
    def degree(self) -> int:
        return len(self.out_links) + self.in_links


def note_hash(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def folder_of(path: str) -> str:
    """The note's first two folders: the unit a vault's topics are usually kept in."""
    parts = path.split("/")[:-1]
    return "/".join(parts[:2]) or "(root)"


def note_facts(path: str, raw: bytes) -> NoteFacts:
    """Usage: ``note_facts("a/b.md", data)``."""
    from vaulteval.chunks.obsidian import visible_text
    from vaulteval.chunks.chunking import parse_frontmatter
    from vaulteval.chunks.pagetext import decode_page, split_frontmatter
    from vaulteval.index.langs.identify import identify

    fm_text, body = split_frontmatter(decode_page(raw))
    text = visible_text(body).strip()
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    heading = re.match(r"\s*#\s+(.+)", text)
    named = parse_frontmatter(fm_text).get("title") if fm_text is not None else None
    title = str(named).strip() if named not in (None, "") else heading.group(1).strip() if heading else stem
    links = tuple(m.group(1).strip().rsplit("/", 1)[-1].casefold() for m in _LINK.finditer(body))
    template = bool(_TEMPLATE_DIR.search(path)) or bool(_PLACEHOLDER.search(body))
    return NoteFacts(path=path, note_hash=note_hash(raw), title=title, text=text,
                     language=identify(text) if text else "und", folder=folder_of(path),
                     letters=len(_LETTER.findall(text)), out_links=links, template=template)


def read_notes(vault: "Vault") -> list[NoteFacts]:
    """Every readable note of the vault (Obsidian's exclusions and dot-folders left out), with in-links counted."""
    out: list[NoteFacts] = []
    for page in vault.iter_pages():
        try:
            raw = read_note_file(page.abspath, MAX_NOTE_BYTES)
        except OSError:
            continue
        if len(raw) <= MAX_NOTE_BYTES:
            out.append(note_facts(page.rel, raw))
    by_stem: dict[str, list[NoteFacts]] = {}
    for note in out:
        by_stem.setdefault(note.path.rsplit("/", 1)[-1].removesuffix(".md").casefold(), []).append(note)
    for note in out:
        for target in set(note.out_links):
            for linked in by_stem.get(target, ()):
                if linked is not note:
                    linked.in_links += 1
    return out
