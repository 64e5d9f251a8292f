"""The warm agent path (issue 24): MCP search over stdio and HTTP, the CLI's hybrid query, and two other engines.

Usage::

    .venv/bin/python benchmarks/mcp_bench.py --work /tmp/mcp-bench \
        --tldr "$DATA/tldr-pages.tar.gz" --help-vault "$DATA/obsidian-help.tar.gz"
    .venv/bin/python benchmarks/mcp_bench.py --work /tmp/mcp-bench ... --calls 200 --cli-runs 10 --skip-engines

Builds (once, in ``--work``, never in the data folder) a tldr vault
(provisioned, BM25) and the English Obsidian help vault (provisioned with
MiniLM vectors through sentence-transformers, so it also gets the ONNX
export). Then prints, with the issue's targets:

- warm MCP ``search`` over stdio, BM25 on tldr: p50 / p95 over ``--calls``
  calls as the SDK client sees them;
- the in-process loop of 1,000 queries on tldr (one Retriever, verification
  included);
- warm MCP hybrid ``search`` on the help vault: p50 / p95;
- CLI ``retrieve --strategy hybrid:cc`` on the help vault: p50 of wall and
  CPU time and the peak RSS of ``--cli-runs`` fresh processes;
- a fresh-process tantivy query and a fresh-process SQLite FTS5 query over the
  same tldr pages (indexes built in ``--work``), beside vaulteval's cold CLI
  BM25 query and warm MCP call;
- over HTTP: short searches from 3 clients while a 4th runs long ones
  (``limit`` and ``bm25_top`` 1000), against the same short searches alone;
- ``launch`` (on the provisioned vaults of ``--launch-vaults``, none of them
  built here): a fresh stdio server with its default pipeline, milliseconds
  from launch to ``initialize`` answered, to ``tools/list`` answered, and to
  the first ``search`` answered (sent right after ``tools/list``), with the
  server's CPU time at both, over ``--launch-runs`` launches; with ``--baseline-src DIR`` (another checkout of
  vaulteval, e.g. ``git archive main | tar -x -C DIR``) the same launches of
  that code are interleaved with these;
- ``cold`` (same vaults): a fresh ``vaulteval retrieve --vault V "query"``
  with the vault's default pipeline and no flags, p50 wall and CPU time and
  peak RSS, interleaved with the baseline's as ``launch`` does.

Usage for the last two::

    .venv/bin/python benchmarks/mcp_bench.py --work /tmp/mcp-bench --parts launch,cold \
        --launch-vaults /tmp/help-en,/tmp/sample --launch-runs 7 --baseline-src /tmp/vaulteval-main

Every measurement is a median over interleaved runs; the load average is printed.
The help vault's queries each end with a word no note has, new in every run of
the script: a query's vector is cached in the vault (``embeddings.sqlite``), and
a repeated query would never open or run the ONNX session.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ("stdio", "inprocess", "hybrid", "cli", "engines", "http", "launch", "cold")
BUILT = {"stdio", "inprocess", "hybrid", "cli", "engines", "http"}  # the parts on the vaults built in --work
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(REPO))
# Processes start as an installed copy would: from cached bytecode (kept outside the checkout), not recompiled.
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
ENV.setdefault("PYTHONPYCACHEPREFIX", "/tmp/vaulteval-bench-pycache")


def say(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def vaulteval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaulteval", *args], env=ENV, capture_output=True, text=True)


def build_vaults(work: Path, tldr: Path, help_archive: Path, parts: set[str]) -> tuple[Path, Path]:
    """The vaults the chosen parts measure (the help vault only for ``hybrid`` and ``cli``)."""
    tldr_root, help_root = work / "tldr-vault", work / "help-vault"
    if parts - {"hybrid", "cli"} and not (tldr_root / ".vault-meta").is_dir():
        say("building the tldr vault (extract + provision)")
        (tldr_root / "wiki").mkdir(parents=True, exist_ok=True)
        with tarfile.open(tldr) as tar:
            tar.extractall(tldr_root / "wiki", filter="data")
        proc = vaulteval("provision", "--vault", str(tldr_root), "--no-embed")
        assert proc.returncode == 0, proc.stderr
    if parts & {"hybrid", "cli"} and not (help_root / ".vault-meta").is_dir():
        say("building the help vault (en) with MiniLM vectors and the ONNX export")
        with tarfile.open(help_archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("en/")]
            tar.extractall(work / "help-src", members=members, filter="data")
        help_root.mkdir(parents=True, exist_ok=True)
        (work / "help-src" / "en").rename(help_root / "wiki")
        proc = vaulteval("provision", "--vault", str(help_root), "--embed", "--embedder", "st")
        assert proc.returncode == 0, proc.stderr
    return tldr_root, help_root


def queries_for(root: Path, n: int) -> list[str]:
    sys.path.insert(0, str(REPO))
    from vaulteval.pipeline.bench import pick_queries
    from vaulteval.vault.vault import Vault

    return pick_queries(Vault(root), n)


def warm_stdio(root: Path, queries: list[str], *flags: str, passes: int = 1) -> list[list[float]]:
    """Client-side milliseconds of each ``search`` call, per pass over ``queries``, after one warm-up call.

    The first pass meets every query's candidates for the first time (each chunk record and note is read and
    hashed); a second pass finds their verdicts remembered, as a long-running server mostly does.
    """
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> list[float]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "vaulteval", "mcp", "--vault", str(root),
                                                                     "--no-rerank", *flags], env=ENV)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.call_tool("search", {"query": queries[0]})
            runs = []
            for _ in range(passes):
                times = []
                for q in queries:
                    t0 = time.perf_counter()
                    result = await client.call_tool("search", {"query": q, "limit": 5})
                    times.append((time.perf_counter() - t0) * 1000)
                    assert not result.isError, result.content
                runs.append(times)
            return runs

    return anyio.run(main)


def in_process_loop(root: Path) -> float:
    code = ("import sys, time\nfrom vaulteval.pipeline.bench import pick_queries\n"
            "from vaulteval.pipeline.retrieve import Retriever\nfrom vaulteval.vault.vault import Vault\n"
            "v = Vault(sys.argv[1]); qs = pick_queries(v, 1000); r = Retriever(v); r.retrieve(qs[0], top=5)\n"
            "t = time.perf_counter()\nfor q in qs: r.retrieve(q, top=5)\nprint(time.perf_counter() - t)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(root)], env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout.split()[-1])


# Runs a command and prints its wall seconds, peak RSS (KiB) and CPU seconds. A child's peak RSS counts the
# process it was forked from until it execs (Python forks by vfork): measured from this small process, not from
# the benchmark, whose own size (the MCP client, numpy) would be a floor under every figure.
TIMED = ("import resource, subprocess, sys, time\n"
         "t = time.perf_counter()\n"
         "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
         "wall = time.perf_counter() - t\n"
         "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
         "print(wall, u.ru_maxrss, u.ru_utime + u.ru_stime, code)\n")


def timed_process(argv: list[str], src: Path = REPO) -> tuple[float, float, float]:
    """(seconds, peak RSS in MB, CPU seconds) of one fresh process (of the code in ``src``)."""
    proc = subprocess.run([sys.executable, "-c", TIMED, *argv], env=dict(ENV, PYTHONPATH=str(src)), cwd=str(src),
                          capture_output=True, text=True)
    wall, rss, cpu, code = proc.stdout.split()
    assert proc.returncode == 0 and code == "0", argv
    return float(wall), int(rss) / 1024, float(cpu)


def _child_cpu() -> float:
    """CPU seconds (user + system) of this process's one child so far: the server the client launched."""
    children = [int(pid) for task in Path("/proc/self/task").iterdir()
                for pid in (task / "children").read_text().split()]
    if len(children) != 1:
        return float("nan")
    fields = Path(f"/proc/{children[0]}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def launch_times(root: Path, query: str, src: Path = REPO, *flags: str) -> tuple[float, ...]:
    """Milliseconds from spawning ``vaulteval mcp`` (the code in ``src``, the vault's default pipeline unless
    ``flags`` name one) to ``initialize`` answered, to ``tools/list`` answered, and to the first ``search``
    (sent right after) answered; the server's CPU milliseconds when ``tools/list`` and when the search was
    answered; and the search's pipeline."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> tuple[float, ...]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "vaulteval", "mcp", "--vault", str(root), *flags],
                                       env=dict(ENV, PYTHONPATH=str(src)), cwd=str(src))  # -m looks in cwd first
        t0 = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            t1 = time.perf_counter()
            await client.list_tools()
            t2, cpu2 = time.perf_counter(), _child_cpu()
            result = await client.call_tool("search", {"query": query, "limit": 5})
            t3, cpu3 = time.perf_counter(), _child_cpu()
            assert not result.isError, result.content
        return ((t1 - t0) * 1000, (t2 - t0) * 1000, (t3 - t2) * 1000, cpu2 * 1000, cpu3 * 1000,
                result.structuredContent["pipeline"]["text"])

    return anyio.run(main)


def launches(roots: list[Path], runs: int, tag: str, baseline: Path | None) -> list[tuple[str, str, str]]:
    """Rows of the ``launch`` part: medians per vault, code and pipeline (the vault's default, and BM25 alone,
    which needs no embedder), launches interleaved."""
    codes = {"this code": REPO, **({"baseline": baseline} if baseline else {})}
    pipelines: dict[str, tuple[str, ...]] = {"default": (), "bm25": ("--strategy", "bm25")}
    seen: dict[tuple[str, str, str], list[tuple[float, float, float, str]]] = {}
    queries = {root: queries_for(root, runs * len(codes) * len(pipelines)) for root in roots}
    for i in range(runs):
        for root in roots:
            for j, ((name, src), (pipe, flags)) in enumerate(itertools.product(codes.items(), pipelines.items())):
                picked = queries[root][(i * len(codes) * len(pipelines) + j) % len(queries[root])]
                query = f"{picked} {tag}{i}{j}"  # a new query vector every time
                seen.setdefault((root.name, name, pipe), []).append(launch_times(root, query, src, *flags))
    rows = []
    for (vault, name, _pipe), times in seen.items():
        init, listed, search, cpu_listed, cpu_search = (statistics.median(t[k] for t in times) for k in range(5))
        rows.append((f"launch -> initialize / tools/list answered; first search after tools/list; {vault}, "
                     f"{name} ({times[0][5]}, {len(times)} launches)",
                     f"p50 {init:.0f} / {listed:.0f} ms; {search:.0f} ms (max {max(t[2] for t in times):.0f}); "
                     f"server CPU {cpu_listed:.0f} ms at tools/list, +{cpu_search - cpu_listed:.0f} ms for the search",
                     "tools/list <= 1000 ms; search <= 100 ms"))
    return rows


# What a cold query's embedding costs, step by step, in one fresh process: CPU ms and resident MB after each.
EMBED_STEPS = """
import resource, sys, time
from pathlib import Path
def mark(step):
    rss = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')) // 1024
    print(f'{step} {time.process_time() * 1000:.0f} {rss}')
mark('interpreter')
import numpy; mark('numpy')
import onnxruntime; mark('onnxruntime')
import tokenizers; mark('tokenizers')
from vaulteval.embeddings.onnxembed import MODEL_FILE, TOKENIZER_FILE, read_export, session_options
folder = Path(sys.argv[1]); info = read_export(folder)
session = onnxruntime.InferenceSession(str(folder / MODEL_FILE), session_options(onnxruntime, info),
                                       providers=['CPUExecutionProvider']); mark('session')
tokenizer = tokenizers.Tokenizer.from_file(str(folder / TOKENIZER_FILE)); mark('tokenizer')
ids = tokenizer.encode('how do I sync my vault between devices')
feed = {'input_ids': numpy.array([ids.ids]), 'attention_mask': numpy.array([ids.attention_mask]),
        'token_type_ids': numpy.array([ids.type_ids])}
names = {i.name for i in session.get_inputs()}
session.run(None, {k: v for k, v in feed.items() if k in names}); mark('one query run')
print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, 0)
"""


def embed_steps(root: Path) -> tuple[str, str, str]:
    """The row of ``EMBED_STEPS`` on ``root``'s ONNX export: each step's CPU ms and the MB it adds."""
    proc = subprocess.run([sys.executable, "-c", EMBED_STEPS, str(root / ".vault-meta" / "vaulteval" / "onnx")],
                          env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = [line.rsplit(maxsplit=2) for line in proc.stdout.splitlines()]
    steps, parts = lines[:-1], []
    for (_, cpu0, rss0), (name, cpu, rss) in zip(steps, steps[1:]):
        parts.append(f"{name} {int(cpu) - int(cpu0)} ms +{int(rss) - int(rss0)} MB")
    return (f"a cold query's embedding, step by step, {root.name}", "; ".join(parts) +
            f" (interpreter {steps[0][2]} MB; peak {lines[-1][1]} MB)", "")


def cold_retrieves(roots: list[Path], runs: int, tag: str, baseline: Path | None) -> list[tuple[str, str, str]]:
    """Rows of the ``cold`` part: fresh ``retrieve`` processes with the vault's default pipeline, of this code
    and (with ``baseline``) of the baseline's, interleaved, each with a query vector of its own."""
    codes = {"this code": REPO, **({"baseline": baseline} if baseline else {})}
    rows = []
    for root in roots:
        queries = queries_for(root, runs)
        argv = [sys.executable, "-m", "vaulteval", "retrieve", "--vault", str(root)]
        seen: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        # New query vectors, then the same queries again: their vectors are in the vault's cache, no session opens.
        for name in ("new query vectors", "cached query vectors"):
            for i, q in enumerate(queries[:runs]):
                for code, src in codes.items():
                    seen.setdefault((name, code), []).append(timed_process([*argv, f"{q} {tag}c{i}{code[0]}"], src))
        for (name, code), times in seen.items():
            rows.append((f"CLI retrieve, default pipeline, {name}, {root.name}, {code} ({len(times)} runs)",
                         f"p50 {statistics.median(t for t, _, _ in times) * 1000:.0f} ms "
                         f"(CPU {statistics.median(c for _, _, c in times) * 1000:.0f} ms), "
                         f"peak RSS {max(m for _, m, _ in times):.0f} MB", "p50 <= 150 ms, RSS <= 100 MB"))
        if (root / ".vault-meta" / "vaulteval" / "onnx").is_dir():
            rows.append(embed_steps(root))
    return rows


