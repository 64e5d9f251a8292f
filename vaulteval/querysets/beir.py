"""Turn a BEIR dataset into a vault plus a query set.

Usage::

    report = import_beir("/data/scifact", "/tmp/scifact-vault", split="test")
    # /tmp/scifact-vault/wiki/<doc id>.md, one note per document
    # /tmp/scifact-vault/querysets/scifact-test.yaml (relevant keys are vault paths)

Each note has ``title`` and ``beir_id`` in its frontmatter and the document text
as its body. File names are the percent-encoded document id (``wiki/4983.md``),
so the mapping is reversible and the BEIR loader in ``querysets`` resolves raw
corpus ids too. The query set lives in the vault folder but outside ``wiki/``
and ``.vault-meta/``, so it is neither indexed nor derived state; its
``vault: ..`` points back at the vault.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from vaulteval.errors import UsageError
from vaulteval.querysets.docids import MAX_NAME_BYTES, beir_page_path  # noqa: F401
from vaulteval.vault.paths import home_path



class ImportTargetNotEmpty(UsageError):
    """The import's --out folder already holds files."""





def _open_corpus(folder: Path):
    for name in ("corpus.jsonl", "corpus.jsonl.gz"):
        path = folder / name
        if path.is_file():
            return path, (gzip.open(path, "rt", encoding="utf-8") if name.endswith(".gz") else open(path, encoding="utf-8"))
    raise UsageError(f"{folder} has no corpus.jsonl or corpus.jsonl.gz; pass a BEIR dataset folder")


def note_text(doc: dict[str, Any]) -> str:
    """The Markdown of one document: frontmatter (title, beir_id) and the text as body."""
    title = " ".join(str(doc.get("title") or "").split())
    lines = ["---", f"beir_id: {json.dumps(str(doc['_id']), ensure_ascii=False)}"]
    if title:
        lines.append(f"title: {json.dumps(title, ensure_ascii=False)}")
    lines += ["---", "", str(doc.get("text") or "").strip(), ""]
    return "\n".join(lines)


def import_beir(src: str | os.PathLike[str], out: str | os.PathLike[str], *, split: str = "test",
                name: str | None = None) -> dict[str, Any]:
    """Write one note per corpus document and ``querysets/<name>-<split>.yaml``; returns counts and paths."""
    import yaml

    from vaulteval.querysets.queryset import load_queryset

    folder, target = home_path(src).resolve(), home_path(out).resolve()
    if target.exists() and any(target.iterdir()):
        raise ImportTargetNotEmpty(f"{target} exists and is not empty; choose a new --out folder")
    corpus_path, corpus = _open_corpus(folder)
    (target / "wiki").mkdir(parents=True, exist_ok=True)
    seen: dict[str, str] = {}
    count = 0
    with corpus:
        for number, line in enumerate(corpus, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                doc_id = str(doc["_id"])
            except (ValueError, KeyError, TypeError):
                raise UsageError(f"{corpus_path}:{number}: expected a JSON object with _id") from None
            rel = beir_page_path(doc_id)
            folded = rel.casefold()
            if folded in seen:
                raise UsageError(f"{corpus_path}:{number}: document ids {seen[folded]!r} and {doc_id!r} "
                                 "map to the same file name on case-insensitive disks")
            seen[folded] = doc_id
            (target / rel).write_text(note_text(doc), encoding="utf-8")
            count += 1
    (target / ".vaulteval.json").write_text(json.dumps({"name": name or folder.name}) + "\n", encoding="utf-8")
    qs_name = f"{name or folder.name}-{split}"
    source = load_queryset(folder, target, split=split)
    queries = [{"id": q.query_id, "query": q.text, "relevant": dict(q.relevant), "tags": ["beir"]}
               for q in source.queries]
    doc = {"name": qs_name, "vault": "..", "source": {"beir": str(folder), "split": split, "sha256": source.sha256},
           "queries": queries}
    qs_path = target / "querysets" / f"{qs_name}.yaml"
    qs_path.parent.mkdir(exist_ok=True)
    qs_path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10_000), encoding="utf-8")
    return {"vault": str(target), "documents": count, "queries": len(queries), "queryset": str(qs_path),
            "next": f"vaulteval provision --vault {target} --analyzer english"}
