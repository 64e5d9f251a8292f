"""The vault's link table for ``read`` and ``read_many``: kept between calls, rebuilt when a note changed.

Usage::

    table = LinkTable(vault)
    resolver, backlinks_of = table.current()     # one listing and one stat per note; re-reads changed notes only
    read_note(vault, "[[Descaling]]", resolver=resolver, backlinks_of=backlinks_of)

Resolving a ``[[link]]`` and finding a note's backlinks need every note of the
vault. The table remembers each note's outgoing links with the note's stat
signature (device, inode, size, mtime, ctime). Each call lists the notes and
stats each one; while the listing and every signature are the same, the
resolver and the backlinks are reused. Otherwise the notes whose signature
changed are read again, and every link is resolved again (a new or renamed
note can change where an unchanged link leads). A note modified within the
last two seconds may change again within one timestamp tick, so its links are
read again on the next call (the racy-file rule, as the integrity checker has it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from vaulteval.chunks import obsidian
from vaulteval.chunks.chunking import decode_page, split_frontmatter
from vaulteval.chunks.links import LinkResolver
from vaulteval.errors import VaultevalError
from vaulteval.notes.read import resolve_link
from vaulteval.notes.text import read_note_bytes

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

_RACY_SECONDS = 2.0


def _signature(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _links_of(vault: "Vault", rel: str) -> list[dict] | None:
    """A note's links with file line numbers; None when it cannot be read now (it has no backlinks to give)."""
    try:
        raw, _ = read_note_bytes(vault, rel)
    except (VaultevalError, OSError):
        return None
    text = decode_page(raw)
    _, body = split_frontmatter(text)
    offset = text[: len(text) - len(body)].count("\n")
    return [{**link, "line": link["line"] + offset} for link in obsidian.outgoing_links(body) if link["target"]]


class LinkTable:
    """Pages, links and backlinks of one vault, shared by the server's calls (thread-safe)."""

    def __init__(self, vault: "Vault"):
        self.vault = vault
        self._lock = threading.Lock()
        self._links: dict[str, tuple[tuple | None, list[dict] | None]] = {}
        self._signatures: dict[str, tuple | None] | None = None
        self._racy = False
        self._state: tuple[LinkResolver, dict[str, list[dict]]] | None = None
        self.rebuilt = 0  # how many times the table was worked out (tests read it)

    def current(self) -> tuple[LinkResolver, Callable[[str], list[dict]]]:
        """The resolver and a ``backlinks_of(rel)`` for the vault as it is now."""
        signatures = {page.rel: _signature(page.path) for page in self.vault.iter_pages()}
        with self._lock:
            if self._state is None or self._racy or signatures != self._signatures:
                self._state = self._rebuild(signatures)
            resolver, backlinks = self._state
        return resolver, lambda rel: [dict(link) for link in backlinks.get(rel, ())]

    def _rebuild(self, signatures: dict[str, tuple | None]) -> tuple[LinkResolver, dict[str, list[dict]]]:
        recent = (time.time() - _RACY_SECONDS) * 1e9
        links, racy = {}, False
        for rel, sig in signatures.items():
            old = self._links.get(rel)
            if old is not None and sig is not None and old[0] == sig and sig[3] < recent:
                links[rel] = old
            else:
                links[rel] = (sig, _links_of(self.vault, rel))
                racy = racy or sig is None or sig[3] >= recent
        resolver = LinkResolver.from_vault(self.vault)
        backlinks: dict[str, list[dict]] = {}
        for rel, (_, found) in links.items():  # listing order is page order, as a scan of the vault gives
            for link in found or ():
                target, status = resolve_link(resolver, rel, link)
                if status == "resolved":
                    backlinks.setdefault(target, []).append({"page_path": rel, "line": link["line"],
                                                             "raw": link["raw"]})
        self._links, self._signatures, self._racy = links, signatures, racy
        self.rebuilt += 1
        return resolver, backlinks
