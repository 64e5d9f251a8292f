"""Run directories: write an evaluation with its manifest, and read one back.

Usage::

    path = write_run_dir(ev, Path("runs"))       # or ev.save("runs")
    loaded = load_run_dir(path)                   # manifest + Runs (from the TREC files, pool, traces)

A run directory holds ``manifest.json``, ``metrics.csv`` (run, measure, value,
n), ``per_query.csv`` (one row per run and query), ``misses.csv``,
``queries.csv`` (label and latency per query), ``pool.csv`` (candidate chunks),
one ``<run>.trec`` per strategy, ``report.md`` and ``vault-pages.txt`` (the
sha256 of every page, so ``vaulteval eval verify`` can name edited notes).
The manifest records package and Python versions, parameters, strategies,
the query set's sha256, fingerprints of the vault's pages and of each index,
analyzer and BM25 parameters, the embedding backend, model and digest, and
timestamps.
"""

from __future__ import annotations

import json
import platform
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.vault.paths import path_text_problem
from vaulteval.workbench.report import REPORT_DATA

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.workbench.runs import Run
    from vaulteval.vault.vault import Vault

# ``ev`` below is a ``vaulteval.workbench.evaluate.EvalRun``; evaluate imports this
# module to save itself, so the type is not imported back here.
EvalRun = Any

# Every result records the score it was ranked by, and queries.csv has the columns reranked and fallback.
SCHEMA = 2
MANIFEST = "manifest.json"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]{0,127}$")
PAGES_FILE = "vault-pages.txt"
PACKAGES = ("vaulteval", "numpy", "pandas", "scipy", "ir-measures", "pytrec-eval-terrier", "PyYAML", "PyStemmer")
RERANK_PACKAGES = {"ollama": ("ollama",), "sentence-transformers": ("sentence-transformers", "torch")}


class NotARunDir(UsageError):
    """The folder has no manifest.json written by vaulteval eval run."""


def _versions(names: tuple[str, ...]) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def rerank_info(run: "Run") -> dict[str, Any] | None:
    """Backend, model, host and model digest of a reranked run, as its reranker describes itself."""
    if run.strategy is None or run.strategy.reranker is None:
        return None
    info = run.strategy.reranker.describe()
    return {**{k: info.get(k) for k in ("backend", "model", "host", "digest", "input_scheme", "reachable", "error")},
            "labels": dict(run.labels), "fallback": run.fallback}


def build_manifest(ev: "EvalRun", run_id: str) -> dict[str, Any]:
    qs = ev.queryset
    strategies = []
    backends: set[str] = set()
    for run in ev.runs:
        rr = rerank_info(run)
        if rr:
            backends.add(rr["backend"])
        strategies.append({"name": run.name, "strategy": run.strategy.to_dict(), "trec": f"{run.name}.trec",
                           "index": run.env.describe() if run.env else None, "rerank": rr,
                           "labels": dict(run.labels), "fallback": run.fallback})
    packages = _versions(PACKAGES + tuple(p for b in sorted(backends) for p in RERANK_PACKAGES.get(b, ())))
    return {
        "schema": SCHEMA,
        "id": run_id,
        "started_at": ev.started_at,
        "finished_at": ev.finished_at,
        "seconds": round(ev.seconds, 3),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "parameters": ev.params,
        "vault": {"root": str(ev.vault.root), "fingerprint": ev.workspace.fingerprint.digest,
                  "pages": len(ev.workspace.fingerprint.pages), "bundled": ev.vault.is_bundled,
                  "notes_dir": ev.vault.notes_rel, "stale_pages": ev.stale.pages,
                  "stale_judged_pages": ev.stale.judged},
        "queryset": {**qs.summary(), "path": str(Path(qs.path).resolve()), "split": qs.extra.get("split"),
                     "qrels": qs.extra.get("qrels")},
        "cache_dir": str(ev.workspace.cache_dir),
        "executor": ev.executor,
        "strategies": strategies,
    }


