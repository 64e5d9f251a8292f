"""BEIR/TREC document ids as page paths: one safe, reversible file name per id.

Usage: ``beir_page_path("4983")`` -> ``"wiki/4983.md"``.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote

MAX_NAME_BYTES = 200


def beir_page_path(doc_id: str) -> str:
    """Usage: ``beir_page_path("4983")`` -> ``"wiki/4983.md"``; safe, reversible, never a dot-file."""
    name = quote(str(doc_id), safe="-_ ")
    if name.startswith("."):
        name = "%2E" + name[1:]
    name = name.strip() or "%20"
    if name.endswith(" "):
        name = name[:-1] + "%20"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        digest = hashlib.sha1(str(doc_id).encode("utf-8")).hexdigest()[:16]
        name = name[: MAX_NAME_BYTES - 20] + "~" + digest
    return f"wiki/{name}.md"
