"""Query sets with graded relevance per page: load, validate, export as qrels.

Usage::

    qs = load_queryset("querysets/sample-vault.yaml")            # vault from the file
    qs = load_queryset("runs/topics.tsv", vault=v, qrels="q.txt")  # TREC topics + qrels
    qs.to_qrels()      # [ir_measures.Qrel(query_id, doc_id, relevance), ...]
    qs.vault           # the Vault the judgments were resolved against (vaulteval.run uses it)

Formats (chosen from the path): ``.yaml``/``.yml`` (docs/querysets.md, "YAML"),
``.jsonl`` (one ``{"id", "query", "relevant", "tags"}`` object per line, an
optional first line ``{"name": ..., "vault": ...}``), a BEIR folder
(``queries.jsonl`` + ``qrels/<split>.tsv``; queries without judgments in the
split are skipped) and TREC topics (``<top>`` SGML or ``id<TAB>text``) with a
qrels file (topics without judgments are negatives). Keys are vault paths or
``[[wikilinks]]``; BEIR/TREC document ids may also be ids of a BEIR import.
Every problem names its file and line; all are collected before raising.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from vaulteval.errors import UsageError
from vaulteval.index.tokenize import MAX_INPUT_CHARS, over_limit
from vaulteval.querysets.extras import read_extras
from vaulteval.querysets.links import AmbiguousLink, LinkResolver, UnknownLink, resolve_key  # noqa: F401
from vaulteval.querysets.problems import QUERY_FIELDS, Problem, QuerySetInvalid, file_sha256  # noqa: F401
from vaulteval.vault.paths import home_path

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

class Query(NamedTuple):
    """One query: id, text, graded judgments {page path: grade}, tags, and its source line."""

    query_id: str
    text: str
    relevant: dict[str, int]
    tags: tuple[str, ...] = ()
    line: int = 0
    fields: Any = None  # kind, variant, split, source, status, judged, overlap... (vaulteval.querysets.extras)

    @property
    def kind(self) -> str:
        """The generator's kind (title, heading, ...), "" for a hand-written query."""
        return (self.fields or {}).get("kind", "")

    @property
    def overlap_band(self) -> str:
        """low, mid or high share of the query's terms found in its target; "" when not recorded."""
        return (self.fields or {}).get("overlap_band", "")

    @property
    def split(self) -> str:
        return (self.fields or {}).get("split", "")

    @property
    def judged(self) -> dict[str, dict[str, str]]:
        """Page key -> {sha256, address, judge, at} recorded when the page was judged."""
        return (self.fields or {}).get("judged", {})

    @property
    def is_negative(self) -> bool:
        """True when no page is relevant (grade > 0): the vault has no answer."""
        return not any(g > 0 for g in self.relevant.values())


@dataclass
class QuerySet:
    """Queries with judgments, plus where they came from (file, format, sha256, declared vault)."""

    name: str
    path: Path
    queries: list[Query]
    sha256: str
    format: str
    vault_root: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The vault whose pages the judgments were resolved against (set by load_queryset), so runs need not name it again.
    vault: "Vault | None" = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.queries)

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries)

    def __getitem__(self, query_id: str) -> Query:
        return self.by_id[query_id]

    @cached_property
    def by_id(self) -> dict[str, Query]:
        return {q.query_id: q for q in self.queries}

    @property
    def positive(self) -> list[Query]:
        return [q for q in self.queries if not q.is_negative]

    @property
    def negative(self) -> list[Query]:
        return [q for q in self.queries if q.is_negative]

    def to_qrels(self) -> list:
        """Usage: ``ir_measures.calc_aggregate(measures, qs.to_qrels(), run)``; every judgment incl. grade 0."""
        from ir_measures import Qrel

        return [Qrel(q.query_id, doc, grade) for q in self.queries for doc, grade in q.relevant.items()]

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "format": self.format, "queries": len(self),
                "positive": len(self.positive), "negative": len(self.negative),
                "judgments": sum(len(q.relevant) for q in self.queries), "sha256": self.sha256}


# --------------------------------------------------------------------------- loading

def load_queryset(path: str | os.PathLike[str], vault: "Vault | str | os.PathLike[str] | None" = None, *,
                  qrels: str | os.PathLike[str] | None = None, split: str = "test") -> QuerySet:
    """Load and validate; ``vault`` defaults to the file's ``vault:``, then the usual selection."""
    return open_queryset(path, vault, qrels=qrels, split=split)[1]


