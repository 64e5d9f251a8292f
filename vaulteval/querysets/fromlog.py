"""Real questions from a ``retrieve --log`` file: a query set to judge and a pool of what retrieve returned.

Usage::

    summary = pool_from_log("questions.jsonl", vault, "pool.yaml")   # also writes pool-queries.yaml
    # then notebooks/judge.ipynb (pool=pool.yaml, queryset=pool-queries.yaml), then eval run / tune

Each distinct question (whitespace collapsed, case kept) becomes one query
with ``relevant: {}`` and the tag ``from-log``; its id is a hash of the text,
so two logs of the same questions give the same ids and ``queryset merge``
unites their judgments. The pool lists every page the log says retrieve
returned for it, at its best rank, with the strategies that returned it and
the start of the page as a snippet, in the format of ``queryset pool``
(docs/querysets.md). Lines from another vault are skipped and counted. A
question the written questions' checks refuse (too long, in a language the
vault lacks) stops the whole log; the vault's languages are stored in the set
for the checks made again when the questions are judged (``logged``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.vault.atomic import write_output
from vaulteval.vault.bounded import Refused, load_json
from vaulteval.vault.paths import home_path

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

MAX_LOG_BYTES = 64 << 20
SNIPPET_CHARS = 600
TAG = "from-log"


def read_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The log's records; a line that is not a log record is a UsageError naming FILE:LINE."""
    from vaulteval.vault.metadir import TooLarge, read_capped

    source = home_path(path)
    try:
        raw = read_capped(source, MAX_LOG_BYTES)  # a FIFO is refused, never waited on
    except TooLarge:
        raise UsageError(f"{path} is over {MAX_LOG_BYTES >> 20} MiB; split it and convert the parts") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the log ({exc.strerror or exc})") from None
    records = []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            item = load_json(line)
        except Refused:
            raise UsageError(f"{path}:{number}: not a JSON line; a `retrieve --log` file has one object per line") from None
        if (not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip()
                or not _encodable(item["query"])
                or not isinstance(item.get("paths"), list) or not all(isinstance(p, str) for p in item["paths"])):
            raise UsageError(f"{path}:{number}: expected {{\"query\": text, \"paths\": [pages], ...}} "
                             "as `retrieve --log` writes it")
        records.append(item)
    if not records:
        raise UsageError(f"{path} holds no logged questions")
    return records


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")  # a lone surrogate escape ("\\udcff") is no text a query set can hold
    except UnicodeEncodeError:
        return False
    return True


def logged_vault(log: str | os.PathLike[str]) -> "Vault":
    """The one vault a log's lines name (``from-log`` without ``--vault``)."""
    from vaulteval.vault.vault import Vault

    roots = {r["vault"] for r in read_log(log) if isinstance(r.get("vault"), str)}
    if len(roots) != 1:
        raise UsageError(f"{log} names {len(roots)} vaults; pass --vault to say which one to judge")
    return Vault(roots.pop())


def query_id(text: str) -> str:
    """Usage: ``query_id("how do I ...")`` -> ``"log-1a2b3c4d5e"``: stable for the same question."""
    return "log-" + hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:10]


def pool_from_log(log: str | os.PathLike[str], vault: "Vault", out: str | os.PathLike[str], *,
                  queryset_out: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Write the query set and the pool; return what was written and what was skipped."""
    from vaulteval.querysets.generate.writer import dump_yaml
    from vaulteval.querysets.logged import logged_problem, vault_languages
    from vaulteval.vault.paths import is_inside

    pool_path = home_path(out)
    qs_path = home_path(queryset_out) if queryset_out else pool_path.with_name(pool_path.stem + "-queries.yaml")
    for label, target in (("--out", pool_path), ("--queryset-out", qs_path)):
        if is_inside(vault.root, target) or is_inside(vault.root, target.parent):
            raise UsageError(f"{label} {target} is inside the vault; write it outside")
    if pool_path.resolve() == qs_path.resolve():
        raise UsageError("--out and --queryset-out name the same file")
    records = read_log(log)
    source_log = str(home_path(log).resolve())
    mine = [r for r in records if not isinstance(r.get("vault"), str) or _same(r["vault"], vault.root)]
    if not mine:
        raise UsageError(f"{log}: no logged question is from {vault.root}; pass the vault the log was made on")
    languages = vault_languages(vault)
    for r in mine:
        if (problem := logged_problem(r["query"], set(languages))) is not None:
            raise UsageError(f"{log}: the logged question {r['query'][:60]!r} {problem} (or remove its "
                             "lines from the log)")
    queries: dict[str, dict[str, Any]] = {}
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    strategies: list[str] = []
    gone: set[str] = set()
    snippets: dict[str, str | None] = {}
    for r in mine:
        text = " ".join(r["query"].split())
        qid = query_id(text)
        entry = queries.setdefault(qid, {"id": qid, "query": text, "relevant": {}, "tags": [TAG],
                                         "source": {"log": source_log, "asked": 0}})
        entry["source"]["asked"] += 1
        if isinstance(r.get("time"), str):
            entry["source"].setdefault("first_asked", r["time"])
        strategy = r["strategy"] if isinstance(r.get("strategy"), str) else "unknown"
        if strategy not in strategies:
            strategies.append(strategy)
        for rank, logged in enumerate(r["paths"], 1):
            page = vault.page_rel(logged)  # a path relative to the notes folder is that note's vault path
            if page not in snippets:
                snippets[page] = _snippet(vault, page)
            if snippets[page] is None:
                gone.add(page)
                continue
            pair = pairs.setdefault((qid, page), {"query_id": qid, "query": text, "page": page, "best_rank": rank,
                                                  "strategies": [], "snippet": snippets[page]})
            pair["best_rank"] = min(pair["best_rank"], rank)
            if strategy not in pair["strategies"]:
                pair["strategies"].append(strategy)
    rel_vault = Path(os.path.relpath(vault.root, qs_path.resolve().parent)).as_posix()
    qs_data = {"name": qs_path.stem, "vault": rel_vault, "languages": languages, "queries": list(queries.values())}
    qs_text = dump_yaml(qs_data)
    order = {qid: i for i, qid in enumerate(queries)}
    listed = sorted(pairs.values(), key=lambda p: (order[p["query_id"]], p["best_rank"], p["page"]))
    pool = {"queryset": str(qs_path.resolve()),
            "queryset_sha256": "sha256:" + hashlib.sha256(qs_text.encode("utf-8")).hexdigest(),
            "vault": str(vault.root), "depth": max((p["best_rank"] for p in listed), default=0),
            "strategies": strategies, "strategy_specs": strategies, "source_log": source_log,
            "pairs": listed}
    write_output(qs_path, qs_text)
    write_output(pool_path, dump_yaml(pool))
    return {"queries": len(queries), "pairs": len(listed), "queryset": str(qs_path), "pool": str(pool_path),
            "skipped_other_vault": len(records) - len(mine), "pages_gone": sorted(gone)}


def _same(logged: str, root: Path) -> bool:
    return os.path.realpath(logged) == os.path.realpath(root)


def _snippet(vault: "Vault", page: str) -> str | None:
    """The start of the page's text after its front matter; None when the page is gone or unreadable."""
    from vaulteval.chunks.chunking import decode_page, split_frontmatter

    from vaulteval.errors import VaultevalError

    try:
        raw = vault.note_path(page).read_bytes()  # a note, confined: a log line cannot name /etc/passwd
    except (OSError, VaultevalError, ValueError):
        return None
    body = split_frontmatter(decode_page(raw))[1]
    return " ".join(body.split())[:SNIPPET_CHARS]
