"""Judgments that follow the vault: find pages that were moved, renamed or deleted since they were judged.

Usage::

    dangling = find_dangling(raw, vault)     # [Dangling(query_id, key, line, path, new, how), ...]
    write_fixed(src, dangling, out)          # a corrected copy of a YAML or JSONL set

A judgment dangles when its key names no page. Its page is looked for, in
this order, by the ``address:`` recorded when it was judged, by identical
content (the recorded sha256), and by Obsidian's link resolution of the old
file name (``wiki/a/Old.md`` is tried as ``[[Old]]``). The first unique
match wins, else the page is gone. Only keys with a ``judged:`` record are
followed; in a hand-written set an unknown key stays an "unknown page"
problem (with its "did you mean" hint).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from vaulteval.errors import UsageError
from vaulteval.querysets.links import AmbiguousLink, LinkResolver, UnknownLink, is_wikilink, resolve_key
from vaulteval.querysets.problems import Problem, QuerySetInvalid
from vaulteval.vault.atomic import write_output
from vaulteval.vault.notefiles import read_note_file

if TYPE_CHECKING:
    from vaulteval.querysets.formats import RawSet
    from vaulteval.vault.vault import Vault


class Dangling(NamedTuple):
    """A judgment whose page is gone from its path; ``new`` is where it went (None: not found)."""

    query_id: str
    key: str
    line: int
    path: str
    new: str | None
    how: str  # "address", "content", "link" or "gone"

    @property
    def message(self) -> str:
        where = f"moved to {self.new} (found by {self.how})" if self.new else "deleted or not found"
        return f"query {self.query_id!r}: {self.key} is dangling; {where}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"

    def short(self) -> str:
        return f"{self.query_id}: {self.key} -> {self.new}" if self.new else f"{self.query_id}: {self.key} (gone)"


UNREPAIRABLE = ("a judgment of a deleted page cannot be repaired (no page took its place): delete the judgment, "
                "or the whole query when it judged nothing else")


class DanglingJudgments(QuerySetInvalid):
    """Judgments name pages that moved or vanished; one line names them (exit 2)."""

    def __init__(self, dangling: list[Dangling], source: str, others: list[Problem] | None = None,
                 vault_root: Path | None = None):
        self.dangling, self.vault_root = dangling, vault_root
        spots = {(d.path, d.line) for d in dangling}
        self.problems = [Problem(d.path, d.line, d.message) for d in dangling]
        self.problems += [p for p in others or [] if (p.path, p.line) not in spots]
        shown = ", ".join(d.short() for d in dangling[:5]) + (f", +{len(dangling) - 5} more" if len(dangling) > 5 else "")
        if any(d.new for d in dangling):
            fix = f"repair with: vaulteval queryset check {source} --fix OUT"
        else:  # nothing --fix could do: every page is gone
            fix = f"{UNREPAIRABLE}; delete those judgments from {source}"
        UsageError.__init__(self, f"{len(dangling)} dangling judgment(s) in {source} (pages moved, renamed or "
                                  f"deleted): {shown}; {fix}")


class _PageIndex:
    """Every page's address and content hash, read once when something dangles."""

    def __init__(self, vault: "Vault"):
        from vaulteval.chunks.chunking import decode_page, parse_frontmatter, split_frontmatter

        self.by_address: dict[str, list[str]] = {}
        self.by_hash: dict[str, list[str]] = {}
        pages = {p.rel: p.path for p in vault.iter_pages()}
        raws: dict[str, bytes] = {}
        for rel, path in pages.items():
            try:
                raws[rel] = read_note_file(path)  # never blocks on a FIFO named *.md
            except OSError:
                continue
            self.by_hash.setdefault("sha256:" + hashlib.sha256(raws[rel]).hexdigest(), []).append(rel)
            text = decode_page(raws[rel])
            if text.startswith("---\n"):
                address = parse_frontmatter(split_frontmatter(text)[0]).get("address")
                if address not in (None, ""):
                    self.by_address.setdefault(str(address).strip(), []).append(rel)
        self.resolver = LinkResolver(raws, read_page=raws.__getitem__)

    def locate(self, key: str, judged: dict[str, str]) -> tuple[str | None, str]:
        for how, table, value in (("address", self.by_address, judged.get("address")),
                                  ("content", self.by_hash, judged.get("sha256"))):
            found = table.get(value or "", [])
            if len(found) == 1:
                return found[0], how
        name = key if is_wikilink(key) else f"[[{Path(key).stem}]]"
        try:
            return self.resolver.resolve(name), "link"
        except (UnknownLink, AmbiguousLink):
            return None, "gone"


