"""Content fingerprints of a vault's pages and of a BM25 index.

Usage::

    fp = vault_fingerprint(vault)       # fp.digest, fp.pages {rel: "sha256:..."}
    index_fingerprint(vault.index())    # "sha256:..." of what the index holds, not of when it was built

A rebuilt index over the same chunks and analyzer has the same fingerprint;
an edited note changes both.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index
    from vaulteval.vault.vault import Vault


@dataclass(frozen=True)
class VaultFingerprint:
    """sha256 over the sorted (page path, sha256 of its bytes) lines."""

    digest: str
    pages: dict[str, str]

    def lines(self) -> str:
        """The per-page list as ``sha256:<hex>  wiki/path.md`` lines (as the run directory stores it)."""
        return "".join(f"{h}  {rel}\n" for rel, h in sorted(self.pages.items()))

    @staticmethod
    def parse_lines(text: str) -> dict[str, str]:
        out = {}
        for line in text.splitlines():
            digest, sep, rel = line.partition("  ")
            if sep:
                out[rel] = digest
        return out

    def diff(self, old: dict[str, str]) -> list[str]:
        """Usage: ``fp.diff(previous_pages)`` -> ["changed: wiki/a.md", "added: ...", "removed: ..."]."""
        out = [f"changed: {rel}" for rel in sorted(old) if rel in self.pages and self.pages[rel] != old[rel]]
        out += [f"added: {rel}" for rel in sorted(set(self.pages) - set(old))]
        out += [f"removed: {rel}" for rel in sorted(set(old) - set(self.pages))]
        return out


def vault_fingerprint(vault: "Vault") -> VaultFingerprint:
    """Usage: ``vault_fingerprint(vault).digest``; reads every note once."""
    pages = {}
    from vaulteval.vault.notefiles import read_note_file

    for page in vault.iter_pages():
        try:
            raw = read_note_file(page.path)
        except OSError:  # a FIFO or unreadable note is not indexed either; never a blocking read
            continue
        pages[page.rel] = "sha256:" + hashlib.sha256(raw).hexdigest()
    h = hashlib.sha256()
    for rel in sorted(pages):
        h.update(f"{pages[rel]}  {rel}\n".encode("utf-8"))
    return VaultFingerprint("sha256:" + h.hexdigest(), pages)


def index_fingerprint(index: "BM25Index") -> str:
    """sha256 over the analyzer, chunk parameters and every indexed chunk's ids and content hashes."""
    h = hashlib.sha256()
    head = {"analyzer": index.analyzer_name, "analyzer_version": index.header.get("analyzer_version"),
            "chunk_params": index.header.get("chunk_params"),
            "schema_version": index.header.get("schema_version")}
    h.update(json.dumps(head, sort_keys=True).encode("utf-8"))
    rows = sorted((d.chunk_id, d.page_path, d.body_hash, d.page_body_hash, d.context_hash) for d in index.iter_docs())
    for row in rows:
        h.update("\t".join(row).encode("utf-8") + b"\n")
    return "sha256:" + h.hexdigest()
