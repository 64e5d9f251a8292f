"""Frontmatter, paragraph chunks and the synthetic contextual prefix.

Usage::

    page = parse_page(raw_bytes, "wiki/howto/Descaling.md")
    pieces = split_chunks(page.body)              # list of raw chunk texts
    prefix = synthetic_prefix(page.title, page.body)
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from vaulteval.chunks.limits import HARD_MAX_CHARS, MAX_PREFIX_CHARS, OVERLAP_CHARS, TARGET_CHARS  # noqa: F401
from vaulteval.chunks.pagetext import (  # noqa: F401 - imported from here too
    DEFAULT_MAX_NOTE_BYTES,
    MAX_NOTE_BYTES_ENV,
    decode_page,
    indexed_part,
    max_note_bytes,
    split_frontmatter,
)

log = logging.getLogger(__name__)

FIRST_SENTENCE_CHARS = 300

ADDRESS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_PARAGRAPH_SPLIT = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_LEADING_SPACE = re.compile(r"\s*")  # \s is str.isspace, what str.strip removes


def sha256_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def synthetic_address(page_rel: str) -> str:
    """A stable address for a page without ``address:``; 12 hex digits keep large vaults collision-free."""
    return "syn-" + hashlib.sha1(page_rel.encode("utf-8")).hexdigest()[:12]


@dataclass
class ParsedPage:
    rel: str
    title: str
    address: str | None
    body: str
    frontmatter: dict[str, Any] = field(default_factory=dict)


def parse_frontmatter(fm_text: str | None, rel: str | None = None) -> dict[str, Any]:
    """A note's properties: {} when it has none, or when its front matter is not YAML vaulteval reads (not a
    mapping, invalid, or past the bounds of ``vault.bounded``: an alias bomb, deep nesting). With ``rel``, a
    refused front matter is said in one warning naming the note; the note's text is indexed all the same."""
    if not fm_text:
        return {}
    from vaulteval.vault.bounded import Refused, load_yaml

    try:
        data = load_yaml(fm_text)
    except Refused as exc:
        if rel is not None:
            from vaulteval.vault.notefiles import printable

            # The front matter starts on the note's line 2: the parser counts from the line after '---'.
            where = f" (line {exc.line + 1})" if exc.line is not None else ""
            log.warning("%s: front matter ignored, %s%s; the note is indexed without its properties",
                        printable(rel), printable(exc.problem), where)
        return {}
    return data if isinstance(data, dict) else {}


def indexable_bytes(raw: bytes, rel: str, limit: int) -> bytes:
    """``indexed_part``, with a warning naming a note that was cut."""
    part = indexed_part(raw, limit)
    if len(part) < len(raw):
        from vaulteval.vault.notefiles import printable

        log.warning("%s is %d bytes; indexing its first %d (raise %s to index more)", printable(rel), len(raw),
                    len(part), MAX_NOTE_BYTES_ENV)
    return part


def parse_page(raw: bytes, rel: str) -> ParsedPage:
    text = decode_page(raw)
    fm_text, body = split_frontmatter(text)
    fm = parse_frontmatter(fm_text, rel)
    stem = rel.rsplit("/", 1)[-1].removesuffix(".md")
    title = fm.get("title")
    title = str(title).strip() if title not in (None, "") else stem
    address = fm.get("address")
    address = str(address).strip() if address not in (None, "") else None
    if address is not None and not ADDRESS_RE.match(address):
        log.warning("%s: ignoring unusable address %r (letters, digits, . _ - only)", rel, address)
        address = None
    return ParsedPage(rel=rel, title=title, address=address, body=body, frontmatter=fm)


