"""``vaulteval read``: one note, confined, with what an agent needs to cite it.

Usage::

    view = read_note(vault, "wiki/howto/Descaling.md", heading="How often")
    view["headings"][0]["link"]        # "[[Descaling#How often]]"

A page is a vault-relative path or a ``[[wikilink]]`` (resolved as Obsidian
does). Links and backlinks are resolved as Obsidian resolves a link in a note
(``LinkResolver.link_status``): a path relative to the note, a path from the
vault root, the shortest unique name, then aliases; Markdown links relative to
the linking note first. Every string returned is the
note's own text: data, never instructions.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from vaulteval.chunks import obsidian
from vaulteval.chunks.chunking import decode_page, parse_frontmatter, sha256_bytes, split_frontmatter
from vaulteval.chunks.links import AmbiguousLink, LinkResolver, UnknownLink, is_wikilink
from vaulteval.errors import PageMissing, VaultevalError
from vaulteval.notes.text import read_note_bytes

if TYPE_CHECKING:
    from collections.abc import Callable

    from vaulteval.vault.vault import Vault

SCHEMA = "vaulteval.read.v1"
HEADINGS_SHOWN = 50  # an error names this many headings of the note, then says how many more there are


def _json_safe(value: Any) -> Any:
    """YAML dates and other non-JSON values as strings."""
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def resolve_link(resolver: LinkResolver, source: str, link: dict) -> tuple[str | None, str]:
    """(page path or None, status) for one link of ``source``; status: resolved, unresolved, ambiguous, not-a-note
    (see ``LinkResolver.link_status``)."""
    return resolver.link_status(source, link["target"], markdown=link["kind"] == "markdown")


def cite_name(resolver: LinkResolver, rel: str) -> str:
    """The shortest name that links to ``rel`` in Obsidian: the file name when unique, else more of the path."""
    stem = rel.removeprefix(resolver.lead).removesuffix(".md")
    parts = stem.split("/")
    for n in range(1, len(parts) + 1):
        name = "/".join(parts[-n:])
        try:
            if resolver.resolve(f"[[{name}]]") == rel:
                return name
        except (AmbiguousLink, UnknownLink):
            continue
    return stem


def _section(lines: list[str], heads: list[dict], wanted: str, offset: int, rel: str) -> tuple[str, int, int]:
    """The text under heading ``wanted`` (to the next heading of the same or a higher level) and its line span."""
    key = wanted.strip().lstrip("#").strip().casefold()
    for i, head in enumerate(heads):
        if head["text"].casefold() == key:
            end = next((h["line"] for h in heads[i + 1:] if h["level"] <= head["level"]), len(lines) + 1)
            first, last = head["line"] - 1, end - 1
            return "\n".join(lines[first:last]).rstrip("\n"), head["line"] + offset, last + offset
    names = "; ".join(h["text"] for h in heads[:HEADINGS_SHOWN]) or "none"
    if len(heads) > HEADINGS_SHOWN:
        names += f"; and {len(heads) - HEADINGS_SHOWN} more (vaulteval read {rel} lists them all)"
    raise PageMissing(f"{rel} has no heading {wanted!r} (headings: {names})")


def read_note(vault: "Vault", page: str, *, heading: str | None = None,
              resolver: LinkResolver | None = None,
              backlinks_of: "Callable[[str], list[dict]] | None" = None) -> dict:
    """One note as a dict (see docs/json.md, ``vaulteval read``); raises PathEscape (2) or PageMissing (3).

    ``resolver`` and ``backlinks_of`` may come from a caller that keeps them for the vault as it is now
    (the MCP server's ``vaulteval.server.links.LinkTable``); otherwise the vault is scanned for them."""
    resolver = resolver or LinkResolver.from_vault(vault)
    rel = vault.page_rel(page.replace("\\", "/").removeprefix("./")) if not is_wikilink(page) else page
    bare = not rel.endswith(".md") and not rel.startswith("/") and ".." not in rel.split("/")
    if not is_wikilink(page) and bare and not resolver.has_page(rel):
        page = f"[[{page.strip()}]]"  # a bare note name ("Descaling", "howto/Descaling#How often"), as Obsidian
    if is_wikilink(page):
        try:
            rel = resolver.open_link(page)
        except UnknownLink as exc:
            raise PageMissing(str(exc)) from None
        linked = page.strip()[2:-2].split("|", 1)[0].partition("#")[2].strip()
        # [[Page#Heading]] reads that section; a [[Page#^block]] reference reads the whole note.
        heading = heading or (linked if linked and not linked.startswith("^") else None)
    rel = vault.linked_note(rel) or rel  # a symlink to another note is that note
    raw, truncated = read_note_bytes(vault, rel)
    text = decode_page(raw)
    fm_text, body = split_frontmatter(text)
    offset = text[: len(text) - len(body)].count("\n")  # body line 1 is file line offset + 1
    name = cite_name(resolver, rel)
    heads = obsidian.headings(body)
    lines = body.split("\n")
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "page_path": rel,
        "title": name.rsplit("/", 1)[-1],
        "link": f"[[{name}]]",
        "sha256": sha256_bytes(raw),
        "truncated": truncated,
        "frontmatter": _json_safe(parse_frontmatter(fm_text)),
        "headings": [{**h, "line": h["line"] + offset, "link": f"[[{name}#{h['text']}]]"} for h in heads],
    }
    if heading:
        section, first, last = _section(lines, heads, heading, offset, rel)
        out["section"] = {"heading": heading, "first_line": first, "last_line": last}
        out["text"] = section
    else:
        out["text"] = body
    out["body_first_line"] = offset + 1
    out["links"] = []
    for link in obsidian.outgoing_links(body):
        target, status = resolve_link(resolver, rel, link)
        out["links"].append({**link, "line": link["line"] + offset, "page_path": target, "status": status})
    out["backlinks"] = backlinks_of(rel) if backlinks_of is not None else backlinks(vault, resolver, rel)
    return out


def backlinks(vault: "Vault", resolver: LinkResolver, rel: str) -> list[dict]:
    """Every link in another note (or this one) that resolves to ``rel``: ``{"page_path", "line", "raw"}``."""
    found = []
    for page in vault.iter_pages():
        try:
            raw, _ = read_note_bytes(vault, page.rel)
        except (VaultevalError, OSError):
            continue
        text = decode_page(raw)
        _, body = split_frontmatter(text)
        offset = text[: len(text) - len(body)].count("\n")
        for link in obsidian.outgoing_links(body):
            if link["target"] and resolve_link(resolver, page.rel, link) == (rel, "resolved"):
                found.append({"page_path": page.rel, "line": link["line"] + offset, "raw": link["raw"]})
    return found
