"""Recompute a run directory from its manifest and list every difference.

Usage::

    result = verify_run("runs/20260101-120000-sample-vault")
    if not result.ok:
        print("\\n".join(result.diffs))     # e.g. "vault: changed: wiki/howto/Descaling.md"

Fingerprints (vault pages, query set, each index, embedding model digest),
the count of pages the vault's index held stale (``--allow-stale``), and every number in metrics.csv, per_query.csv, misses.csv, pool.csv,
report.json (the comparison: deltas, wins, p-values, significance, rescued
and lost pages) and the TREC runs are compared; latencies and timestamps are
not. report.md must be exactly what report.json renders. Numbers agree when
they are within 1e-9 (relative) of each other.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import VaultevalError
from vaulteval.workbench.manifest import (PAGES_FILE, REPORT_DATA, NotARunDir, queryset_path, read_manifest,
                                          read_run_table)

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.workbench.evaluate import EvalRun

MAX_LINES_PER_FILE = 12
# File -> key columns; every other column is compared, except the ignored ones.
TABLES = {
    "metrics.csv": ["run", "measure", "slice_by", "slice"],
    "per_query.csv": ["run", "query_id"],
    "misses.csv": ["run", "query_id", "doc_id"],
    "pool.csv": ["run", "query_id", "pool_rank"],
    "queries.csv": ["run", "query_id"],
    "abstention.csv": ["run", "step"],
}
IGNORED = {"latency_ms", "rerank_ms"}


@dataclass
class VerifyResult:
    """``ok`` when nothing differs; ``diffs`` are readable one-line differences."""

    run_dir: Path
    diffs: list[str] = field(default_factory=list)
    recomputed: "EvalRun | None" = None

    @property
    def ok(self) -> bool:
        return not self.diffs


def verify_run(run_dir: str | Path, *, vault: str | Path | None = None, notes_dir: str | None = None,
               cache_dir: str | Path | None = None, allow_remote_ollama: bool = False) -> VerifyResult:
    """Usage: ``verify_run("runs/<id>").ok``; ``vault`` overrides the manifest's vault folder."""
    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.vault.vault import Vault

    folder = Path(run_dir)
    manifest = read_manifest(folder)
    result = VerifyResult(folder)
    diffs = result.diffs
    try:
        v = Vault(vault or manifest["vault"]["root"], 
                  notes_dir=notes_dir if notes_dir is not None else manifest["vault"].get("notes_dir"))
    except VaultevalError as exc:
        diffs.append(f"vault: {exc}")
        return result
    qs_info = manifest["queryset"]
    try:
        qs = load_queryset(queryset_path(folder, qs_info), v, qrels=qs_info.get("qrels"),
                           split=qs_info.get("split") or "test")
    except VaultevalError as exc:
        diffs.append(f"query set: {exc}")
        return result
    from vaulteval.workbench.tune import read_tune, subset, test_split_ids, verify_tune

    tune_info = read_tune(folder)
    if test_split_ids(tune_info) is not None:
        qs = subset(qs, test_split_ids(tune_info), "test")  # a hash-split tune run scored only its test split
    if qs.sha256 != qs_info["sha256"]:
        diffs.append(f"query set: {qs_info['path']} changed ({qs_info['sha256'][:19]}… -> {qs.sha256[:19]}…)")
    params = manifest["parameters"]
    try:
        strategies = [Strategy.from_dict(s["strategy"]) for s in manifest["strategies"]]
    except (TypeError, ValueError) as exc:  # StrategyError (a UsageError) passes through with its own message
        raise NotARunDir(f"{folder}/manifest.json has an unusable strategy: {exc}") from None
    _refuse_other_libraries(folder, manifest)
    ev = evaluate(v, qs, strategies,
                  measures=params["measures"], k=params["k"], baseline=params.get("baseline"),
                  cache_dir=cache_dir, use_vault_index=params.get("use_vault_index", True),
                  seed=params.get("seed", 0), allow_remote_ollama=allow_remote_ollama,
                  condensed=params.get("condensed", False), allow_stale=True)
    result.recomputed = ev
    stored_stale = manifest["vault"].get("stale_pages", 0)
    if stored_stale != ev.stale.pages:
        diffs.append(f"vault: stale pages (the vault's index against the notes): {stored_stale} -> {ev.stale.pages}")
    diffs += _diff_pages(folder, manifest["vault"]["fingerprint"], ev.workspace.fingerprint)
    for entry, run in zip(manifest["strategies"], ev.runs):
        diffs += _compare_strategy(entry, run)
    with tempfile.TemporaryDirectory(prefix="vaulteval-verify-") as tmp:
        fresh = ev.save(Path(tmp), run_id=manifest["id"])
        for name, keys in TABLES.items():
            diffs += _diff_csv(name, folder / name, fresh / name, keys)
        for entry in manifest["strategies"]:
            diffs += _diff_trec(entry["trec"], folder / entry["trec"], fresh / entry["trec"])
        diffs += _diff_report(folder, fresh, manifest)
    if tune_info is not None:
        diffs += verify_tune(tune_info, ev.per_query, str(v.root), str(cache_dir) if cache_dir else None,
                             notes_dir=v.notes_rel)
    return result