def build_engines(work: Path, tldr_root: Path) -> None:
    """A tantivy index and an SQLite FTS5 table of the tldr notes, outside the vault."""
    if (work / "fts5.sqlite").is_file() and (work / "tantivy").is_dir():
        return
    say("building the tantivy and FTS5 indexes of the same pages")
    import sqlite3

    import tantivy

    notes = [(str(p.relative_to(tldr_root)), p.read_text(encoding="utf-8", errors="replace"))
             for p in sorted((tldr_root / "wiki").rglob("*.md"))]
    schema = tantivy.SchemaBuilder().add_text_field("path", stored=True).add_text_field("body").build()
    (work / "tantivy").mkdir(exist_ok=True)
    index = tantivy.Index(schema, path=str(work / "tantivy"))
    writer = index.writer()
    for path, body in notes:
        writer.add_document(tantivy.Document(path=path, body=body))
    writer.commit()
    db = sqlite3.connect(work / "fts5.sqlite")
    db.execute("CREATE VIRTUAL TABLE notes USING fts5(path UNINDEXED, body)")
    db.executemany("INSERT INTO notes VALUES (?, ?)", notes)
    db.commit()
    db.close()


TANTIVY_QUERY = ("import sys, tantivy\ni = tantivy.Index.open(sys.argv[1]); s = i.searcher()\n"
                 "q = i.parse_query(sys.argv[2], ['body'])\n"
                 "print([s.doc(a)['path'] for _, a in s.search(q, 5).hits])")
