"""The fault suites' machinery: kill points, concurrent loops, a full or read-only disk, byte accounting.

Usage (from the tests in this folder, or by hand)::

    stats = crash_suite(tmp_path, n_points=6)          # {"points": 6, "survived": 6, ...}
    stats = concurrency_suite(tmp_path, seconds=8)     # {"queries": ..., "stale_served": 0, ...}
    python tests/reliability/faults.py retrieve-worker VAULT DEADLINE OUT   # one looping reader

Size: ``VAULTEVAL_RELIABILITY=full`` selects the full configuration (50 kill
points, 60 s of concurrency); anything else the small one that ``make test`` runs.
Every suite runs the real CLI in subprocesses with timeouts, so a hang fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from vaulteval.vault.metadir import META_REL

FULL = os.environ.get("VAULTEVAL_RELIABILITY", "").lower() == "full"
HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
QUERIES = ("descaling citric acid espresso", "zfs pool server boot disk", "churnword marker")
STEP_TIMEOUT = 120


# -- environment and processes ------------------------------------------------------

def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a child: this checkout first on the path, no vault or Ollama selection leaking in."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VAULTEVAL_VAULT", "CLAUDE_OBSIDIAN_VAULT", "OLLAMA_HOST", "OLLAMA_URL",
                        "VAULTEVAL_TEST_PAUSE_AT", "VAULTEVAL_TEST_PAUSE_FILE")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env.update(extra)
    return env


def cli(*args: Any, env: dict[str, str] | None = None, timeout: float = STEP_TIMEOUT,
        **popen: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaulteval", *map(str, args)], capture_output=True, text=True,
                          env=env or cli_env(), timeout=timeout, **popen)


# -- byte accounting ----------------------------------------------------------------

def tree(root: Path, *, skip_meta: bool = False) -> dict[str, tuple]:
    """Every entry under ``root`` -> ("file", sha256, size) / ("link", target) / ("dir",)."""
    out: dict[str, tuple] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        if skip_meta and Path(dirpath) == root and ".vault-meta" in dirnames:
            dirnames.remove(".vault-meta")
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = ("link", os.readlink(full))
            elif full.is_dir():
                out[rel] = ("dir",)
            else:
                data = full.read_bytes()
                out[rel] = ("file", hashlib.sha256(data).hexdigest(), len(data))
    return out


def bytes_changed(before: dict[str, tuple], after: dict[str, tuple]) -> int:
    """Bytes in files that appeared, vanished or changed (both versions counted); 1 per other entry change."""
    total = 0
    for rel in set(before) | set(after):
        a, b = before.get(rel), after.get(rel)
        if a == b:
            continue
        sizes = [e[2] for e in (a, b) if e is not None and e[0] == "file"]
        total += sum(sizes) or 1
    return total


class Guard:
    """Snapshots of the vault outside .vault-meta and of a sentinel folder outside the vault."""

    def __init__(self, vault: Path, outside: Path):
        self.vault, self.outside = vault, outside
        outside.mkdir(parents=True, exist_ok=True)
        (outside / "keep.txt").write_text("not vaulteval's to touch\n")
        (outside / "chunks").mkdir(exist_ok=True)
        (outside / "chunks" / "c-000103").mkdir(exist_ok=True)
        self.take()

    def take(self) -> None:
        self.notes, self.others = tree(self.vault, skip_meta=True), tree(self.outside)

    def changed(self) -> tuple[int, int]:
        """(bytes changed in the vault outside .vault-meta, bytes changed outside the vault)."""
        return bytes_changed(self.notes, tree(self.vault, skip_meta=True)), \
            bytes_changed(self.others, tree(self.outside))


# -- vaults ---------------------------------------------------------------------------

def provisioned_template(base: Path) -> Path:
    """A provisioned copy of the sample vault with three churn pages (copied per scenario)."""
    from vaulteval.cli.sample import copy_sample
    from vaulteval.pipeline.provision import provision
    from vaulteval.vault.vault import Vault

    root = copy_sample(base / "template")
    for i in range(3):
        write_churn(root, i, 0)
    provision(Vault(root))
    return root


def write_churn(root: Path, page: int, version: int) -> None:
    path = root / "wiki" / "churn" / f"Churn {page}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = f"# Churn {page}\n\nchurnword marker version {version} of page {page}.\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, path)  # an editor's atomic save


def check_index(root: Path, *, require: bool = False) -> str | None:
    """None when the served index is consistent with the chunk files and complete; else what is wrong.

    An index that cannot be opened (exit 10) is fine unless ``require``.
    """
    from vaulteval.chunks.integrity import IntegrityChecker
    from vaulteval.errors import NotProvisioned
    from vaulteval.index.build import RecordRejected, validate_record
    from vaulteval.index.reader import open_index
    from vaulteval.vault.vault import Vault

    vault = Vault(root)
    try:
        index = open_index(vault)
    except NotProvisioned as exc:
        return f"no usable index: {exc}" if require else None
    checker = IntegrityChecker(vault)
    indexed = set()
    for doc in index.all_docs():
        indexed.add(doc.chunk_file)
        if checker.record(doc) is None:
            return f"indexed {doc.chunk_file} does not match the chunk record in the store"
    if not require:
        return None  # a killed writer's catalog may be ahead of the generation in service: that is its workspace
    from vaulteval.chunks.catalog import catalog_listing
    from vaulteval.chunks.segments import StoreReader
    from vaulteval.vault.metadir import MetaDir

    with MetaDir.open(vault) as meta:
        listing = catalog_listing(meta) or []
    reader = StoreReader(root / META_REL)
    for where, size, crc, chunk_id in listing:
        rec = reader.record(where, size, crc)
        try:
            page_path, _, _, page_hash = validate_record(vault, chunk_id.partition(":")[0], where, rec)
        except (ValueError, RecordRejected):
            continue
        if checker.page_hash(page_path) == page_hash and where not in indexed:
            return f"current chunk {chunk_id} ({where}) is missing from the index"
    reader.close()
    return None


def leftovers(root: Path, *, segments: bool) -> list[str]:
    """Temporary files, and (``segments``) segments named by neither the index in service nor the catalog."""
    from vaulteval.chunks.catalog import segments_named
    from vaulteval.pipeline.storegc import segments_in_service
    from vaulteval.vault.metadir import MetaDir
    from vaulteval.vault.vault import Vault

    meta_path = root / META_REL
    out = [str(p.relative_to(meta_path)) for p in meta_path.rglob("*.tmp")]
    with MetaDir.open(Vault(root)) as meta:
        named = segments_in_service(meta) | segments_named(meta)
    if segments:
        out += [p.name for p in (meta_path / "store").glob("seg-*.vcs") if p.name not in named]
    return out


# -- crash consistency ----------------------------------------------------------------

PROVISION_POINTS = ("locked", "chunk-written#1", "segment-written", "catalog-staged", "catalog-written",
                    "build-started", "index-serialised", "index-published")


def crash_points(n: int) -> list[tuple[str, str]]:
    """``n`` (command, pause point) pairs spread over every phase of provision and index build."""
    fixed = [("provision", p) for p in PROVISION_POINTS]
    fixed += [("index", p) for p in ("locked", "build-started", "index-serialised", "index-published")]
    if n <= 7:
        return [("provision", "locked"), ("provision", "segment-written"), ("provision", "catalog-staged"),
                ("provision", "catalog-written"), ("provision", "index-serialised"),
                ("provision", "index-published"), ("index", "index-published")][:n]
    writes = n - len(fixed)
    # About 45 chunk records change in the scenario below; spread the kills across them.
    spread = sorted({2 + round(i * 42 / max(writes - 1, 1)) for i in range(writes)})
    return fixed + [("provision", f"chunk-written#{k}") for k in spread]


def _edit_for_crash(root: Path) -> None:
    pages = sorted(p for p in (root / "wiki").rglob("*.md") if "churn" not in p.parts)
    for i, page in enumerate(pages[:40]):
        with open(page, "a", encoding="utf-8") as fh:
            fh.write(f"\n\nCrash-test paragraph {i}: quokka lantern {i}.\n")
    for page in pages[40:43]:
        page.unlink()
    for i in range(2):
        (root / "wiki" / f"Crash new {i}.md").write_text(f"# New {i}\n\nA new note about zeppelins {i}.\n")


def crash_once(template: Path, work: Path, command: str, point: str) -> dict[str, Any]:
    root = work / "v"
    shutil.copytree(template, root, symlinks=True)
    _edit_for_crash(root)
    guard = Guard(root, work / "outside")
    flag = work / "paused"
    args = ("provision",) if command == "provision" else ("index", "build")
    env = cli_env(VAULTEVAL_TEST_PAUSE_AT=point, VAULTEVAL_TEST_PAUSE_FILE=str(flag))
    proc = subprocess.Popen([sys.executable, "-m", "vaulteval", *args, "--vault", str(root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + STEP_TIMEOUT
    while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    reached = flag.exists()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    out: dict[str, Any] = {"point": f"{command}:{point}", "reached": reached, "problems": []}
    problems = out["problems"]
    if not reached:
        problems.append(f"never reached {point} (exit {proc.returncode}: {proc.stderr.read().strip()[:200]})")
    codes = []
    for q in QUERIES[:1]:
        r = cli("retrieve", "--vault", root, q, "--no-rerank")
        codes.append(r.returncode)
        # The previous generation (or the new one, whole) stays in service: never exit 10.
        if r.returncode != 0 or "Traceback" in r.stderr:
            problems.append(f"retrieve after the kill exited {r.returncode}: {r.stderr.strip()[:200]}")
    out["retrieve_exits"] = codes
    bad = check_index(root)
    if bad:
        problems.append(f"after the kill: {bad}")
    again = cli("provision", "--vault", root)
    if again.returncode != 0:
        problems.append(f"the next provision exited {again.returncode}: {again.stderr.strip()[:200]}")
    bad = check_index(root, require=True)
    if bad:
        problems.append(f"after the next provision: {bad}")
    left = leftovers(root, segments=False)
    if left:
        problems.append(f"left after the next provision: {left}")
    # The generation served when that provision started is kept for its readers; the one after removes it.
    again = cli("provision", "--vault", root)
    left = leftovers(root, segments=True)
    if again.returncode != 0 or left:
        problems.append(f"after a second provision (exit {again.returncode}): left {left}")
    out["bytes_notes"], out["bytes_outside"] = guard.changed()
    if out["bytes_notes"] or out["bytes_outside"]:
        problems.append(f"bytes changed: notes {out['bytes_notes']}, outside {out['bytes_outside']}")
    shutil.rmtree(work)
    return out


def crash_suite(base: Path, n_points: int) -> dict[str, Any]:
    template = provisioned_template(base)
    results = [crash_once(template, base / f"kill-{i}", cmd, point)
               for i, (cmd, point) in enumerate(crash_points(n_points))]
    survived = [r for r in results if not r["problems"]]
    return {"points": len(results), "survived": len(survived),
            "retrieve_exits": dict(Counter(c for r in results for c in r["retrieve_exits"])),
            "bytes_notes": sum(r["bytes_notes"] for r in results),
            "bytes_outside": sum(r["bytes_outside"] for r in results),
            "failures": [(r["point"], r["problems"]) for r in results if r["problems"]]}


# -- concurrency ----------------------------------------------------------------------

def retrieve_worker(vault: str, deadline: float, out: str) -> None:
    """Loop ``vaulteval retrieve`` (the CLI's own main) until the deadline; one JSON line per query."""
    import contextlib
    import io

    from vaulteval.cli.main import main

    i = 0
    with open(out, "w", encoding="utf-8") as log:
        while time.time() < deadline:
            query = QUERIES[i % len(QUERIES)] if i % 2 else QUERIES[2]
            i += 1
            buf, err = io.StringIO(), io.StringIO()
            t0 = time.time()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                try:
                    code = main(["retrieve", "--vault", vault, query, "--no-rerank", "--explain", "--top", "10"])
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 2
            t1 = time.time()
            row: dict[str, Any] = {"t0": t0, "t1": t1, "code": code, "err": err.getvalue()[-300:]}
            if code == 0:
                data = json.loads(buf.getvalue())
                row["stale"] = data["explain"]["stale_candidates_skipped"]
                row["hits"] = [(c["page_path"], c["snippet"]) for c in data["candidates"]]
            log.write(json.dumps(row) + "\n")


def editor_worker(vault: str, deadline: float, out: str) -> None:
    """Loop: rewrite one churn page with a new version, then provision; log each write's time window."""
    from vaulteval.errors import VaultevalError
    from vaulteval.pipeline.provision import provision
    from vaulteval.vault.vault import Vault

    v = Vault(vault)
    version = 0
    with open(out, "w", encoding="utf-8") as log:
        while time.time() < deadline:
            version += 1
            page = version % 3
            before = time.time()
            write_churn(Path(vault), page, version)
            after = time.time()
            try:
                provision(v)
                outcome = "ok"
            except VaultevalError as exc:
                outcome = type(exc).__name__
            log.write(json.dumps({"page": page, "version": version, "before": before, "after": after,
                                  "provision": outcome}) + "\n")
            log.flush()


def _stale_served(rows: list[dict], edits: list[dict]) -> int:
    """Hits whose churn version had been fully replaced before the query started."""
    replaced: dict[tuple[int, int], float] = {}
    last: dict[int, int] = {i: 0 for i in range(3)}
    for e in sorted(edits, key=lambda e: e["before"]):
        replaced[(e["page"], last[e["page"]])] = e["after"]
        last[e["page"]] = e["version"]
    stale = 0
    for row in rows:
        for page_path, snippet in row.get("hits", []):
            if not page_path.startswith("wiki/churn/"):
                continue
            words = snippet.split()
            version = int(words[words.index("version") + 1])
            page = int(words[words.index("page") + 1].rstrip("."))
            done = replaced.get((page, version))
            if done is not None and done < row["t0"]:
                stale += 1
    return stale


def concurrency_suite(base: Path, seconds: float, readers: int = 4) -> dict[str, Any]:
    template = provisioned_template(base)
    guard = Guard(template, base / "outside")
    deadline = time.time() + seconds
    env = cli_env()
    procs, logs = [], []
    for i in range(readers):
        log = base / f"reader-{i}.jsonl"
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, str(HERE), "retrieve-worker", str(template), str(deadline),
                                       str(log)], env=env))
    edit_log = base / "editor.jsonl"
    procs.append(subprocess.Popen([sys.executable, str(HERE), "editor-worker", str(template), str(deadline),
                                   str(edit_log)], env=env))
    for p in procs:
        p.wait(timeout=seconds + STEP_TIMEOUT)
    rows = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    edits = [json.loads(line) for line in edit_log.read_text().splitlines()]
    _, bytes_outside = guard.changed()
    # The editor's own writes to wiki/churn are expected; everything else in the notes must be untouched.
    churn = {k for k in set(guard.notes) | set(tree(template, skip_meta=True)) if k.startswith("wiki/churn")}
    notes_now = {k: v for k, v in tree(template, skip_meta=True).items() if k not in churn}
    notes_before = {k: v for k, v in guard.notes.items() if k not in churn}
    return {
        "seconds": seconds, "readers": readers, "queries": len(rows),
        "exits": dict(Counter(r["code"] for r in rows)),
        "stale_dropped": sum(r.get("stale", 0) for r in rows),
        "stale_served": _stale_served(rows, edits),
        "churn_hits": sum(1 for r in rows for h in r.get("hits", []) if h[0].startswith("wiki/churn/")),
        "edits": len(edits), "provisions": dict(Counter(e["provision"] for e in edits)),
        "worker_exits": [p.returncode for p in procs],
        "bytes_notes": bytes_changed(notes_before, notes_now), "bytes_outside": bytes_outside,
        "errors": sorted({r["err"].strip() for r in rows if r["code"] != 0})[:5],
    }


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    kind, vault_arg, deadline_arg, out_arg = sys.argv[1:5]
    {"retrieve-worker": retrieve_worker, "editor-worker": editor_worker}[kind](vault_arg, float(deadline_arg),
                                                                             out_arg)
