"""``vaulteval ledgers``: the claim and source ledgers, validated, with each claim's evidence status.

Usage::

    report = read_ledgers(vault, as_of=datetime.date(2026, 12, 1))
    report["status"]            # "ok" or "no-ledgers"
    report["claims"][0]         # status, supporting sources, independence, staleness, problems

The ledgers live in ``<notes>/meta/ledgers/`` (``wiki/meta/ledgers/`` in the
claude-obsidian layout). Staleness comes only from ``refresh_due``: a source is
stale when that date is before ``as_of``. Supporting sources count as
independent only when they neither share an ``independence_key`` nor resolve to
the same canonical origin (host, port, file); the groups are connected
components, so A~B by key and B~C by origin make A, B and C one source.
The rules checked (reported as ``problems``, never fatal): an accepted claim
needs at least one fresh, active, non-synthetic supporting source; a high-risk
accepted claim needs two independent ones.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from vaulteval.errors import LedgerInvalid
from vaulteval.notes.ledger_schema import Claim, Source, parse_claim_ledger, parse_source_ledger
from vaulteval.vault.paths import open_confined

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

SCHEMA = "vaulteval.ledgers.v1"
LEDGER_DIR = "meta/ledgers"
CLAIM_FILE = "claim-ledger.json"
SOURCE_FILE = "source-ledger.json"
MAX_LEDGER_BYTES = 16 << 20


def ledger_path(vault: "Vault", name: str) -> str:
    """The vault-relative path of a ledger file (``wiki/meta/ledgers/claim-ledger.json``)."""
    return "/".join(p for p in (vault.notes_rel, LEDGER_DIR, name) if p)


def _load(vault: "Vault", rel: str) -> Any | None:
    """The parsed JSON of a ledger, None when absent; confined like every note read."""
    try:
        with open_confined(vault.notes_dir, rel, strip=vault.notes_strip) as fh:
            raw = fh.read(MAX_LEDGER_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerInvalid(f"{rel}: cannot be read ({exc.strerror})") from None
    if len(raw) > MAX_LEDGER_BYTES:
        raise LedgerInvalid(f"{rel}: larger than {MAX_LEDGER_BYTES >> 20} MiB")
    from vaulteval.vault.bounded import Refused, load_json

    try:
        return load_json(raw)  # nesting bounded: a ledger nested thousands deep is invalid, not a RecursionError
    except Refused as exc:
        raise LedgerInvalid(f"{rel}: {exc.problem}" + (f" at line {exc.line}" if exc.line else "")) from None


def _stale(source: Source, as_of: dt.date) -> bool:
    return source.refresh_due is not None and source.refresh_due < as_of


def independence_groups(sources: list[Source]) -> list[list[str]]:
    """Sources that are one source: linked by a shared independence_key or a shared canonical origin."""
    parent = {s.id: s.id for s in sources}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first_by: dict[str, str] = {}
    for s in sources:
        for key in (f"key:{s.independence_key}" if s.independence_key else None, f"origin:{s.origin}"):
            if key is None:
                continue
            if key in first_by:
                parent[find(s.id)] = find(first_by[key])
            else:
                first_by[key] = s.id
    groups: dict[str, list[str]] = {}
    for s in sources:
        groups.setdefault(find(s.id), []).append(s.id)
    return sorted(sorted(g) for g in groups.values())


def _claim_report(claim: Claim, sources: dict[str, Source], as_of: dt.date) -> dict:
    by_relation: dict[str, list[str]] = {"supports": [], "contradicts": [], "context": []}
    for ev in claim.evidence:
        if ev.source_id not in by_relation[ev.relation]:
            by_relation[ev.relation].append(ev.source_id)
    supporting = [sources[sid] for sid in by_relation["supports"]]
    usable = [s for s in supporting if s.review_status == "active" and s.authority != "synthetic"]
    fresh = [s for s in usable if not _stale(s, as_of)]
    groups = independence_groups(fresh)
    problems = []
    if claim.assessment == "accepted" and not fresh:
        problems.append("accepted, but no fresh, active, non-synthetic source supports it")
    if claim.assessment == "accepted" and claim.risk == "high" and len(groups) < 2:
        problems.append(f"high-risk and accepted, but {len(groups)} independent fresh source(s) support it; needs 2")
    stale = [s.id for s in supporting if _stale(s, as_of)]
    return {
        "claim_id": claim.id, "text": claim.text, "status": claim.assessment, "risk": claim.risk,
        "confidence": claim.confidence, "location": claim.location,
        "reviewed_at": claim.reviewed_at.isoformat() if claim.reviewed_at else None,
        "supporting": by_relation["supports"], "contradicting": by_relation["contradicts"],
        "context": by_relation["context"],
        "evidence": [{"source_id": e.source_id, "relation": e.relation, "locator": e.locator} for e in claim.evidence],
        "fresh_supporting": [s.id for s in fresh], "independent_groups": groups,
        "independent_sources": len(groups), "stale_sources": stale, "stale": bool(stale), "problems": problems,
    }


def _source_report(s: Source, as_of: dt.date) -> dict:
    return {"source_id": s.id, "title": s.title, "authority": s.authority, "review_status": s.review_status,
            "refresh_due": s.refresh_due.isoformat() if s.refresh_due else None, "stale": _stale(s, as_of),
            "origin": {"kind": s.origin_kind, "locator": s.locator}, "canonical_origin": s.origin,
            "independence_key": s.independence_key}


def read_ledgers(vault: "Vault", as_of: dt.date | None = None) -> dict:
    """Both ledgers checked and summarised (see docs/json.md, ``vaulteval ledgers``); raises LedgerInvalid (exit 2)."""
    as_of = as_of or dt.datetime.now(dt.timezone.utc).date()
    claim_rel, source_rel = ledger_path(vault, CLAIM_FILE), ledger_path(vault, SOURCE_FILE)
    claim_data, source_data = _load(vault, claim_rel), _load(vault, source_rel)
    report: dict[str, Any] = {
        "schema": SCHEMA, "as_of": as_of.isoformat(),
        "files": {"claim": {"path": claim_rel, "present": claim_data is not None},
                  "source": {"path": source_rel, "present": source_data is not None}},
    }
    if claim_data is None and source_data is None:
        return {**report, "status": "no-ledgers", "sources": [], "claims": [],
                "summary": {"sources": 0, "claims": 0, "stale_sources": 0, "claims_with_problems": 0}}
    sources: dict[str, Source] = {}
    if source_data is not None:
        sources, report["files"]["source"]["generated_at"] = parse_source_ledger(source_data, source_rel)
    claims: dict[str, Claim] = {}
    if claim_data is not None:
        if source_data is None and _cites_anything(claim_data):
            raise LedgerInvalid(f"{claim_rel}: claims cite sources, but {source_rel} is missing")
        claims, report["files"]["claim"]["generated_at"] = parse_claim_ledger(claim_data, claim_rel, sources)
    source_rows = [_source_report(sources[k], as_of) for k in sorted(sources)]
    claim_rows = [_claim_report(claims[k], sources, as_of) for k in sorted(claims)]
    report.update({
        "status": "ok", "sources": source_rows, "claims": claim_rows,
        "summary": {"sources": len(source_rows), "claims": len(claim_rows),
                    "stale_sources": sum(r["stale"] for r in source_rows),
                    "claims_with_problems": sum(bool(r["problems"]) for r in claim_rows),
                    "by_status": {s: sum(r["status"] == s for r in claim_rows)
                                  for s in sorted({r["status"] for r in claim_rows})}},
    })
    return report


def _cites_anything(data: Any) -> bool:
    claims = data.get("claims") if isinstance(data, dict) else None
    return isinstance(claims, dict) and any(
        isinstance(c, dict) and isinstance(c.get("evidence"), list) and c["evidence"] for c in claims.values())
