"""Write generated queries as a YAML query set (docs/querysets.md), byte for byte the same for the same input.

Usage: ``write_yaml(Path("q.yaml"), vault, ctx, candidates, split_of=..., header={...})``
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.querysets.generate.candidates import Candidate
from vaulteval.vault.atomic import write_output

JUDGE = "vaulteval queryset generate"

if TYPE_CHECKING:
    from vaulteval.querysets.generate.kinds import Context
    from vaulteval.vault.vault import Vault


def judged_entry(facts: Any, judge: str, at: str | None = None) -> dict[str, Any]:
    """What a judgment remembers about its page: content hash, address (if any), who judged and when."""
    entry: dict[str, Any] = {"sha256": facts.sha256}
    if facts.address:
        entry["address"] = facts.address
    entry["judge"] = judge
    if at:
        entry["at"] = at
    return entry


def _vault_ref(vault: "Vault", target: Path) -> str:
    try:
        return Path(os.path.relpath(vault.root, target.resolve().parent)).as_posix()
    except ValueError:  # another drive
        return str(vault.root)


def query_entry(qid: str, c: Candidate, split: str, ctx: "Context", judge: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": qid, "query": c.text, "relevant": {p: g for p, g in c.relevant}}
    entry["kind"], entry["variant"], entry["split"] = c.kind, c.variant, split
    entry["source"] = {"page": c.page, "line": c.line} if c.page else {"list": "negatives", "item": c.line}
    if c.status:
        entry["status"] = c.status
    entry.update(c.measures)
    judged = {p: judged_entry(ctx.by_rel[p], judge) for p, _ in c.relevant if p in ctx.by_rel}
    if judged:
        entry["judged"] = judged
    return entry


def dump_yaml(data: dict[str, Any]) -> str:
    """Block-style YAML with keys in the order given, Unicode as is, lines never folded."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=1_000_000,
                     default_flow_style=False)


def write_yaml(target: Path, vault: "Vault", ctx: "Context", queries: list[Candidate], *,
               split_of: Callable[[str], str], header: dict[str, Any]) -> dict[str, Any]:
    numbers: Counter = Counter()
    entries = []
    for c in queries:
        numbers[c.kind] += 1
        qid = f"{c.kind}-{numbers[c.kind]:04d}"
        entries.append(query_entry(qid, c, split_of(qid), ctx, JUDGE))
    data = {"name": target.stem, "vault": _vault_ref(vault, target),
            "generator": {"tool": JUDGE, **header, "pages": len(ctx.facts)}, "queries": entries}
    write_output(target, dump_yaml(data))
    splits = Counter(e["split"] for e in entries)
    return {"out": str(target), "queries": len(entries), "by_kind": dict(numbers),
            "tune": splits.get("tune", 0), "test": splits.get("test", 0)}