FTS5_QUERY = ("import sys, sqlite3\nc = sqlite3.connect(sys.argv[1])\n"
              "terms = ' OR '.join('\"' + t.replace('\"', '') + '\"' for t in sys.argv[2].split())\n"
              "print(c.execute('SELECT path FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT 5',"
              " (terms,)).fetchall())")


def concurrency(root: Path, short: list[str], long: list[str]) -> tuple[float, float]:
    """Median ms of short searches alone, and while another client runs long ones (4 HTTP clients)."""
    import re

    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    import httpx

    token_file = root.parent / "mcp-bench.token"
    proc = subprocess.Popen([sys.executable, "-m", "vaulteval", "mcp", "--vault", str(root), "--no-rerank", "--http",
                             "--port", "0", "--token-file", str(token_file)], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r":(\d+)/mcp", proc.stderr.readline()).group(1))
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Authorization": f"Bearer {token_file.read_text(encoding='ascii').strip()}"}
        time.sleep(1.0)

        async def client(queries: list[str], args: dict, out: list[float] | None, stop: list[bool]) -> None:
            async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http, \
                    streamable_http_client(url, http_client=http) as (read, write, _), \
                    ClientSession(read, write) as session:
                await session.initialize()
                for q in queries:
                    if stop and stop[0]:
                        break
                    t0 = time.perf_counter()
                    await session.call_tool("search", {"query": q, **args})
                    if out is not None:
                        out.append((time.perf_counter() - t0) * 1000)

        async def run(with_long: bool) -> list[float]:
            times: list[float] = []
            stop = [False]
            async with anyio.create_task_group() as group:
                if with_long:
                    group.start_soon(client, long * 50, {"limit": 1000, "bm25_top": 1000}, None, stop)
                async with anyio.create_task_group() as shorts:
                    for i in range(3):
                        shorts.start_soon(client, short[i::3], {"limit": 5}, times, [])
                stop[0] = True
            return times

        alone = anyio.run(run, False)
        busy = anyio.run(run, True)
        return statistics.median(alone), statistics.median(busy)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--tldr", type=Path, help="tldr-pages.tar.gz (docs/benchmarks.md#data)")
    ap.add_argument("--help-vault", type=Path, help="obsidian-help.tar.gz")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--cli-runs", type=int, default=10)
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, from {','.join(PARTS)}")
    ap.add_argument("--launch-vaults", default="", help="comma-separated provisioned vaults for launch and cold")
    ap.add_argument("--launch-runs", type=int, default=7)
    ap.add_argument("--baseline-src", type=Path, help="another vaulteval source tree, launched beside this one")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if parts & BUILT and not (args.tldr and args.help_vault):
        ap.error(f"the parts {','.join(sorted(parts & BUILT))} need --tldr and --help-vault")
    launch_roots = [Path(p) for p in args.launch_vaults.split(",") if p]
    if parts & {"launch", "cold"} and not launch_roots:
        ap.error("the launch and cold parts need --launch-vaults")
    args.work.mkdir(parents=True, exist_ok=True)
    tldr_root, help_root = build_vaults(args.work, args.tldr, args.help_vault, parts & BUILT)
    from reused_vault import older_store

    for root in (tldr_root, help_root, *launch_roots):
        warning = older_store(root) if (root / ".vault-meta").is_dir() else None
        if warning:
            say(f"WARNING {warning}")
    tldr_queries = queries_for(tldr_root, args.calls) if (parts & BUILT) - {"hybrid", "cli"} else []
    tag = f"zq{os.getpid():x}{int(time.time()) % 100000:x}"  # a word no note has, new in every run
    help_queries = ([f"{q} {tag}" for q in queries_for(help_root, max(50, args.cli_runs))]
                    if parts & {"hybrid", "cli"} else [])
    rows = []
    load = os.getloadavg()[0]

    bm25: list[float] = []
    if "stdio" in parts:
        say("warm stdio BM25 on tldr")
        first, again = warm_stdio(tldr_root, tldr_queries, "--strategy", "bm25", passes=2)
        bm25 = again
        for name, ts in (("new queries", first), ("the same queries again", again)):
            rows.append((f"warm MCP search over stdio, BM25, tldr, {name}",
                         f"p50 {pct(ts, .5):.1f} ms / p95 {pct(ts, .95):.1f} ms ({len(ts)} calls)",
                         "p50 <= 5 ms, p95 <= 15 ms"))
    if "inprocess" in parts:
        say("in-process loop")
        rows.append(("1,000 in-process queries, tldr", f"{in_process_loop(tldr_root):.2f} s", "<= 0.5 s"))
    if "hybrid" in parts:
        say("warm hybrid on the help vault")
        (hybrid,) = warm_stdio(help_root, help_queries[:50], "--strategy", "hybrid:cc")
        rows.append(("warm MCP search, hybrid:cc, help vault (MiniLM, ONNX query)",
                     f"p50 {pct(hybrid, .5):.1f} ms / p95 {pct(hybrid, .95):.1f} ms", "p50 <= 50 ms"))
    if "cli" in parts:
        say("CLI hybrid on the help vault, beside a bare Python start")
        bare = [timed_process([sys.executable, "-c", "pass"])[0] for _ in range(args.cli_runs)]
        cli = [timed_process([sys.executable, "-m", "vaulteval", "retrieve", "--vault", str(help_root), q + " cli",
                              "--strategy", "hybrid:cc", "--no-rerank"]) for q in help_queries[:args.cli_runs]]
        wall, cpu = statistics.median(t for t, _, _ in cli), statistics.median(c for _, _, c in cli)
        rows.append(("CLI retrieve --strategy hybrid:cc, help vault",
                     f"p50 {wall:.2f} s (CPU {cpu:.2f} s), peak RSS {max(m for _, m, _ in cli):.0f} MB",
                     "p50 <= 1.0 s, RSS <= 400 MB"))
        rows.append(("bare `python -c pass`, same load", f"p50 {statistics.median(bare):.2f} s", ""))
    if "engines" in parts:
        build_engines(args.work, tldr_root)
        picks = tldr_queries[:args.cli_runs]
        engines = {"vaulteval CLI retrieve --no-rerank (cold)":
                   lambda q: [sys.executable, "-m", "vaulteval", "retrieve", "--vault", str(tldr_root), q, "--no-rerank"],
                   "tantivy, fresh process": lambda q: [sys.executable, "-c", TANTIVY_QUERY, str(args.work / "tantivy"), q],
                   "SQLite FTS5, fresh process": lambda q: [sys.executable, "-c", FTS5_QUERY,
                                                            str(args.work / "fts5.sqlite"), q]}
        times: dict[str, list[float]] = {name: [] for name in engines}
        for q in picks:  # interleaved: every engine sees the same load
            for name, argv in engines.items():
                times[name].append(timed_process(argv(q))[0])
        for name, ts in times.items():
            rows.append((f"{name}, tldr", f"p50 {statistics.median(ts) * 1000:.0f} ms", ""))
        if bm25:
            rows.append(("vaulteval warm MCP (above), tldr", f"p50 {pct(bm25, .5):.1f} ms", ""))
    if "http" in parts:
        say("HTTP: 3 clients of short searches, alone and beside a client of long ones")
        alone, busy = concurrency(tldr_root, tldr_queries[:60], tldr_queries[60:70])
        rows.append(("HTTP short search, 3 clients alone / beside a 4th running limit=1000 searches",
                     f"p50 {alone:.1f} ms / {busy:.1f} ms", "not blocked"))
    if "launch" in parts:
        say("fresh stdio servers: launch to the first answers")
        rows.extend(launches(launch_roots, args.launch_runs, tag, args.baseline_src))
    if "cold" in parts:
        say("fresh CLI retrieves with the default pipeline")
        rows.extend(cold_retrieves(launch_roots, args.launch_runs, tag, args.baseline_src))
    print(f"load average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}")
    print("| measure | result | target |\n|---|---|---|")
    for name, result, target in rows:
        print(f"| {name} | {result} | {target} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
