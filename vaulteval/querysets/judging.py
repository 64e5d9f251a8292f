"""Judgments written by people: labels from a pool into a new query set, and merging judgment files.

Usage::

    save_labels("q.yaml", pool, {("q01", "wiki/a.md"): 2}, judge="ana", out="q-judged.yaml")
    merge_querysets(["a.yaml", "b.yaml"], "merged.yaml")     # conflicts: the higher grade, reported

Labels always go to a new file outside the vault; the source set is never
rewritten. Each new judgment records the judge, the time (UTC) and the
page's sha256 and ``address:`` as they are now, so it can follow a rename.
Judged questions from a log are checked and recorded as written questions are
(``logged.mark_judged``).
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vaulteval.errors import UsageError
from vaulteval.vault.paths import home_path

GRADES = (0, 1, 2)


def _page_record(vault: Any, page: str, judge: str, at: str) -> dict[str, Any]:
    from vaulteval.chunks.chunking import decode_page, parse_frontmatter, split_frontmatter

    try:
        raw = vault.page_path(page).read_bytes()  # confined: a pool file names pages, it cannot name /etc/passwd
    except OSError as exc:
        raise UsageError(f"cannot read {page} to record its hash: {exc.strerror or exc}") from None
    record: dict[str, Any] = {"sha256": "sha256:" + hashlib.sha256(raw).hexdigest()}
    address = parse_frontmatter(split_frontmatter(decode_page(raw))[0]).get("address")
    if address not in (None, ""):
        record["address"] = str(address).strip()
    record.update(judge=judge, at=at)
    return record


def _load_yaml(path: Path) -> dict[str, Any]:
    from vaulteval.querysets.formats import load_yaml_file

    data = load_yaml_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise UsageError(f"{path}: expected a YAML query set with a 'queries:' list")
    return data


def _write(data: dict[str, Any], out: Path, vault_root: Path | None, src: Path) -> Path:
    from vaulteval.querysets.generate.writer import dump_yaml
    from vaulteval.vault.atomic import write_output
    from vaulteval.vault.paths import is_inside

    if vault_root is not None and is_inside(vault_root, out.resolve()):
        raise UsageError(f"{out} is inside the vault; judgments are written outside it")
    if out.resolve() == src.resolve():
        raise UsageError(f"{out} is the source query set; write the judgments to a new file")
    if isinstance(data.get("vault"), str):  # keep the vault reachable from the new file's folder
        root = (src.resolve().parent / data["vault"]).resolve()
        data["vault"] = Path(os.path.relpath(root, out.resolve().parent)).as_posix()
    write_output(out, dump_yaml(data))
    return out


def save_labels(queryset: str | os.PathLike[str], pool: dict[str, Any], labels: dict[tuple[str, str], int], *,
                judge: str, out: str | os.PathLike[str], at: str | None = None) -> dict[str, Any]:
    """Copy ``queryset`` to ``out`` with each label (0, 1 or 2) added as a judgment; unlabelled pairs are left out."""
    src, target = home_path(queryset), home_path(out)
    if not judge.strip():
        raise UsageError("name the judge (judge='your name')")
    from vaulteval.vault.vault import Vault

    data = _load_yaml(src)
    vault = Vault(pool["vault"])
    vault_root = vault.root
    at = at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    by_id = {str(q.get("id")): q for q in data["queries"] if isinstance(q, dict)}
    added = 0
    for (qid, page), grade in sorted(labels.items()):
        if grade is None:
            continue
        if grade not in GRADES:
            raise UsageError(f"query {qid!r}, {page}: grade must be 0, 1 or 2, got {grade!r}")
        if qid not in by_id:
            raise UsageError(f"query {qid!r} is not in {src}")
        q = by_id[qid]
        q["relevant"] = dict(q.get("relevant") or {})
        q["relevant"][page] = int(grade)
        q["judged"] = dict(q.get("judged") or {})
        q["judged"][page] = _page_record(vault, page, judge.strip(), at)
        added += 1
    from vaulteval.querysets.logged import mark_judged

    languages = data.get("languages")
    mark_judged(data["queries"], vault, {str(c) for c in languages} if isinstance(languages, dict) else None,
                where=str(src))
    _write(data, target, vault_root, src)
    return {"out": str(target), "judgments_added": added, "judge": judge.strip(), "at": at}


def merge_querysets(paths: list[str | os.PathLike[str]], out: str | os.PathLike[str]) -> dict[str, Any]:
    """Union of YAML query sets by query id; one page judged differently keeps the higher grade and is reported."""
    if len(paths) < 2:
        raise UsageError("merge needs at least two query sets")
    sources = [home_path(p) for p in paths]
    merged = _load_yaml(sources[0])
    by_id = {str(q.get("id")): q for q in merged["queries"] if isinstance(q, dict)}
    conflicts: list[str] = []
    for src in sources[1:]:
        for q in _load_yaml(src)["queries"]:
            if not isinstance(q, dict):
                continue
            qid = str(q.get("id"))
            mine = by_id.get(qid)
            if mine is None:
                merged["queries"].append(q)
                by_id[qid] = q
                continue
            if mine.get("query") != q.get("query"):
                raise UsageError(f"query {qid!r} has different texts in {sources[0].name} and {src.name}; "
                                 "rename one id before merging")
            rel, judged = dict(mine.get("relevant") or {}), dict(mine.get("judged") or {})
            for page, grade in (q.get("relevant") or {}).items():
                if page in rel and rel[page] != grade:
                    conflicts.append(f"{qid}: {page} graded {rel[page]} and {grade}")
                    if grade <= rel[page]:
                        continue
                rel[page] = grade
                if page in (q.get("judged") or {}):
                    judged[page] = q["judged"][page]
            mine["relevant"] = rel
            if judged:
                mine["judged"] = judged
    target = home_path(out)
    _write(merged, target, None, sources[0])
    return {"out": str(target), "queries": len(merged["queries"]), "conflicts": conflicts}