def open_queryset(path: str | os.PathLike[str], vault: "Vault | str | os.PathLike[str] | None" = None, *,
                  qrels: str | os.PathLike[str] | None = None, split: str = "test") -> "tuple[Vault, QuerySet]":
    """Usage: ``vault, qs = open_queryset("qs.yaml", args.vault)``: the vault the keys were resolved in, and the set."""
    from vaulteval.querysets import formats as qformats

    src = home_path(path)
    if not src.exists():
        raise UsageError(f"query set {src} does not exist")
    if src.is_dir():
        raw = qformats.read_beir(src, split)
    elif qrels is not None:
        raw = qformats.read_trec(src, home_path(qrels))
    elif src.suffix.lower() in (".yaml", ".yml"):
        raw = qformats.read_yaml(src)
    elif src.suffix.lower() == ".jsonl":
        raw = qformats.read_jsonl(src)
    else:
        raise UsageError(f"{src}: unknown query set format; use .yaml, .jsonl, a BEIR folder, or TREC topics with --qrels")
    chosen = _vault_for(raw, vault)
    try:
        qs = _validate(raw, LinkResolver.from_vault(chosen))
        qs.vault = chosen
        return chosen, qs
    except QuerySetInvalid as exc:
        from vaulteval.querysets.follow import DanglingJudgments, find_dangling

        dangling = find_dangling(raw, chosen) if raw.format in ("yaml", "jsonl") else []
        if dangling:
            raise DanglingJudgments(dangling, str(src), exc.problems, chosen.root) from None
        raise


def _vault_for(raw: "qformats.RawSet", vault: Any) -> "Vault":
    from vaulteval.vault.vault import Vault

    if isinstance(vault, Vault):
        return vault
    if vault is not None:
        return Vault(vault)
    if raw.vault_root is not None:
        return Vault(raw.vault_root)
    unusable = [p for p in raw.problems if p.message.startswith("vault:")]
    if unusable:  # the file names a vault that cannot be a path: say so rather than pick another vault
        raise QuerySetInvalid(unusable)
    return Vault.select(None)


def _validate(raw: "qformats.RawSet", resolver: LinkResolver) -> QuerySet:
    problems = list(raw.problems)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for entry in raw.entries:
        where = entry.path or raw.path
        qid = entry.query_id
        if qid in seen:
            problems.append(Problem(where, entry.line, f"duplicate id {qid!r} (first at line {seen[qid]})"))
            continue
        seen[qid] = entry.line
        if not isinstance(entry.text, str) or not entry.text.strip():
            problems.append(Problem(where, entry.line, f"query {qid!r} is empty; give it the text to search for"))
            continue
        if over_limit(entry.text) is not None:
            problems.append(Problem(where, entry.line, f"query {qid!r} is longer than {MAX_INPUT_CHARS} characters "
                                    "(before or after NFKC); shorten it"))
            continue
        relevant: dict[str, int] = {}
        judged_at: dict[str, int] = {}
        for key, grade, line, jpath in entry.judgments:
            jwhere = jpath or where
            if isinstance(grade, bool) or not isinstance(grade, int) or grade < 0:
                problems.append(Problem(jwhere, line, f"query {qid!r}: grade {grade!r} for {key} is not a whole number >= 0"))
                continue
            try:
                page = resolve_key(resolver, key, raw.doc_ids)
            except (UnknownLink, AmbiguousLink) as exc:
                problems.append(Problem(jwhere, line, f"query {qid!r}: {exc}"))
                continue
            if page in relevant:
                problems.append(Problem(jwhere, line, f"query {qid!r}: {page} is judged twice (also at line {judged_at[page]})"))
                continue
            relevant[page], judged_at[page] = grade, line
        fields, extra_problems = read_extras(entry, where)
        problems += extra_problems
        queries.append(Query(qid, entry.text, relevant, tuple(entry.tags), entry.line, fields or None))
    if problems:
        raise QuerySetInvalid(problems)
    if not queries:
        raise QuerySetInvalid([Problem(raw.path, 1, "the query set has no queries")])
    return QuerySet(name=raw.name, path=Path(raw.path), queries=queries, sha256=raw.sha256, format=raw.format,
                    vault_root=raw.vault_root, extra=raw.extra)