def _hard_split(paragraph: str, target: int, hard_max: int) -> list[tuple[str, bool]]:
    """Cut an over-long (stripped) paragraph into pieces near ``target`` chars, at a space when possible.

    Each piece comes with ``glued``: True when the note has no whitespace between it and the piece before
    (a cut inside a run without spaces, as in Chinese or Japanese text), so the chunk joins the two as they
    are written instead of putting a paragraph break between them.
    It walks an offset instead of copying the rest of the text at every cut, so a
    note of one huge paragraph costs linear time.
    """
    pieces: list[tuple[str, bool]] = []
    start, end = 0, len(paragraph)
    glued = False
    while end - start > hard_max:
        cut = paragraph.rfind(" ", start + target // 2, start + target) - start
        if cut <= 0:
            cut = target
        pieces.append((paragraph[start : start + cut].strip(), glued))
        start = _LEADING_SPACE.match(paragraph, start + cut).end()
        glued = not paragraph[start - 1].isspace()
    if start < end:
        pieces.append((paragraph[start:], glued))
    return [p for p in pieces if p[0]]


def _overlap_tail(text: str, overlap: int) -> str:
    if overlap <= 0 or len(text) <= overlap:
        return ""
    tail = text[-overlap:]
    space = tail.find(" ")
    # Start the overlap at a word boundary when one is near.
    if 0 <= space < overlap // 2:
        tail = tail[space + 1 :]
    return tail.strip()


def split_chunks(
    body: str,
    target: int = TARGET_CHARS,
    overlap: int = OVERLAP_CHARS,
    hard_max: int = HARD_MAX_CHARS,
) -> list[str]:
    """Usage: ``split_chunks(body)``: paragraph-aligned chunks of ~target chars, overlapping, never over hard_max.

    Every chunk is text of ``body`` with only whitespace changed where paragraphs meet: a piece of a cut
    paragraph that the note writes with no whitespace before it follows the text before it with none.
    """
    paragraphs: list[tuple[str, bool]] = []
    for para in _PARAGRAPH_SPLIT.split(body):
        para = para.strip()
        if para:
            paragraphs.extend(_hard_split(para, target, hard_max) if len(para) > hard_max else [(para, False)])
    chunks: list[str] = []
    current: list[str] = []  # the chunk's parts, each after the first with the separator before it
    size = 0  # sum(len(p) + 2 for p in current), kept as a running total
    fresh = 0  # paragraphs in `current` that are not the previous chunk's overlap tail

    def flush() -> None:
        nonlocal current, fresh, size
        chunks.append("".join(current))
        tail = _overlap_tail(chunks[-1], overlap)
        current, fresh = ([tail] if tail else []), 0
        size = len(tail) + 2 if tail else 0

    for para, glued in paragraphs:
        if fresh and size + len(para) > hard_max:
            flush()
        if current and size + len(para) > hard_max:
            current, size = [], 0  # the overlap tail itself would break the hard limit
        # A glued piece follows the text it continues: the piece before it, or that piece's overlap tail.
        current.append(para if glued or not current else "\n\n" + para)
        size += len(para) + 2
        fresh += 1
        if size >= target:
            flush()
    if fresh:
        chunks.append("".join(current))
    return chunks


def first_sentence(body: str, limit: int = FIRST_SENTENCE_CHARS) -> str:
    for para in _PARAGRAPH_SPLIT.split(body):
        lines = [ln for ln in para.strip().splitlines() if ln.strip() and not _HEADING.match(ln)]
        if not lines:
            continue
        text = " ".join(ln.strip() for ln in lines)
        return _SENTENCE_END.split(text, maxsplit=1)[0][:limit].strip()
    return ""


def synthetic_prefix(title: str, body: str) -> str:
    """Usage: ``synthetic_prefix("Descaling", body)``: page title plus its first sentence, local only."""
    first = first_sentence(body)
    prefix = f"{title}. {first}" if first else f"{title}."
    return prefix[:MAX_PREFIX_CHARS]


def contextualize(prefix: str, raw_text: str) -> str:
    return f"{prefix}\n\n{raw_text}" if prefix else raw_text
