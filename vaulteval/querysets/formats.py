"""Readers for the query set formats, keeping the line of everything they read.

Usage: ``raw = read_yaml(Path("querysets/sample-vault.yaml"))``; ``querysets.load_queryset``
resolves and validates the result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaulteval.querysets.problems import QUERY_FIELDS, Problem, QuerySetInvalid, file_sha256, read_set_file, set_text
from vaulteval.vault.bounded import Refused, load_json, load_yaml
from vaulteval.vault.paths import home_path, path_text_problem


@dataclass
class RawEntry:
    """A query as read: judgments are (key, grade, line, path-or-None) before resolution."""

    query_id: str
    text: Any
    judgments: list[tuple[Any, Any, int, str | None]]
    tags: list[str]
    line: int
    path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    extra_lines: dict[str, int] = field(default_factory=dict)


@dataclass
class RawSet:
    name: str
    path: str
    format: str
    sha256: str
    entries: list[RawEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    vault_root: Path | None = None
    doc_ids: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------ YAML

class _LineDict(dict):
    """A mapping that remembers its line and the line of each key."""

    line = 0
    key_lines: dict


def _yaml_loader():
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    def mapping(loader, node):
        loader.flatten_mapping(node)
        out = _LineDict()
        out.line, out.key_lines = node.start_mark.line + 1, {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                key = str(key)
            if key in out:
                out.setdefault("__duplicates__", []).append((key, key_node.start_mark.line + 1))
                continue
            out[key] = loader.construct_object(value_node, deep=True)
            out.key_lines[key] = key_node.start_mark.line + 1
        return out

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Loader


def load_yaml_file(path: Path) -> Any:
    """A YAML file the workbench reads whole (a query set to judge, merge or fix, a worksheet), as plain data:
    regular, bounded in size, UTF-8, through the bounded loader; else one problem at its line."""
    data = read_set_file(path)
    try:
        return load_yaml(set_text(path, data))
    except Refused as exc:
        raise QuerySetInvalid([Problem(str(path), exc.line or 1, exc.problem)]) from None


def read_yaml(path: Path) -> RawSet:
    data_bytes = read_set_file(path)
    raw = RawSet(name=path.stem, path=str(path), format="yaml", sha256=file_sha256((path, data_bytes)))
    try:
        data = load_yaml(set_text(path, data_bytes), loader=_yaml_loader())
    except Refused as exc:
        raise QuerySetInvalid([Problem(str(path), exc.line or 1, exc.problem)]) from None
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise QuerySetInvalid([Problem(str(path), 1, "expected a mapping with a 'queries:' list")])
    _read_header(raw, data, path, data.line)
    for item in data["queries"]:
        _read_entry(raw, item, getattr(item, "line", data.key_lines.get("queries", 1)))
    return raw


def _read_header(raw: RawSet, data: dict, path: Path, line: int) -> None:
    if data.get("name") is not None:
        raw.name = str(data["name"])
    vault = data.get("vault")
    if vault is not None:
        if not isinstance(vault, str) or not vault.strip():
            raw.problems.append(Problem(str(path), line, "vault: must be a folder path relative to this file"))
        elif (problem := path_text_problem(vault)) is not None:
            raw.problems.append(Problem(str(path), line, f"vault: {problem}; write a folder path"))
        else:
            raw.vault_root = (path.resolve().parent / home_path(vault)).resolve()  # after symlinks


def _read_entry(raw: RawSet, item: Any, line: int) -> None:
    if not isinstance(item, dict):
        raw.problems.append(Problem(raw.path, line, "each query must be a mapping with id, query, relevant"))
        return
    lines = getattr(item, "key_lines", {})
    for key, dup_line in item.pop("__duplicates__", []):
        raw.problems.append(Problem(raw.path, dup_line, f"key {key!r} appears twice"))
    unknown = [k for k in item if k not in QUERY_FIELDS]
    if unknown:
        raw.problems.append(Problem(raw.path, lines.get(unknown[0], line),
                                    f"unknown field {unknown[0]!r}; a query has {', '.join(QUERY_FIELDS)}"))
    qid = item.get("id")
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid).strip() == "":
        raw.problems.append(Problem(raw.path, line, "query without an id; add id: <unique name>"))
        return
    qid = str(qid).strip()
    if "relevant" not in item:
        raw.problems.append(Problem(raw.path, line, f"query {qid!r} has no relevant: (write relevant: {{}} for a query the vault cannot answer)"))
        return
    rel = item["relevant"]
    if rel is None:
        rel = {}
    if not isinstance(rel, dict):
        raw.problems.append(Problem(raw.path, lines.get("relevant", line), f"query {qid!r}: relevant must map pages to grades"))
        return
    rel_lines = getattr(rel, "key_lines", {})
    rel_line = lines.get("relevant", line)
    for key, dup_line in rel.pop("__duplicates__", []):
        raw.problems.append(Problem(raw.path, dup_line, f"query {qid!r}: {key} is judged twice"))
    judgments = [(k, g, rel_lines.get(k, rel_line), None) for k, g in rel.items()]
    tags = item.get("tags") or []
    if not isinstance(tags, list):
        tags = [tags]
    extra = {k: item[k] for k in QUERY_FIELDS[4:] if k in item}
    raw.entries.append(RawEntry(qid, item.get("query"), judgments, [str(t) for t in tags], line,
                                extra=extra, extra_lines={k: lines.get(k, line) for k in extra}))


# ----------------------------------------------------------------------- JSONL

def read_jsonl(path: Path) -> RawSet:
    data = read_set_file(path)
    raw = RawSet(name=path.stem, path=str(path), format="jsonl", sha256=file_sha256((path, data)))
    first = True
    for number, text in enumerate(set_text(path, data).splitlines(), 1):
        if not text.strip():
            continue
        try:
            obj = load_json(text)
        except Refused as exc:
            raw.problems.append(Problem(raw.path, number, exc.problem))
            continue
        if first and isinstance(obj, dict) and "query" not in obj and "id" not in obj:
            _read_header(raw, obj, path, number)
            first = False
            continue
        first = False
        if isinstance(obj, dict):
            obj = _LineDict(obj)
            obj.line, obj.key_lines = number, {}
            if isinstance(obj.get("relevant"), dict):
                rel = _LineDict(obj["relevant"])
                rel.line, rel.key_lines = number, {}
                obj["relevant"] = rel
        _read_entry(raw, obj, number)
    return raw


# ------------------------------------------------------------------ BEIR, TREC

def _read_qrels_tsv(raw: RawSet, path: Path, content: str, by_query: dict[str, list], trec: bool) -> None:
    for number, text in enumerate(content.splitlines(), 1):
        parts = [p.strip() for p in text.split("\t")] if "\t" in text and not trec else text.split()
        if not parts or not any(parts) or (number == 1 and not trec and parts[0].lower() in ("query-id", "query_id", "qid")):
            continue
        if len(parts) != (4 if trec else 3):
            want = "query-id 0 doc-id grade" if trec else "query-id<TAB>corpus-id<TAB>score"
            raw.problems.append(Problem(str(path), number, f"expected {want}"))
            continue
        qid, doc, grade = (parts[0], parts[2], parts[3]) if trec else parts
        try:
            value: Any = int(grade)
        except ValueError:
            value = grade
        from urllib.parse import unquote

        by_query.setdefault(qid, []).append((unquote(doc), value, number, str(path)))


def read_beir(folder: Path, split: str) -> RawSet:
    queries, qrels = folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"
    for needed in (queries, qrels):
        if not needed.is_file():
            raise QuerySetInvalid([Problem(str(needed), 1, f"missing; a BEIR folder has queries.jsonl and qrels/{split}.tsv")])
    queries_bytes, qrels_bytes = read_set_file(queries), read_set_file(qrels)
    raw = RawSet(name=f"{folder.name}-{split}", path=str(folder), format="beir", doc_ids=True,
                 sha256=file_sha256((queries, queries_bytes), (qrels, qrels_bytes)), extra={"split": split})
    judged: dict[str, list] = {}
    _read_qrels_tsv(raw, qrels, set_text(qrels, qrels_bytes), judged, trec=False)
    for number, text in enumerate(set_text(queries, queries_bytes).splitlines(), 1):
        if not text.strip():
            continue
        try:
            obj = load_json(text)
            qid = str(obj["_id"])
        except (ValueError, KeyError, TypeError):
            raw.problems.append(Problem(str(queries), number, "expected {\"_id\": ..., \"text\": ...}"))
            continue
        if qid in judged:
            raw.entries.append(RawEntry(qid, obj.get("text"), judged.pop(qid), [], number, str(queries)))
    for qid, rows in judged.items():
        raw.problems.append(Problem(str(qrels), rows[0][2], f"query {qid!r} is judged but not in queries.jsonl"))
    return raw


_TOP_RE = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_NUM_RE = re.compile(r"<num>\s*(?:Number:)?\s*([^\s<]+)", re.I)
_TITLE_RE = re.compile(r"<title>\s*(?:Topic:)?\s*(.*?)\s*(?=<|\Z)", re.S | re.I)


def read_trec(topics: Path, qrels: Path) -> RawSet:
    if not qrels.is_file():
        raise QuerySetInvalid([Problem(str(qrels), 1, "qrels file does not exist")])
    topics_bytes, qrels_bytes = read_set_file(topics), read_set_file(qrels)
    raw = RawSet(name=topics.stem, path=str(topics), format="trec", doc_ids=True,
                 sha256=file_sha256((topics, topics_bytes), (qrels, qrels_bytes)), extra={"qrels": str(qrels)})
    text = set_text(topics, topics_bytes)
    found: list[tuple[str, str, int]] = []
    if "<top>" in text.lower():
        for m in _TOP_RE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            num, title = _NUM_RE.search(m.group(1)), _TITLE_RE.search(m.group(1))
            if num is None:
                raw.problems.append(Problem(str(topics), line, "topic without <num>"))
                continue
            found.append((num.group(1), " ".join(title.group(1).split()) if title else "", line))
    else:
        for number, row in enumerate(text.splitlines(), 1):
            if row.strip():
                qid, _, query = row.partition("\t")
                found.append((qid.strip(), query.strip(), number))
    judged: dict[str, list] = {}
    _read_qrels_tsv(raw, qrels, set_text(qrels, qrels_bytes), judged, trec=True)
    for qid, query, line in found:
        raw.entries.append(RawEntry(qid, query, judged.pop(qid, []), [], line, str(topics)))
    for qid, rows in judged.items():
        raw.problems.append(Problem(str(qrels), rows[0][2], f"query {qid!r} is judged but not in {topics.name}"))
    return raw
