"""vaulteval beside the engines a user could pick instead: tantivy, SQLite FTS5 and bm25s, in one interleaved run.

Usage::

    .venv/bin/python benchmarks/peers.py --tldr "$TLDR" --scifact "$SCIFACT" --work-dir /tmp/peers
    .venv/bin/python benchmarks/peers.py --tldr "$TLDR" --cold 10 --passes 2 --skip-scifact   # a short run
    .venv/bin/python benchmarks/peers.py --engines vaulteval,tantivy --build-only --work-dir /tmp/peers  # builds

The tldr pages are unpacked once into a vault (``wiki/``); every engine indexes
the same pages (vaulteval its chunks, the peers one document per page, with
their defaults) in a folder of its own under ``--work-dir``. Then, engine by
engine in turn (interleaved, so load changes hit all of them alike):

- full build: a fresh process that reads the pages and writes the index
  (vaulteval: ``provision --no-llm``);
- index on disk: bytes and allocated blocks of everything the engine keeps
  (vaulteval: ``.vault-meta/vaulteval``, index and chunk records);
- cold query: a fresh process per query, opening the index and printing the top
  5 paths, p50 / p95, and its peak RSS (VmHWM);
- in-process: one process, the index opened once, ``--queries`` queries
  ``--passes`` times (vaulteval verifies every served chunk against its record
  and note, the peers verify nothing), ``--rounds`` interleaved processes per
  engine, the best one counted;
- top-1 agreement of each peer with vaulteval's first page;
- SciFact (300 test claims): nDCG@10 of each engine (ir-measures).

Each figure is printed with its ratio to the best peer. tantivy and bm25s come
from the ``bench`` extra (``pip install vaulteval[bench]``); nothing is
downloaded. Only the ratios of one run mean anything on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data")
ENGINES = ("vaulteval", "tantivy", "fts5", "bm25s")
PEERS = ENGINES[1:]
sys.path.insert(0, str(REPO))

from vaulteval.pipeline.bench import CLI_PROBE, probe_peak_rss_kb  # noqa: E402

# What the console script runs (``vaulteval.cli.run``), for the commands whose memory is not measured.
CLI_RUN = "from vaulteval.cli import run\nrun()\n"

# Written for this benchmark in the style of tldr pages' descriptions (what a user types to find a command).
HAND_QUERIES = [
    "list docker containers", "extract a tar.gz archive", "show disk usage of a folder", "find files by name",
    "kill a process by name", "show open network ports", "change file permissions recursively",
    "create a symbolic link", "compress a folder into zip", "download a file with curl",
    "search text in files recursively", "show the last lines of a log file", "list git branches",
    "undo the last git commit", "rename a git branch", "show running processes", "monitor system resources",
    "copy files over ssh", "mount a disk image", "format a usb drive", "check memory usage",
    "convert video to mp4", "resize an image", "count lines in a file", "sort lines and remove duplicates",
    "schedule a job with cron", "add a user to a group", "restart a systemd service", "show kernel messages",
    "set an environment variable", "install a python package", "create a virtual environment",
    "show the current ip address", "test network connectivity", "trace the route to a host",
    "generate an ssh key", "encrypt a file with gpg", "compare two files", "apply a patch",
    "show calendar", "print the date in utc", "split a large file", "watch a command every second",
    "replace text in a file with sed", "print a column with awk", "list installed packages",
    "update the package list", "show the size of a directory", "view a pdf", "record the terminal session",
]

# Each worker runs in a fresh interpreter: argv[1] the index folder, argv[2] a JSON file of queries (or docs).
_RSS = "hwm=[l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"

BUILD = {
    "tantivy": r"""
import json, sys, tantivy
sb = tantivy.SchemaBuilder()
sb.add_text_field("path", stored=True, tokenizer_name="raw")
sb.add_text_field("body", stored=True)
index = tantivy.Index(sb.build(), path=sys.argv[1])
writer = index.writer()
for line in open(sys.argv[2], encoding="utf-8"):
    d = json.loads(line)
    writer.add_document(tantivy.Document(path=d["path"], body=d["text"]))
writer.commit()
writer.wait_merging_threads()
""",
    "fts5": r"""
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/fts.db")
db.execute("CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, body)")
with db:
    db.executemany("INSERT INTO docs VALUES (?, ?)",
                   ((d["path"], d["text"]) for d in map(json.loads, open(sys.argv[2], encoding="utf-8"))))
db.close()
""",
    "bm25s": r"""
import json, sys, bm25s, Stemmer
docs = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
tokens = bm25s.tokenize([d["text"] for d in docs], stopwords="en", stemmer=Stemmer.Stemmer("english"),
                        show_progress=False)
