"""Judgment keys to pages. Wikilink resolution itself lives in :mod:`vaulteval.chunks.links` (the note
reader needs it too); its names are re-exported here for query-set code.

Usage: ``resolve_key(LinkResolver.from_vault(vault), "[[Grinder]]")`` -> ``"wiki/coffee/Grinder.md"``
"""

from __future__ import annotations

import unicodedata
from typing import Any

from vaulteval.chunks.links import AmbiguousLink, LinkResolver, UnknownLink, is_wikilink, link_target, page_aliases
from vaulteval.querysets.docids import beir_page_path

__all__ = ["AmbiguousLink", "LinkResolver", "UnknownLink", "is_wikilink", "link_target", "page_aliases",
           "resolve_key"]


def resolve_key(resolver: LinkResolver, key: Any, doc_ids: bool = False) -> str:
    """A judgment key -> page path: a wikilink, a vault path or a path relative to the notes folder, or
    (``doc_ids``) a BEIR/TREC document id."""
    if not isinstance(key, str) or not key.strip():
        raise UnknownLink(f"key {key!r} is not a page path or [[wikilink]]")
    if is_wikilink(key):
        return resolver.resolve(key)
    path = key.strip().replace("\\", "/").removeprefix("./")
    for page in (path, resolver.lead + path):  # vault-relative, or relative to the notes folder
        if resolver.has_page(page):
            return unicodedata.normalize("NFC", page)
    if doc_ids:
        page = beir_page_path(path)
        if resolver.has_page(page):
            return page
    hint = resolver.suggest(path)
    tip = f"; did you mean {hint}?" if hint else "; give the note's vault-relative path or a [[wikilink]]"
    raise UnknownLink(f"unknown page {path}{tip}")