MAX_PAGES_FILE_BYTES = 256 << 20


def _diff_pages(folder: Path, recorded: str, fp: Any) -> list[str]:
    """vault-pages.txt, always: it must be what the manifest's fingerprint was taken of, and each page in it
    is compared with the vault now (a tampered file is a difference, not a pass)."""
    import hashlib

    from vaulteval.vault.metadir import read_capped
    from vaulteval.workbench.fingerprint import VaultFingerprint

    try:
        data = read_capped(folder / PAGES_FILE, MAX_PAGES_FILE_BYTES)
    except FileNotFoundError:
        data = None
        out = [f"{PAGES_FILE}: missing from the run directory"]
    except OSError as exc:
        data = None
        out = [f"{PAGES_FILE}: cannot be read ({exc.strerror or exc})"]
    else:
        out = []
        if "sha256:" + hashlib.sha256(data).hexdigest() != recorded:
            out.append(f"{PAGES_FILE}: not the page list the manifest's vault fingerprint was taken of (edited?)")
    try:
        old = VaultFingerprint.parse_lines(data.decode("utf-8")) if data is not None else {}
    except UnicodeDecodeError:
        old, out = {}, out + [f"{PAGES_FILE}: not UTF-8 text"]
    changes = fp.diff(old) if data is not None else []
    if len(changes) > MAX_LINES_PER_FILE:
        changes = changes[:MAX_LINES_PER_FILE] + [f"… {len(changes) - MAX_LINES_PER_FILE} more pages"]
    out += [f"vault: {line}" for line in changes]
    if fp.digest != recorded and not changes:
        out.append("vault: page fingerprint differs")
    return out


def _refuse_other_libraries(folder: Path, manifest: dict[str, Any]) -> None:
    """A run analyzed with other analyzer library versions (jieba, PyStemmer, ...) cannot give the same
    terms here: refuse in one line rather than list every score that moved."""
    from vaulteval.index.langs.libraries import version

    for entry in manifest["strategies"]:
        index = entry.get("index") if isinstance(entry.get("index"), dict) else {}
        recorded = index.get("analyzer_libraries")
        for name, was in sorted(recorded.items()) if isinstance(recorded, dict) else ():
            now = version(str(name))
            if was != now:
                raise NotARunDir(f"{folder}: run {entry['name']} was analyzed with {name} {was}, this machine has "
                                 f"{now or 'none'}: install {name}=={was} to verify it, or run `vaulteval eval run` "
                                 "again")


# Report tables compared row by row; latency is measured, not reproducible, and only rendered.
REPORT_KEYS = {"summary": ["run", "measure"], "rerank": ["run"], "pool": ["run"], "negatives": ["run"]}


def _diff_report(folder: Path, fresh: Path, manifest: dict[str, Any]) -> list[str]:
    """report.json against the recomputed comparison, and report.md against what report.json renders.

    A report of another format (its verdicts came from another procedure) is refused in one line."""
    import json

    from vaulteval.workbench.procedure import REPORT_FORMAT
    from vaulteval.workbench.manifest import render_report

    path = folder / REPORT_DATA
    if not path.is_file():
        return [f"{REPORT_DATA}: missing from the run directory"]
    try:
        old = render_report(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, RecursionError) as exc:
        return [f"{REPORT_DATA}: unreadable or malformed ({exc})"]
    stored = old.params.get("report_format") if isinstance(old.params, dict) else None
    if stored != REPORT_FORMAT:
        version = (manifest.get("packages") or {}).get("vaulteval") or "an unknown version"
        raise NotARunDir(f"{path} was written by vaulteval {version} in report format {str(stored)[:40]}; this "
                         f"vaulteval reads format {REPORT_FORMAT} only: run `vaulteval eval run` again")
    new = render_report(json.loads((fresh / REPORT_DATA).read_text(encoding="utf-8")))
    rendered = old.to_markdown() + "\n"
    lines = []
    if old.baseline != new.baseline:
        lines.append(f"{REPORT_DATA}: baseline {old.baseline} -> {new.baseline}")
    if old.notes != new.notes:
        lines.append(f"{REPORT_DATA}: notes differ: {old.notes} -> {new.notes}")
    for name, keys in REPORT_KEYS.items():
        a, b = old.tables.get(name), new.tables.get(name)
        if a is None or b is None or a.empty or b.empty:
            if (a is None or a.empty) != (b is None or b.empty):
                lines.append(f"{REPORT_DATA}: table {name} is {'missing' if a is None or a.empty else 'extra'}")
            continue
        if list(a.columns) != list(b.columns) or not set(keys) <= set(a.columns):
            lines.append(f"{REPORT_DATA}: table {name} columns {list(a.columns)} -> {list(b.columns)}")
            continue
        lines += _diff_frames(f"{REPORT_DATA} {name}", _keyed(a, keys), _keyed(b, keys), keys)
    pq_keys = ["run", "query_id", "measure"]
    if set(pq_keys) <= set(old.per_query.columns):
        lines += _diff_frames(f"{REPORT_DATA} per_query", _keyed(old.per_query, pq_keys),
                              _keyed(new.per_query, pq_keys), pq_keys)
    else:
        lines.append(f"{REPORT_DATA}: per_query lacks {', '.join(pq_keys)}")
    lines += _diff_markdown(folder / "report.md", rendered)
    return lines