retriever = bm25s.BM25()
retriever.index(tokens, show_progress=False)
retriever.save(sys.argv[1])
json.dump([d["path"] for d in docs], open(sys.argv[1] + "/paths.json", "w"))
""",
}

# Open the index, answer each query (top k paths); print {"seconds": loop time, "top": [[paths] per query]}.
QUERY = {
    "vaulteval": r"""
import json, sys, time
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.vault.vault import Vault
queries, passes, k = json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
r = Retriever(Vault(sys.argv[1]))
r.open()  # index, numpy and the warm preload, as tantivy's searcher is opened before its loop
t0 = time.perf_counter()
for p in range(passes):
    top = [[c.page_path for c in r.retrieve(q, top=k).candidates] for q in queries]
""",
    "tantivy": r"""
import json, re, sys, time, tantivy
queries, passes, k = json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
index = tantivy.Index.open(sys.argv[1])
searcher = index.searcher()
def one(q):
    words = re.findall(r"\w+", q)
    if not words:
        return []
    hits = searcher.search(index.parse_query(" ".join(words), ["body"]), k).hits
    return [searcher.doc(addr)["path"][0] for _score, addr in hits]
t0 = time.perf_counter()
for p in range(passes):
    top = [one(q) for q in queries]
""",
    "fts5": r"""
import json, re, sqlite3, sys, time
queries, passes, k = json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
db = sqlite3.connect(f"file:{sys.argv[1]}/fts.db?mode=ro", uri=True)
def one(q):
    words = re.findall(r"\w+", q)
    if not words:
        return []
    match = " OR ".join('"' + w + '"' for w in words)
    return [row[0] for row in db.execute("SELECT path FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?", (match, k))]
t0 = time.perf_counter()
for p in range(passes):
    top = [one(q) for q in queries]
""",
    "bm25s": r"""
import json, sys, time, bm25s, Stemmer
queries, passes, k = json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
retriever = bm25s.BM25.load(sys.argv[1], mmap=True)
paths = json.load(open(sys.argv[1] + "/paths.json"))
stemmer = Stemmer.Stemmer("english")
def one(q):
    tokens = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)[0]
    tokens = [t for t in tokens if t in retriever.vocab_dict]
    if not tokens:
        return []
    docs, scores = retriever.retrieve([tokens], k=min(k, len(paths)), show_progress=False, n_threads=1)
    return [paths[d] for d, s in zip(docs[0].tolist(), scores[0].tolist()) if s > 0]
t0 = time.perf_counter()
for p in range(passes):
    top = [one(q) for q in queries]
""",
}
_QUERY_END = "\nseconds = time.perf_counter() - t0\n" + _RSS + \
    "print(json.dumps({'seconds': seconds, 'top': top, 'rss_kb': int(hwm)}))\n"


_CPU: list[float] = [0.0]  # CPU seconds (user + system) of the last _run's process
_STDERR: list[str] = [""]  # and what it wrote on stderr


def _run(code: str, *args: object, env: dict | None = None) -> tuple[float, str]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _CPU[0] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    _STDERR[0] = proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"{code.strip().splitlines()[0]}...: {proc.stderr.strip()[-2000:]}")
    return took, proc.stdout


_PYCACHE: list[Path] = []


def _env() -> dict:
    """This checkout first on the path; compiled modules cached in the work folder for every engine alike
    (a shell with PYTHONDONTWRITEBYTECODE would make each cold start compile its imports)."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if _PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE[0])
    return env


def _disk(folder: Path) -> tuple[int, int]:
    """(bytes, allocated bytes) of every regular file under ``folder``."""
    size = blocks = 0
    for path in folder.rglob("*"):
        st = path.lstat()
        if path.is_file() and not path.is_symlink():
            size += st.st_size
            blocks += st.st_blocks * 512
    return size, blocks


