"""What the generator knows about each page: title, aliases, headings, links, tags, folder, hash.

Usage::

    facts = read_pages(vault, progress=report)    # list[PageFacts], in path order
    facts[0].title, facts[0].headings             # [(line, "Heading text"), ...]

Everything is read from the page bytes once; line numbers are 1-based and
count the frontmatter, so they point into the file as an editor shows it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vaulteval.vault.notefiles import read_note_file

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
LINK_RE = re.compile(r"(?<!!)\[\[([^\[\]\n]+?)\]\]")  # a [[link]], not an ![[embed]]
_TAG_RE = re.compile(r"(?<![\w#&/])#([^\W\d][\w/-]*)")
_FORMAT_RE = re.compile(r"[*_`>]+|\{\{|\}\}|<[^>\n]*>|^\s*[-+*]\s+|^\s*\d+[.)]\s+")
_MAX_PAGE_BYTES = 2_000_000  # a larger file is data, not a note: skipped


@dataclass
class PageFacts:
    """One page as the generator sees it; ``lines`` is the page text split into lines (1-based via index+1)."""

    rel: str
    sha256: str
    address: str | None
    title: str
    title_line: int
    aliases: list[str] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    links: list[tuple[int, str, str]] = field(default_factory=list)  # (line, [[raw link]], the line's text)
    tags: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    body_start: int = 1
    text: str = ""

    @property
    def folder(self) -> str:
        """The top folder under the notes root, ``(root)`` for a page directly in it."""
        parts = self.rel.split("/")
        if parts[0] == "wiki" and len(parts) > 1:
            parts = parts[1:]
        return parts[0] if len(parts) > 1 else "(root)"

    @property
    def stratum(self) -> str:
        """Folder and first tag: the unit of stratified sampling."""
        return f"{self.folder}|{self.tags[0] if self.tags else ''}"

    def body_lines(self) -> list[tuple[int, str]]:
        """(line number, text) of every line after the frontmatter."""
        return [(i, self.lines[i - 1]) for i in range(self.body_start, len(self.lines) + 1)]


def plain(text: str) -> str:
    """Markdown line -> plain words: list markers, emphasis, code ticks, placeholders and HTML removed."""
    return " ".join(_FORMAT_RE.sub(" ", text).split())


def _as_list(value: object, separators: str = ",") -> list[str]:
    """A frontmatter list or a string split at ``separators`` as names; mappings and nested lists are no names."""
    if isinstance(value, str):
        return [v.strip() for v in re.split(f"[{separators}]+", value) if v.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)
                and str(v).strip()]
    return []


def page_facts(rel: str, raw: bytes) -> PageFacts:
    """Usage: ``page_facts("wiki/a.md", path.read_bytes())``."""
    from vaulteval.chunks.chunking import ADDRESS_RE, decode_page, parse_frontmatter, split_frontmatter
    from vaulteval.chunks.obsidian import property_value
    from vaulteval.querysets.generate.prose import prose

    text = decode_page(raw)
    fm_text, body = split_frontmatter(text)
    fm = parse_frontmatter(fm_text)
    lines = text.split("\n")
    body_start = text.count("\n", 0, len(text) - len(body)) + 1 if fm_text is not None else 1
    address = fm.get("address")
    address = str(address).strip() if address not in (None, "") else None
    if address is not None and not ADDRESS_RE.match(address):
        address = None
    stem = rel.rsplit("/", 1)[-1].removesuffix(".md")
    facts = PageFacts(rel=rel, sha256="sha256:" + hashlib.sha256(raw).hexdigest(), address=address,
                      title=stem, title_line=1, lines=lines, body_start=body_start, text=text)
    facts.aliases = list(dict.fromkeys(_as_list(property_value(fm, "aliases"))))
    tags = [t.lstrip("#") for t in _as_list(property_value(fm, "tags"), separators=r",\s")]
    in_fence, titled = False, False
    for number, line in facts.body_lines():
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = _HEADING_RE.match(line)
        if heading:
            words = prose(heading.group(2))
            if len(heading.group(1)) == 1 and not titled and not facts.headings:
                facts.title, facts.title_line, titled = words or stem, number, True
            elif words:
                facts.headings.append((number, words))
            continue
        facts.links += [(number, m.group(0), line) for m in LINK_RE.finditer(line)]
        tags += _TAG_RE.findall(line)
    if fm.get("title") not in (None, ""):
        facts.title, facts.title_line = str(fm["title"]).strip(), 1
    facts.tags = list(dict.fromkeys(t for t in tags if t))
    return facts


def read_pages(vault: "Vault", progress: Callable[[str, int, int], None] | None = None) -> list[PageFacts]:
    """Every page of the vault, read once; unreadable or huge files are skipped."""
    pages = list(vault.iter_pages())
    out: list[PageFacts] = []
    for i, page in enumerate(pages, 1):
        try:
            raw = read_note_file(page.abspath, _MAX_PAGE_BYTES)  # a FIFO is refused, never read
        except OSError:
            continue
        if len(raw) <= _MAX_PAGE_BYTES:
            out.append(page_facts(page.rel, raw))
        if progress is not None and (i % 2000 == 0 or i == len(pages)):
            progress("reading pages", i, len(pages))
    return out