def check_run_id(run_id: object) -> str:
    """A run id is one safe path component: letters, digits and . _ = + -, never ``..`` or a slash."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or ".." in run_id:
        raise UsageError(f"run id {run_id!r} must be one folder name of letters, digits and . _ = + - "
                         "(no slashes, no '..')")
    return run_id


def render_report(data: dict[str, Any]):
    """The Report that report.json describes (report.md is always rendered through this)."""
    from vaulteval.workbench.report import Report

    return Report.from_data(data)


def new_run_id(out: Path, queryset_name: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{re.sub(r'[^A-Za-z0-9._-]+', '-', queryset_name).strip('-') or 'run'}"
    candidate, n = base, 1
    while (out / candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def write_run_dir(ev: "EvalRun", out: Path, run_id: str | None = None) -> Path:
    """Write the run directory ``out/<run_id>/`` (a new folder; an existing one is refused)."""
    import pandas as pd

    from vaulteval.vault.paths import is_inside

    if is_inside(ev.vault.root, out):
        raise UsageError(f"run directory {out} is inside the vault {ev.vault.root}; evaluation never writes "
                         "the vault, pass --out to a folder outside it")
    run_id = check_run_id(run_id) if run_id is not None else new_run_id(out, ev.queryset.name)
    target = out / run_id
    if target.exists() and any(target.iterdir()):
        raise UsageError(f"run directory {target} already exists; choose another --id")
    target.mkdir(parents=True, exist_ok=True)
    ev.metrics_long().to_csv(target / "metrics.csv", index=False)
    ev.per_query_wide().to_csv(target / "per_query.csv", index=False)
    ev.misses.to_csv(target / "misses.csv", index=False)
    ev.abstention.to_csv(target / "abstention.csv", index=False)
    pd.concat([r.queries.assign(run=r.name) for r in ev.runs])[["run", *ev.runs[0].queries.columns]] \
        .to_csv(target / "queries.csv", index=False)
    pd.concat([r.pool.assign(run=r.name) for r in ev.runs])[["run", *ev.runs[0].pool.columns]] \
        .to_csv(target / "pool.csv", index=False)
    for run in ev.runs:
        run.to_trec(target / f"{run.name}.trec")
    ev.report.save_dir(target)  # report.json and report.md rendered from it, without machine timings
    (target / PAGES_FILE).write_text(ev.workspace.fingerprint.lines(), encoding="utf-8")
    manifest = build_manifest(ev, run_id)
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


@dataclass
class RunDir:
    """A run directory read back: its manifest and its runs (without index access)."""

    path: Path
    manifest: dict[str, Any]
    runs: list["Run"]


MAX_RUN_JSON_BYTES = 64 << 20  # manifest.json and tune.json: far more than any run writes


def read_run_json(file: Path) -> Any:
    """A JSON file of a run directory (regular, bounded, strict: no NaN); NotARunDir, one line, otherwise."""
    from vaulteval.vault.bounded import Refused, load_json
    from vaulteval.vault.metadir import read_capped

    try:
        return load_json(read_capped(file, MAX_RUN_JSON_BYTES))
    except FileNotFoundError:
        raise NotARunDir(f"{file.parent} is not a run directory (no {file.name}); pass runs/<id>") from None
    except OSError as exc:
        raise NotARunDir(f"{file} cannot be read ({exc.strerror or exc}); pass runs/<id>") from None
    except Refused as exc:
        raise NotARunDir(f"{file} is malformed: {exc}") from None


MAX_RUN_TABLE_BYTES = 1 << 30


def read_run_table(file: Path, dtype: dict[str, Any]) -> "pd.DataFrame":
    """A CSV table of a run directory (regular, bounded); NotARunDir, one line, when it cannot be read."""
    import io

    import pandas as pd

    from vaulteval.vault.metadir import read_capped

    try:
        return pd.read_csv(io.BytesIO(read_capped(file, MAX_RUN_TABLE_BYTES)), dtype=dtype)
    except OSError as exc:
        raise NotARunDir(f"{file} cannot be read ({exc.strerror or exc}); pass runs/<id>") from None
    except ValueError as exc:  # pandas' ParserError, an empty file, a cell that is not its column's type
        raise NotARunDir(f"{file} is malformed ({str(exc).splitlines()[0][:200] if str(exc) else 'unreadable'})") \
            from None


def read_manifest(path: str | Path) -> dict[str, Any]:
    file = Path(path) / MANIFEST
    data = read_run_json(file)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        raise NotARunDir(f"{file} has run schema {str(schema)[:40]}; this vaulteval reads schema {SCHEMA} "
                         "only: run `vaulteval eval run` again")
    problem = _manifest_problem(data)
    if problem:
        raise NotARunDir(f"{file} is malformed: {problem}")
    return data


_KIND_NAMES = {(int,): "a whole number", (str,): "a name", (bool,): "true or false"}


def _manifest_problem(data: dict[str, Any]) -> str | None:
    """The first field that is missing or of the wrong shape (the manifest is untrusted input)."""
    try:
        check_run_id(data.get("id"))
    except UsageError as exc:
        return str(exc)
    shapes = {"vault": dict, "queryset": dict, "parameters": dict, "strategies": list}
    for key, kind in shapes.items():
        if not isinstance(data.get(key), kind):
            return f"{key} must be a {kind.__name__}"
    if not isinstance(data["vault"].get("root"), str) or not isinstance(data["vault"].get("fingerprint"), str):
        return "vault needs root and fingerprint"
    qs = data["queryset"]
    if not isinstance(qs.get("path"), str) or not isinstance(qs.get("sha256"), str):
        return "queryset needs path and sha256"
    for where, value in (("vault root", data["vault"]["root"]), ("vault notes_dir", data["vault"].get("notes_dir")),
                         ("queryset path", qs["path"]), ("queryset qrels", qs.get("qrels"))):
        if value is not None and (not isinstance(value, str) or path_text_problem(value)):
            return f"{where} {path_text_problem(value) if isinstance(value, str) else 'must be a string'}"
    params = data["parameters"]
    if not isinstance(params.get("measures"), list) or not isinstance(params.get("k"), int) \
            or isinstance(params["k"], bool):
        return "parameters need measures and k"
    if not params["measures"] or not all(isinstance(m, str) and m for m in params["measures"]):
        return "parameters.measures must be a non-empty list of measure names such as nDCG@10"
    for key, kinds in (("seed", (int,)), ("baseline", (str,)), ("use_vault_index", (bool,)),
                       ("condensed", (bool,))):
        value = params.get(key)
        if value is not None and (not isinstance(value, kinds) or (kinds == (int,) and isinstance(value, bool))):
            return f"parameters.{key} must be {_KIND_NAMES[kinds]}"
    stale = data["vault"].get("stale_pages")
    if stale is not None and (type(stale) is not int or stale < 0):
        return "vault.stale_pages must be a whole number"
    split = qs.get("split")
    if split is not None and not isinstance(split, str):
        return "queryset.split must be a split name"
    if not data["strategies"]:
        return "no strategies"
    for entry in data["strategies"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) \
                or not isinstance(entry.get("strategy"), dict):
            return "each strategy needs a name and its settings"
        trec = entry.get("trec")
        if not isinstance(trec, str) or "/" in trec or "\\" in trec or trec.startswith(".") or not trec.endswith(".trec"):
            return f"strategy trec file {trec!r} must be a plain file name ending in .trec"
    return None


def load_run_dir(path: str | Path) -> RunDir:
    """Usage: ``load_run_dir("runs/<id>").runs`` -> Runs with strategy, pool and per-query labels."""
    from vaulteval.workbench.runs import Run
    from vaulteval.workbench.strategy import Strategy

    folder = Path(path)
    manifest = read_manifest(folder)
    pool = read_run_table(folder / "pool.csv", {"query_id": str})
    queries = read_run_table(folder / "queries.csv", {"query_id": str})
    missing = [c for c in ("reranked", "fallback") if c not in queries.columns]
    if missing:
        raise NotARunDir(f"{folder / 'queries.csv'} lacks the column(s) {', '.join(missing)}; run `vaulteval eval run` "
                         "again")
    runs = []
    for entry in manifest["strategies"]:
        run = Run.from_trec(folder / entry["trec"], name=entry["name"])
        run.df["query_id"] = run.df.query_id.astype(str)
        run.strategy = Strategy.from_dict(entry["strategy"])
        run.pool = pool[pool.run == entry["name"]].drop(columns="run").reset_index(drop=True)
        run.queries = queries[queries.run == entry["name"]].drop(columns="run").reset_index(drop=True)
        runs.append(run)
    return RunDir(folder, manifest, runs)


def queryset_path(folder: str | Path, info: dict[str, Any]) -> str:
    """The query set a run directory was scored on: the manifest's path, else the file of that name beside the
    run directory (a baseline run kept in a repository next to its query set, checked out elsewhere)."""
    recorded = Path(info["path"])
    if recorded.exists():
        return str(recorded)
    beside = Path(folder).resolve().parent / recorded.name
    return str(beside) if beside.exists() else str(recorded)


def compare_run_dirs(paths: list[str | Path], *, baseline: str | None = None, measures: Any = None,
                     k: int | None = None, vault: "str | Path | Vault | None" = None):
    """Usage: ``compare_run_dirs(["runs/a", "runs/b"])`` -> Report over every run they hold.

    The runs must share a query set (same sha256); names that collide are
    prefixed with their run id (``<id>/bm25``).
    """
    from vaulteval.workbench.compare import compare
    from vaulteval.querysets.queryset import load_queryset

    dirs = [load_run_dir(p) for p in paths]
    shas = {d.manifest["queryset"]["sha256"] for d in dirs}
    if len(shas) > 1:
        raise UsageError("these run directories used different query sets; compare runs of one query set")
    seen: dict[str, int] = {}
    for d in dirs:
        for r in d.runs:
            seen[r.name] = seen.get(r.name, 0) + 1
    runs = []
    for d in dirs:
        for r in d.runs:
            if seen[r.name] > 1:
                r.name = f"{d.manifest['id']}/{r.name}"
            runs.append(r)
    first = dirs[0].manifest
    info = first["queryset"]
    if vault is None:
        from vaulteval.vault.vault import Vault

        vault = Vault(first["vault"]["root"], notes_dir=first["vault"].get("notes_dir"))
    qs = load_queryset(queryset_path(dirs[0].path, info), vault, qrels=info.get("qrels"),
                       split=info.get("split") or "test")
    report = compare(runs, qs, measures or first["parameters"]["measures"], baseline=baseline,
                     k=k or first["parameters"]["k"])
    if qs.sha256 != info["sha256"]:
        report.notes.append(f"WARNING the query set {info['path']} changed since these runs were made")
    return report