def _pctl(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def prepare_tldr(tar: Path, work: Path) -> tuple[Path, Path]:
    """The pages as a vault (``work/tldr/wiki``) and as one JSON line per page (path, text) for the peers."""
    vault_root = work / "tldr"
    pages = vault_root / "wiki"
    if not pages.exists():
        src = work / "tldr-src"
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        with tarfile.open(tar) as tf:
            tf.extractall(src, filter="data")
        pages.mkdir(parents=True)
        for folder in sorted(src.glob("pages*")) or sorted(src.glob("*/pages*")):
            if folder.is_dir():
                shutil.copytree(folder, pages / folder.name)
        shutil.rmtree(src)
    docs = work / "tldr-docs.jsonl"
    if not docs.exists():
        from vaulteval.vault.vault import Vault

        with open(docs, "w", encoding="utf-8") as out:
            for page in Vault(vault_root).iter_pages():  # the pages vaulteval indexes (it skips dot-files: ..md)
                text = Path(page.abspath).read_bytes().decode("utf-8", "replace")
                out.write(json.dumps({"path": page.rel, "text": text}, ensure_ascii=False) + "\n")
    return pages, docs


def build_all(pages: Path, docs: Path, work: Path, engines: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for engine in engines:
        folder = work / "engines" / engine
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        if engine == "vaulteval":
            shutil.copytree(pages, folder / "wiki")
            seconds, _ = _run(CLI_RUN, "provision", "--vault", folder, "--no-llm", env=_env())
            meta = folder / ".vault-meta" / "vaulteval"
            size, alloc = _disk(meta)
            index_size = sum(p.stat().st_size for p in (meta / "bm25").glob("*.vti"))
            out[engine] = {"build_s": seconds, "build_cpu_s": _CPU[0], "disk_bytes": size, "disk_alloc": alloc,
                           "index_bytes": index_size, "files": sum(1 for p in meta.rglob("*") if p.is_file())}
        else:
            seconds, _ = _run(BUILD[engine], folder, docs, env=_env())
            size, alloc = _disk(folder)
            out[engine] = {"build_s": seconds, "build_cpu_s": _CPU[0], "disk_bytes": size, "disk_alloc": alloc,
                           "index_bytes": size, "files": sum(1 for p in folder.rglob("*") if p.is_file())}
        print(f"  built {engine}: {out[engine]['build_s']:.2f} s, {out[engine]['disk_alloc'] / 1e6:.1f} MB allocated",
              file=sys.stderr)
    return out


def query_all(work: Path, engines: list[str], queries: list[str], *, cold: int, passes: int,
              rounds: int = 2) -> dict[str, dict]:
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(queries, ensure_ascii=False))
    out: dict[str, dict] = {e: {"cold_s": [], "cold_rss_kb": []} for e in engines}
    bare = []
    # The first round is not timed: it fills the compiled-module cache and the page cache for every engine.
    for i, q in enumerate(queries[:cold + 1]):  # cold: one fresh process per query, engines interleaved
        one = work / "one.json"
        one.write_text(json.dumps([q], ensure_ascii=False))
        seconds = _run("pass", env=_env())[0]
        if i:
            bare.append(seconds)
        for engine in engines:
            if engine == "vaulteval":
                seconds, _ = _run(CLI_PROBE, "retrieve", "--vault", work / "engines" / engine, q, "--no-rerank",
                                  "--top", "5", env=_env())
                rss = probe_peak_rss_kb(_STDERR[0])
            else:
                seconds, text = _run(QUERY[engine] + _QUERY_END, work / "engines" / engine, one, 1, 5, env=_env())
                rss = json.loads(text)["rss_kb"]
            if i:
                out[engine]["cold_s"].append(seconds)
                out[engine]["cold_rss_kb"].append(rss)
    for _round in range(rounds):  # in-process: the index opened once, every query `passes` times; best round
        for engine in engines:
            _, text = _run(QUERY[engine] + _QUERY_END, work / "engines" / engine, qfile, passes, 5, env=_env())
            result = json.loads(text)
            out[engine]["in_process_s"] = min(result["seconds"], out[engine].get("in_process_s", float("inf")))
            out[engine]["top"] = result["top"]
    out["python"] = {"cold_s": bare}
    return out


def scifact(src: Path, work: Path, engines: list[str]) -> dict[str, float]:
    """nDCG@10 of every engine on SciFact's 300 test claims (ir-measures), documents as title + text."""
    import gzip

    import ir_measures

    folder = work / "scifact"
    docs = folder / "docs.jsonl"
    if not docs.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with gzip.open(src / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh, open(docs, "w", encoding="utf-8") as out:
            for line in fh:
                d = json.loads(line)
                out.write(json.dumps({"path": d["_id"], "text": f"{d.get('title', '')}\n{d['text']}"}) + "\n")
    qrels = [ir_measures.Qrel(q, d, int(s)) for q, d, s in
             (line.rstrip("\n").split("\t") for line in list(open(src / "qrels" / "test.tsv"))[1:])]
    wanted = sorted({q.query_id for q in qrels})
    texts = {q["_id"]: q["text"] for q in map(json.loads, open(src / "queries.jsonl", encoding="utf-8"))}
    qfile = folder / "queries.json"
    qfile.write_text(json.dumps([texts[q] for q in wanted]))
    scores: dict[str, float] = {}
    for engine in engines:
        target = folder / engine
        if engine == "vaulteval":
            if not (target / ".vault-meta").exists():
                shutil.rmtree(target, ignore_errors=True)
                _run(CLI_RUN, "import", "beir", src, "--out", target, "--split", "test", env=_env())
                _run(CLI_RUN, "provision", "--vault", target, "--no-llm", env=_env())
        elif not target.exists():
            target.mkdir()
            _run(BUILD[engine], target, docs, env=_env())
        _, text = _run(QUERY[engine] + _QUERY_END, target, qfile, 1, 10, env=_env())
        run = []
        for qid, top in zip(wanted, json.loads(text)["top"]):
            for rank, path in enumerate(top):
                doc = _beir_id(path) if engine == "vaulteval" else path
                run.append(ir_measures.ScoredDoc(qid, doc, float(len(top) - rank)))
        scores[engine] = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, run)[ir_measures.nDCG @ 10]
    return scores


def _beir_id(page_path: str) -> str:
    from urllib.parse import unquote

    return unquote(page_path.rsplit("/", 1)[-1].removesuffix(".md"))


# What the CLI retrieve path may spend importing, in milliseconds (cumulative -X importtime of every
# top-level import, best of the runs); the profile found 24 ms for vaulteval.pipeline.retrieve alone.
IMPORT_BUDGET_MS = 40.0


def _imports(code: str, *args: object) -> tuple[float, set[str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *map(str, args)],
                          capture_output=True, text=True, env=_env())
    total, seen = 0, set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            _self, cumulative, name = line[len("import time:"):].split("|")
            seen.add(name.strip())
            if not name.startswith("  "):  # a top-level import: its cumulative time covers its children
                total += int(cumulative)
    return total / 1000, seen


def import_budget(vault: Path, query: str, runs: int = 5) -> tuple[float, int, int]:
    """(milliseconds, modules, vaulteval modules) a served CLI query imports beyond ``python -c pass``'s own
    (site, encodings), best of ``runs``."""
    code = ("import sys\nfrom vaulteval.cli.main import main\n"
            "sys.exit(main(['retrieve', '--vault', sys.argv[1], sys.argv[2], '--no-rerank']))")
    best, names = float("inf"), set()
    for _ in range(runs):
        bare, bare_names = _imports("pass")
        ms, seen = _imports(code, vault, query)
        if ms - bare < best:
            best, names = ms - bare, seen - bare_names
    return best, len(names), sum(1 for n in names if n.startswith("vaulteval"))


def _ratio(value: float, best: float) -> str:
    return f"{value / best:.2f}x" if best > 0 else "n/a"


def report(builds: dict, queries: dict, ndcg: dict | None, n_queries: int, passes: int) -> str:
    engines = list(builds)
    peers = [e for e in engines if e != "vaulteval"]

    def best(key: str, fn) -> float:
        return min(fn(e) for e in peers) if peers else 0.0

    cols = [
        ("full build", lambda e: builds[e]["build_s"], lambda v: f"{v:.2f} s"),
        ("on disk, allocated", lambda e: builds[e]["disk_alloc"], lambda v: f"{v / 1e6:.1f} MB"),
        ("cold query p50", lambda e: statistics.median(queries[e]["cold_s"]), lambda v: f"{v * 1000:.0f} ms"),
        ("cold query p95", lambda e: _pctl(queries[e]["cold_s"], 0.95), lambda v: f"{v * 1000:.0f} ms"),
        ("cold RSS", lambda e: max(queries[e]["cold_rss_kb"]), lambda v: f"{v / 1024:.0f} MB"),
        (f"{n_queries * passes:,} in-process queries", lambda e: queries[e]["in_process_s"], lambda v: f"{v:.3f} s"),
    ]
    lines = ["| system | " + " | ".join(name for name, _, _ in cols) + " | top-1 = vaulteval's |"
             + (" SciFact nDCG@10 |" if ndcg else ""),
             "|---" * (len(cols) + 2 + bool(ndcg)) + "|"]
    v_top = queries["vaulteval"]["top"] if "vaulteval" in queries else None
    for e in engines:
        cells = []
        for _name, fn, fmt in cols:
            value = fn(e)
            cells.append(fmt(value) + (f" ({_ratio(value, best(_name, fn))})" if e == "vaulteval" and peers else ""))
        agree = ""
        if v_top is not None:
            pairs = [(a[:1], b[:1]) for a, b in zip(v_top, queries[e]["top"]) if a]
            agree = f"{sum(a == b for a, b in pairs) / max(1, len(pairs)):.0%}"
        row = f"| {e} | " + " | ".join(cells) + f" | {agree} |"
        if ndcg:
            row += f" {ndcg.get(e, float('nan')):.4f} |"
        lines.append(row)
    bare = statistics.median(queries["python"]["cold_s"])
    lines.append("")
    lines.append(f"`python -c pass` p50: {bare * 1000:.0f} ms. Ratios in brackets: vaulteval against the best peer "
                 f"in that column (lower is better).")
    if "vaulteval" in builds:
        b = builds["vaulteval"]
        lines.append(f"vaulteval keeps {b['files']:,} files in .vault-meta/vaulteval ({b['disk_bytes'] / 1e6:.1f} MB, "
                     f"{b['disk_alloc'] / 1e6:.1f} MB allocated; index and field index {b['index_bytes'] / 1e6:.1f} MB).")
    return "\n".join(lines)


def build_report(builds: dict) -> str:
    """The full build and on-disk columns, each engine against the best peer (``--build-only``)."""
    peers = [e for e in builds if e != "vaulteval"]
    lines = ["| system | full build | its CPU time (user + system) | on disk, allocated | files |",
             "|---|---|---|---|---|"]
    for e, b in builds.items():
        cells = [f"{b['build_s']:.2f} s", f"{b.get('build_cpu_s', float('nan')):.2f} s", f"{b['disk_alloc'] / 1e6:.1f} MB"]
        if e == "vaulteval" and peers:
            for i, key in enumerate(("build_s", "build_cpu_s", "disk_alloc")):
                best = min(builds[p].get(key, float("nan")) for p in peers)
                cells[i] += f" ({_ratio(b.get(key, float('nan')), best)})"
        lines.append(f"| {e} | " + " | ".join(cells) + f" | {b['files']:,} |")
    if "vaulteval" in builds:
        b = builds["vaulteval"]
        lines.append(f"\nvaulteval: index and field index {b['index_bytes'] / 1e6:.1f} MB of {b['disk_bytes'] / 1e6:.1f} MB.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tldr", type=Path, default=DATA / "tldr-pages.tar.gz")
    ap.add_argument("--scifact", type=Path, default=DATA / "scifact")
    ap.add_argument("--work-dir", type=Path, help="keeps the unpacked pages between runs (default: a temporary folder)")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of " + ",".join(ENGINES))
    ap.add_argument("--queries", type=int, default=200, help="queries for the in-process loop and agreement")
    ap.add_argument("--passes", type=int, default=5, help="passes over the queries in-process (5 x 200 = 1,000)")
    ap.add_argument("--cold", type=int, default=20, help="fresh-process queries per engine")
    ap.add_argument("--rounds", type=int, default=2,
                    help="in-process runs per engine, interleaved; the best counts (the first also warms the page cache)")
    ap.add_argument("--skip-build", action="store_true", help="query the engines already built in --work-dir")
    ap.add_argument("--skip-scifact", action="store_true")
    ap.add_argument("--build-only", action="store_true",
                    help="build every engine and print the build and disk columns only (no query rounds, no SciFact)")
    args = ap.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    if "vaulteval" not in engines or set(engines) - set(ENGINES):
        ap.error(f"--engines must include vaulteval and name only {', '.join(ENGINES)}")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="vaulteval-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    _PYCACHE.append(work / "pycache")
    pages, docs = prepare_tldr(args.tldr, work)
    from vaulteval.pipeline.bench import pick_queries
    from vaulteval.vault.vault import Vault

    queries = (HAND_QUERIES + pick_queries(Vault(work / "tldr"), args.queries))[: args.queries]
    if args.skip_build:
        builds = json.loads((work / "builds.json").read_text())
        from reused_vault import older_store

        warning = older_store(work / "engines" / "vaulteval") if "vaulteval" in engines else None
        if warning:
            print(f"# WARNING {warning}", file=sys.stderr)
    else:
        builds = build_all(pages, docs, work, engines)
        (work / "builds.json").write_text(json.dumps(builds))
    if args.build_only:
        print(build_report({e: builds[e] for e in engines}))
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    results = query_all(work, engines, queries, cold=args.cold, passes=args.passes, rounds=args.rounds)
    ndcg = None if args.skip_scifact else scifact(args.scifact, work, engines)
    print(report({e: builds[e] for e in engines}, results, ndcg, len(queries), args.passes))
    ms, modules, own = import_budget(work / "engines" / "vaulteval", queries[0])
    print(f"CLI retrieve imports: {ms:.1f} ms, {modules} modules ({own} of vaulteval); budget {IMPORT_BUDGET_MS:.0f} ms: "
          f"{'within' if ms <= IMPORT_BUDGET_MS else 'over'}")
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