def find_dangling(raw: "RawSet", vault: "Vault") -> list[Dangling]:
    """Usage: ``find_dangling(read_yaml(path), vault)``: every judgment key that names no page, located."""
    resolver = LinkResolver.from_vault(vault)
    index: _PageIndex | None = None
    out: list[Dangling] = []
    for entry in raw.entries:
        judged = entry.extra.get("judged") if isinstance(entry.extra.get("judged"), dict) else {}
        keys = [(k, line, jpath) for k, _, line, jpath in entry.judgments]
        keys += [(k, entry.extra_lines.get("judged", entry.line), None) for k in judged if k not in
                 {j[0] for j in entry.judgments} and k != "__duplicates__"]
        for key, line, jpath in keys:
            info = judged.get(key) if isinstance(judged.get(key), dict) else None
            if info is None or not isinstance(key, str) or _resolves(resolver, key, raw.doc_ids):
                continue  # without a judged: record an unknown key stays an "unknown page" problem
            index = index or _PageIndex(vault)
            new, how = index.locate(key, {k: str(v) for k, v in info.items()})
            out.append(Dangling(entry.query_id, key, line, jpath or entry.path or raw.path, new, how))
    return out


def _resolves(resolver: LinkResolver, key: str, doc_ids: bool) -> bool:
    try:
        resolve_key(resolver, key, doc_ids)
    except UnknownLink:
        return False
    except AmbiguousLink:
        return True  # ambiguity is a different problem, reported by validation
    return True


def changed_since_judged(qs: Any, vault: "Vault") -> list[tuple[str, str]]:
    """(query id, page) of judgments whose page bytes differ from the sha256 recorded when judged."""
    resolver = LinkResolver.from_vault(vault)
    out = []
    for q in qs:
        for key, info in q.judged.items():
            try:
                page = resolve_key(resolver, key)
                digest = "sha256:" + hashlib.sha256(read_note_file(vault.page_path(page))).hexdigest()
            except (UnknownLink, AmbiguousLink, OSError, UsageError):
                continue
            if info.get("sha256") and info["sha256"] != digest:
                out.append((q.query_id, page))
    return out


def write_fixed(src: Path, dangling: list[Dangling], out: Path) -> int:
    """Write ``src`` with every found page's key replaced by its new path; returns how many keys changed."""
    moves: dict[tuple[str, str], str] = {(d.query_id, d.key): d.new for d in dangling if d.new}
    if src.suffix.lower() in (".yaml", ".yml"):
        from vaulteval.querysets.formats import load_yaml_file
        from vaulteval.querysets.generate.writer import dump_yaml

        data = load_yaml_file(src)
        if not isinstance(data, dict):
            raise UsageError(f"{src}: expected a YAML query set with a 'queries:' list")
        changed = sum(_fix_query(q, moves) for q in data.get("queries", []) if isinstance(q, dict))
        if isinstance(data.get("vault"), str):  # keep the vault reachable from the copy's folder
            import os

            root = (src.resolve().parent / data["vault"]).resolve()
            data["vault"] = Path(os.path.relpath(root, out.resolve().parent)).as_posix()
        text = dump_yaml(data)
    elif src.suffix.lower() == ".jsonl":
        lines, changed = [], 0
        from vaulteval.querysets.problems import read_set_file, set_text
        from vaulteval.vault.bounded import Refused, load_json

        for row in set_text(src, read_set_file(src)).splitlines():
            try:
                obj = load_json(row) if row.strip() else None
            except Refused:
                obj = None  # kept as written: check reported it
            if isinstance(obj, dict) and "id" in obj:
                changed += _fix_query(obj, moves)
                row = json.dumps(obj, ensure_ascii=False)
            lines.append(row)
        text = "\n".join(lines) + "\n"
    else:
        raise UsageError(f"--fix writes YAML or JSONL query sets, not {src.name}")
    write_output(out, text)
    return changed


def _fix_query(q: dict[str, Any], moves: dict[tuple[str, str], str]) -> int:
    qid, changed = str(q.get("id", "")).strip(), 0
    for field in ("relevant", "judged"):
        mapping = q.get(field)
        if isinstance(mapping, dict):
            fixed = {}
            for key, value in mapping.items():
                new = moves.get((qid, key))
                fixed[new or key] = value
                changed += bool(new) and field == "relevant"
            q[field] = fixed
    return changed
