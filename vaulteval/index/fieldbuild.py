"""Build the field index (title, aliases, headings, code) for the documents of a freshly built main index.

Usage (under the vault lock, right after ``build_index``): ``build_fields(vault, index, meta)``.

Title is the page's ``title:`` and its file name; aliases come from
``aliases:``/``alias:`` in the front matter; headings are the chunk's Markdown
``#`` lines; code is the text inside the chunk's fenced code blocks (``` or
~~~; a fence left open at the end of a chunk runs to its end). Each field is
analyzed with the index's analyzer.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from vaulteval.chunks.chunking import parse_page
from vaulteval.chunks.integrity import IntegrityChecker
from vaulteval.chunks.store import progress_bar
from vaulteval.errors import PathEscape
from vaulteval.index.fields import FIELDS, FIELDS_KIND, fields_path, index_identity
from vaulteval.index.file import write_sections
from vaulteval.index.tokenize import get_analyzer
from vaulteval.vault.paths import open_confined

if TYPE_CHECKING:
    from vaulteval.index.reader import BM25Index
    from vaulteval.vault.metadir import MetaDir
    from vaulteval.vault.vault import Vault

HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def code_text(text: str) -> str:
    """Usage: ``code_text(chunk)`` -> the lines inside fenced code blocks, joined by newlines."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = FENCE_RE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
            continue
        if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
            fence = None
            continue
        out.append(line)
    return "\n".join(out)


def headings_text(text: str) -> str:
    """Usage: ``headings_text(chunk)`` -> the chunk's ATX headings outside code blocks, one per line."""
    prose = []
    fence: str | None = None
    for line in text.split("\n"):
        m = FENCE_RE.match(line)
        if m:
            fence = None if fence else m.group(1)
            continue
        if fence is None:
            prose.append(line)
    return "\n".join(HEADING_RE.findall("\n".join(prose)))


def _aliases(frontmatter: dict[str, Any]) -> str:
    found = []
    for key in ("aliases", "alias"):
        value = frontmatter.get(key)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found.extend(str(v) for v in value if isinstance(v, (str, int, float)))
    return "\n".join(found)


def build_fields(vault: "Vault", index: "BM25Index", meta: "MetaDir") -> int:
    """Write ``bm25/fields.vti`` for ``index``'s documents; returns its size in bytes."""
    analyze = get_analyzer(index.analyzer_name)
    checker = IntegrityChecker(vault)
    page_fields: dict[str, tuple[list[str], list[str]]] = {}
    per_field: dict[str, list[Counter]] = {name: [] for name in FIELDS}
    docs = index.all_docs()
    for doc in progress_bar(docs, len(docs), "fields", "chunk"):
        if doc.page_path not in page_fields:
            title, aliases = "", ""
            try:
                with open_confined(vault.notes_dir, doc.page_path, strip=vault.notes_strip) as fh:
                    page = parse_page(fh.read(), doc.page_path)
                stem = doc.page_path.rsplit("/", 1)[-1].removesuffix(".md")
                title = page.title if page.title == stem else f"{page.title}\n{stem}"
                aliases = _aliases(page.frontmatter)
            except (OSError, ValueError, PathEscape):
                pass
            page_fields[doc.page_path] = (analyze(title), analyze(aliases))
        rec = checker.record(doc) or {}
        raw = rec.get("raw_text") if isinstance(rec.get("raw_text"), str) else ""
        title_terms, alias_terms = page_fields[doc.page_path]
        per_field["title"].append(Counter(title_terms))
        per_field["aliases"].append(Counter(alias_terms))
        per_field["headings"].append(Counter(analyze(headings_text(raw))))
        per_field["code"].append(Counter(analyze(code_text(raw))))
    sections: dict[str, Any] = {}
    for name, docs in per_field.items():
        sections.update(_postings(name, docs))
    header = {"kind": FIELDS_KIND, "fields": list(FIELDS), "n_docs": index.n_docs,
              "index_identity": index_identity(index), "analyzer": index.analyzer_name}
    with meta.sub(fields_path(meta.path).parent.name, create=True) as folder:
        return write_sections(folder, fields_path(meta.path).name, header, sections)


def _postings(name: str, docs: list[Counter]) -> dict[str, Any]:
    vocab = sorted({t for counts in docs for t in counts})
    ids = {t: i for i, t in enumerate(vocab)}
    triples = sorted((ids[t], d, n) for d, counts in enumerate(docs) for t, n in counts.items())
    arr = np.array(triples, dtype=np.int64).reshape(-1, 3)
    df = np.bincount(arr[:, 0], minlength=len(vocab)) if len(vocab) else np.zeros(0, np.int64)
    post_off = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(df, out=post_off[1:])
    lengths = np.array([sum(c.values()) for c in docs], dtype=np.int32)
    return {f"{name}.terms": "".join(t + "\n" for t in vocab).encode("utf-8"), f"{name}.post_offsets": post_off,
            f"{name}.post_docs": arr[:, 1].astype(np.int32), f"{name}.post_tfs": arr[:, 2].astype(np.int32),
            f"{name}.doc_len": lengths}
