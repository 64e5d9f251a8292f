"""The claim and source ledgers' shapes (claude-obsidian ``*-ledger.v1``), checked field by field.

Usage::

    sources = parse_source_ledger(data, "wiki/meta/ledgers/source-ledger.json")
    claims = parse_claim_ledger(data, "wiki/meta/ledgers/claim-ledger.json", sources)

Every problem is a :class:`LedgerInvalid` naming the file and the field, e.g.
``wiki/meta/ledgers/source-ledger.json: sources.src-1.authority: 'blog' is not
one of official, primary, ...``. Fields this reader does not use are allowed
and ignored, so ledgers written by newer tools still read.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import posixpath
import re
import unicodedata
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from vaulteval.errors import LedgerInvalid

SOURCE_SCHEMA = "claude-obsidian.source-ledger.v1"
CLAIM_SCHEMA = "claude-obsidian.claim-ledger.v1"
AUTHORITIES = ("official", "primary", "secondary", "community", "synthetic", "unknown")
SOURCE_STATUSES = ("unreviewed", "active", "superseded", "rejected")
CLAIM_RISKS = ("normal", "high")
CONFIDENCES = ("high", "medium", "low", "unknown")
EVIDENCE_RELATIONS = ("supports", "contradicts", "context")
CLAIM_ASSESSMENTS = ("accepted", "provisional", "contested", "unsupported", "deprecated")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True)
class Source:
    id: str
    title: str | None
    authority: str
    review_status: str
    refresh_due: dt.date | None
    independence_key: str | None
    origin_kind: str
    locator: str
    origin: str  # the canonical origin: https://host[:port] or file:<vault path>


@dataclass(frozen=True)
class Evidence:
    source_id: str
    relation: str
    locator: str


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    risk: str
    assessment: str
    confidence: str
    location: dict
    reviewed_at: dt.date | None
    evidence: tuple[Evidence, ...]


class _Field:
    """Reads one object of a ledger, raising LedgerInvalid with the file and dotted field path."""

    def __init__(self, file: str, where: str, value: Any):
        self.file, self.where, self.value = file, where, value
        if not isinstance(value, dict):
            self.fail(f"must be an object, not {type(value).__name__}")

    def fail(self, message: str, key: str | None = None):
        at = f"{self.where}.{key}" if key and self.where else (key or self.where or "(top level)")
        raise LedgerInvalid(f"{self.file}: {at}: {message}")

    def text(self, key: str, *, optional: bool = False) -> str | None:
        value = self.value.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail("must be a non-empty string" if key in self.value else "is missing", key)
        return value

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.value.get(key)
        if value not in allowed:
            shown = "is missing" if key not in self.value else f"{value!r} is not"
            self.fail(f"{shown} one of {', '.join(allowed)}", key)
        return value

    def date(self, key: str) -> dt.date | None:
        value = self.value.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not _DATE.match(value):
            self.fail(f"{value!r} is not a date (YYYY-MM-DD) or null", key)
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            self.fail(f"{value!r} is not a real calendar date", key)

    def child(self, key: str, value: Any) -> "_Field":
        return _Field(self.file, f"{self.where}.{key}" if self.where else key, value)


def vault_locator(value: str) -> str | None:
    """A clean vault-relative POSIX path, or None when the path is absolute, uses '..' or backslashes."""
    if value.startswith("/") or "\\" in value or "\x00" in value or re.match(r"^[A-Za-z]:", value):
        return None
    parts = value.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return value


def canonical_origin(url: str) -> str | None:
    """``https://host[:port]`` with the host lowercased, NFKC + IDNA encoded, IPv6 compressed and port 443 dropped;
    None unless ``url`` is an absolute HTTPS URL without credentials."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme.lower() != "https" or not host or parts.username or parts.password:
        return None
    host = unicodedata.normalize("NFKC", host).rstrip(".").lower()
    try:
        host = str(ipaddress.ip_address(host.strip("[]")))
        host = f"[{host}]" if ":" in host else host
    except ValueError:
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            return None
    return f"https://{host}" + (f":{port}" if port not in (None, 443) else "")


def parse_root(data: Any, file: str, schema: str, items: str) -> tuple[dict, str]:
    root = _Field(file, "", data)
    if data.get("schema") != schema:
        root.fail(f"{data.get('schema')!r} is not {schema!r}", "schema")
    generated = root.text("generated_at")
    entries = data.get(items)
    if not isinstance(entries, dict):
        root.fail("must be an object keyed by id" if items in data else "is missing", items)
    return entries, generated


def parse_source_ledger(data: Any, file: str) -> tuple[dict[str, Source], str]:
    entries, generated = parse_root(data, file, SOURCE_SCHEMA, "sources")
    out: dict[str, Source] = {}
    for sid, value in entries.items():
        row = _Field(file, f"sources.{sid}", value)
        if not _ID.match(sid):
            row.fail("is not a safe id (letters, digits, . _ : -)")
        origin = row.child("origin", value.get("origin"))
        kind = origin.choice("kind", ("file", "url"))
        locator = origin.text("locator")
        if kind == "file":
            canonical = vault_locator(locator)
            if canonical is None:
                origin.fail(f"{locator!r} must be a vault-relative path (no leading /, no '..')", "locator")
            canonical = "file:" + posixpath.normpath(canonical)
        else:
            canonical = canonical_origin(locator)
            if canonical is None:
                origin.fail(f"{locator!r} must be an absolute https:// URL without credentials", "locator")
        key = row.text("independence_key", optional=True)
        out[sid] = Source(id=sid, title=row.text("title", optional=True), authority=row.choice("authority", AUTHORITIES),
                          review_status=row.choice("review_status", SOURCE_STATUSES),
                          refresh_due=row.date("refresh_due"), independence_key=key,
                          origin_kind=kind, locator=locator, origin=canonical)
    return out, generated


def parse_claim_ledger(data: Any, file: str, sources: dict[str, Source]) -> tuple[dict[str, Claim], str]:
    entries, generated = parse_root(data, file, CLAIM_SCHEMA, "claims")
    out: dict[str, Claim] = {}
    for cid, value in entries.items():
        row = _Field(file, f"claims.{cid}", value)
        if not _ID.match(cid):
            row.fail("is not a safe id (letters, digits, . _ : -)")
        loc = row.child("location", value.get("location"))
        path = loc.text("path")
        if vault_locator(path) is None:
            loc.fail(f"{path!r} must be a vault-relative path", "path")
        anchor = loc.text("anchor", optional=True)
        evidence = value.get("evidence")
        if not isinstance(evidence, list):
            row.fail("must be a list", "evidence")
        items = []
        for i, item in enumerate(evidence):
            ev = row.child(f"evidence[{i}]", item)
            sid = ev.text("source_id")
            if sid not in sources:
                ev.fail(f"{sid!r} is not in the source ledger", "source_id")
            items.append(Evidence(sid, ev.choice("relation", EVIDENCE_RELATIONS), ev.text("locator")))
        assessment = row.choice("assessment", CLAIM_ASSESSMENTS)
        reviewed = row.date("reviewed_at")
        if assessment == "accepted" and reviewed is None:
            row.fail("an accepted claim needs a review date", "reviewed_at")
        out[cid] = Claim(id=cid, text=row.text("text"), risk=row.choice("risk", CLAIM_RISKS), assessment=assessment,
                         confidence=row.choice("confidence", CONFIDENCES), location={"path": path, "anchor": anchor},
                         reviewed_at=reviewed, evidence=tuple(items))
    return out, generated