def _keyed(df: "pd.DataFrame", keys: list[str]) -> "pd.DataFrame":
    return df.astype({k: str for k in keys})


def _diff_markdown(path: Path, rendered: str) -> list[str]:
    """Each line of report.md that is not what report.json renders (a hand edit shows up here)."""
    if not path.is_file():
        return ["report.md: missing from the run directory"]
    actual = path.read_text(encoding="utf-8").splitlines()
    expected = rendered.splitlines()
    lines = [f"report.md: line {i}: {a!r} is not what {REPORT_DATA} renders: {e!r}"
             for i, (a, e) in enumerate(zip(actual, expected), 1) if a != e]
    if len(actual) != len(expected):
        lines.append(f"report.md: {len(actual)} lines, {REPORT_DATA} renders {len(expected)}")
    if len(lines) > MAX_LINES_PER_FILE:
        lines = lines[:MAX_LINES_PER_FILE] + [f"report.md: … {len(lines) - MAX_LINES_PER_FILE} more differences"]
    return lines


def _compare_strategy(entry: dict[str, Any], run: Any) -> list[str]:
    out = []
    old, new = entry.get("index"), run.env.describe()
    if not isinstance(old, dict):  # an edited manifest: every key then differs, reported as a difference
        old = {}
    for key in ("fingerprint", "analyzer", "k1", "b", "chunk_params"):
        if old.get(key) != new.get(key):
            out.append(f"{entry['name']}: index {key} {_short(old.get(key))} -> {_short(new.get(key))}")
    if entry.get("rerank"):
        from vaulteval.workbench.manifest import rerank_info

        now = rerank_info(run) or {}
        was = entry["rerank"] if isinstance(entry["rerank"], dict) else {}
        for key in ("backend", "model", "digest", "fallback"):
            if was.get(key) != now.get(key):
                out.append(f"{entry['name']}: embedding {key} {was.get(key)} -> {now.get(key)}")
    return out


def _short(value: Any) -> str:
    text = str(value)
    return text[:19] + "…" if text.startswith("sha256:") else text


def _same(a: Any, b: Any) -> bool:
    a_nan = a is None or (isinstance(a, float) and math.isnan(a))
    b_nan = b is None or (isinstance(b, float) and math.isnan(b))
    if a_nan or b_nan:
        return a_nan and b_nan
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return str(a) == str(b)


def _diff_frames(name: str, old: "pd.DataFrame", new: "pd.DataFrame", keys: list[str]) -> list[str]:
    merged = old.merge(new, on=keys, how="outer", suffixes=("_old", "_new"), indicator=True)
    cols = [c for c in old.columns if c not in keys and c not in IGNORED and c in new.columns]
    lines = []
    for row in merged.to_dict("records"):
        key = " ".join(str(row[k]) for k in keys)
        if row["_merge"] == "left_only":
            lines.append(f"{name}: {key}: row is gone")
        elif row["_merge"] == "right_only":
            lines.append(f"{name}: {key}: new row")
        else:
            lines += [f"{name}: {key} {c}: {row[c + '_old']} -> {row[c + '_new']}"
                      for c in cols if not _same(row[c + "_old"], row[c + "_new"])]
    if len(lines) > MAX_LINES_PER_FILE:
        lines = lines[:MAX_LINES_PER_FILE] + [f"{name}: … {len(lines) - MAX_LINES_PER_FILE} more differences"]
    return lines


def _diff_csv(name: str, old_path: Path, new_path: Path, keys: list[str]) -> list[str]:
    import pandas as pd

    if not old_path.is_file():
        return [f"{name}: missing from the run directory"]
    dtypes: dict[str, Any] = {k: str for k in keys if k not in ("pool_rank",)}
    dtypes.update({"rank": "Int64", "bm25_rank": "Int64"})
    try:
        old = read_run_table(old_path, dtypes)
    except NotARunDir as exc:  # a table that cannot be compared is a difference, like a missing one
        return [f"{name}: {exc}"]
    new = pd.read_csv(new_path, dtype=dtypes)
    missing = [k for k in keys if k not in old.columns]
    if missing:
        return [f"{name}: lacks the key column(s) {', '.join(missing)}"]
    return _diff_frames(name, old, new, keys)


def _diff_trec(name: str, old_path: Path, new_path: Path) -> list[str]:
    from vaulteval.workbench.runs import Run

    if not old_path.is_file():
        return [f"{name}: missing from the run directory"]
    old, new = Run.from_trec(old_path).df, Run.from_trec(new_path).df
    return _diff_frames(name, old, new, ["query_id", "rank"])
