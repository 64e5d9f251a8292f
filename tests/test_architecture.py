"""The package's shape: no import cycles, stages import only downward, and a lean retrieve path.

Usage: ``.venv/bin/python -m pytest tests/test_architecture.py -q``

The graph and the layers (``vaulteval.docs.imports``) are read with ``ast``
from every module under ``vaulteval/``: every import statement, and every
string constant that names a vaulteval module, so lazy loading cannot hide an edge.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vaulteval.docs.imports import LAYERS, import_graph, module_name  # the graph and layering (docs/architecture.md)

PACKAGE = Path(__file__).resolve().parents[1] / "vaulteval"

# What the retrieve path must never import (checked by running it under -X importtime).
HEAVY = ("pandas", "scipy", "ir_measures", "papermill", "matplotlib", "vaulteval.workbench", "vaulteval.notebooks",
         "vaulteval.querysets", "yaml", "tqdm", "dataclasses", "logging", "shutil", "bz2", "lzma")


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layer_of(module: str) -> int:
    parts = module.split(".")
    key = "__init__" if len(parts) == 1 else parts[1]
    if key not in LAYERS:
        raise AssertionError(f"{module} is in no known layer; add its folder to LAYERS in the right place")
    return LAYERS.index(key)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{src} -> {dst}" for src, dsts in graph.items() for dst in dsts if layer_of(dst) > layer_of(src))


def summary(graph: dict[str, set[str]]) -> str:
    edges = sum(len(v) for v in graph.values())
    return f"{len(graph)} modules, {edges} edges, {len(find_cycles(graph))} cycles, {len(upward_imports(graph))} upward"


def test_the_graph_has_no_cycles() -> None:
    graph = import_graph()
    assert find_cycles(graph) == [], summary(graph)


def test_no_stage_imports_a_higher_stage() -> None:
    assert upward_imports(import_graph()) == []


def test_the_checks_catch_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "vaulteval"
    (pkg / "vault").mkdir(parents=True)
    (pkg / "index").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "vault" / "__init__.py").write_text("")
    (pkg / "index" / "__init__.py").write_text("")
    (pkg / "vault" / "vault.py").write_text("def f():\n    from vaulteval.index import reader\n")
    (pkg / "index" / "reader.py").write_text("from ..vault.vault import f\n")
    graph = import_graph(pkg)
    assert find_cycles(graph) == [["vaulteval.index.reader", "vaulteval.vault.vault"]]
    assert upward_imports(graph) == ["vaulteval.vault.vault -> vaulteval.index.reader"]


def test_modules_stay_under_400_lines() -> None:
    long = {module_name(p): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


# No caller matches a stage's kind by name: it reads what the stage declares (``semantic``, ``embeds_query``,
# ``ranked_by``, ``needs``, ``runs_over``), so a new stage is one module and one registry line. The registry and
# the grammar that reads stage names (``pipeline/stages/``, ``pipeline/spec.py``) are the only places names live.
STAGE_KINDS = "bm25|dense|hybrid|rerank|prf"
NAME_MATCHING = [
    # stage.name == "hybrid", first.label != "bm25", s.kind in ("dense", "hybrid"), get("stage") in (...)
    rf"""(\.name|\.label|\.kind|\.head\(\)|get\(["']stage["']\))\s*(==|!=|(not\s+)?in)\s*[\(\[\{{]?\s*["']({STAGE_KINDS})\b""",
    # text.startswith("rerank"), s.strip().startswith(("dense", ...))
    rf"""startswith\(\s*\(?\s*["']({STAGE_KINDS})\b""",
    # "dense" in first.needs, "hybrid" in strategy.first.label
    r"""["'](dense|hybrid|rerank|prf)["']\s+(not\s+)?in\s+[\w.]*\.(needs|label|name|kind)\b""",
]
REGISTRY_FILES = ("pipeline/stages/", "pipeline/spec.py")


def name_matches(root: Path = PACKAGE) -> list[str]:
    import re

    patterns = [re.compile(p) for p in NAME_MATCHING]
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(REGISTRY_FILES):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(p.search(line) for p in patterns):
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_stage_kind_is_matched_by_name_outside_the_registry() -> None:
    assert name_matches() == []


def test_the_name_matching_rule_catches_each_form(tmp_path: Path) -> None:
    pkg = tmp_path / "vaulteval"
    (pkg / "workbench").mkdir(parents=True)
    (pkg / "pipeline" / "stages").mkdir(parents=True)
    lines = ['hybrid = strategy.first.name == "hybrid"', 'x = first.get("stage") in ("dense", "hybrid")',
             'y = [s for s in names if s.strip().startswith("rerank")]', 'z = "dense" in run.strategy.first.needs',
             'w = "hybrid" in r.strategy.first.label', 'ok = strategy.semantic and first.ranked_by == "fused"']
    (pkg / "workbench" / "m.py").write_text("\n".join(lines) + "\n")
    (pkg / "pipeline" / "stages" / "dense.py").write_text('if stage.name == "dense": pass\n')
    assert [hit.split(":")[1] for hit in name_matches(pkg)] == ["1", "2", "3", "4", "5"]


# The embeddings package's settings type is private to the stages that embed: the command line, the MCP server,
# provisioning and the workbench hand the stages ``EmbedderSettings`` (``pipeline/stages/embedder.py``), never
# the config itself. Only the embeddings package and the stage modules import ``vaulteval.embeddings.config``
# or name ``RerankConfig`` (the type ``vaulteval.embeddings.rerank`` re-exports).
EMBED_CONFIG = "vaulteval.embeddings.config"
EMBED_CONFIG_TYPE = "RerankConfig"
EMBED_CONFIG_OWNERS = ("vaulteval.embeddings", "vaulteval.pipeline.stages")


def embed_config_uses(root: Path = PACKAGE) -> list[str]:
    import ast

    graph = import_graph(root)
    found = []
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        if any(name == owner or name.startswith(owner + ".") for owner in EMBED_CONFIG_OWNERS):
            continue
        if EMBED_CONFIG in graph.get(name, ()):
            found.append(f"{name}: imports {EMBED_CONFIG}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = (isinstance(node, ast.ImportFrom) and any(a.name == EMBED_CONFIG_TYPE for a in node.names)
                     or isinstance(node, ast.Attribute) and node.attr == EMBED_CONFIG_TYPE)
            if named:
                found.append(f"{name}:{node.lineno}: names {EMBED_CONFIG_TYPE}")
    return found


def test_only_the_stages_that_embed_import_the_embedding_config() -> None:
    assert embed_config_uses() == []


def test_the_embedding_config_rule_catches_each_form(tmp_path: Path) -> None:
    pkg = tmp_path / "vaulteval"
    for folder in ("embeddings", "pipeline/stages", "cli", "server"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "pipeline" / "__init__.py").write_text("")
    (pkg / "embeddings" / "config.py").write_text("class RerankConfig: pass\n")
    (pkg / "embeddings" / "rerank.py").write_text("from vaulteval.embeddings.config import RerankConfig\n")
    (pkg / "pipeline" / "stages" / "dense.py").write_text("from vaulteval.embeddings.config import RerankConfig\n")
    (pkg / "cli" / "a.py").write_text("def f():\n    from vaulteval.embeddings.config import resolve\n")
    (pkg / "cli" / "b.py").write_text("from vaulteval.embeddings.rerank import RerankConfig\n")
    (pkg / "server" / "c.py").write_text("import importlib\nimportlib.import_module('vaulteval.embeddings.config')\n")
    (pkg / "server" / "d.py").write_text("from vaulteval.embeddings import rerank\nx = rerank.RerankConfig()\n")
    assert embed_config_uses(pkg) == [
        "vaulteval.cli.a: imports vaulteval.embeddings.config", "vaulteval.cli.b:1: names RerankConfig",
        "vaulteval.server.c: imports vaulteval.embeddings.config", "vaulteval.server.d:2: names RerankConfig"]


def _imported_modules(code: str, *argv: str) -> set[str]:
    """What ``python -X importtime -c code`` imports; with ``argv``, ``code`` is ``-m`` and argv its arguments."""
    command = ["-m", code, *argv] if argv else ["-c", code]
    proc = subprocess.run([sys.executable, "-X", "importtime", *command], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, "python -X importtime printed nothing"
    return names


@pytest.mark.parametrize("code", [
    "import vaulteval.pipeline.retrieve",
    # the CLI retrieve path as far as argument parsing: the group parser and the handler's imports
    "from vaulteval.cli.main import build_parser; build_parser('retrieve'); import vaulteval.pipeline.retrieve",
    # the whole CLI command up to opening the vault (a missing one: exit 2, printed, not raised)
    "from vaulteval.cli.main import main; main(['retrieve', '--vault', '/nonexistent/vault', 'q', '--no-rerank'])",
], ids=["api", "cli", "cli-main"])
def test_the_retrieve_path_imports_nothing_heavy(code: str) -> None:
    imported = _imported_modules(code)
    heavy = sorted(m for m in imported if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []


def test_a_served_cli_query_imports_nothing_heavy(provisioned_sample: Path) -> None:
    """Opening the index, scoring and checking candidates load no more than parsing does."""
    code = ("from vaulteval.cli.main import main; "
            f"assert main(['retrieve', '--vault', {str(provisioned_sample)!r}, 'espresso descaling', '--no-rerank']) == 0")
    imported = _imported_modules(code)
    heavy = sorted(m for m in imported if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []
    assert "vaulteval.chunks.chunking" not in imported  # the chunker is for provisioning
    # BM25 scores in plain Python: numpy's import (0.13 s) would be most of the call.
    assert "numpy" not in imported
    # Verification hashes with CPython's builtin SHA-256 (vaulteval.vault.digest): OpenSSL's load is not paid.
    assert "_hashlib" not in imported and "hashlib" not in imported


# The cold CLI query's import budget, in modules beyond a bare ``python -c pass`` (counts, not times: a
# timing would be flaky on a shared machine). Lower it when a change imports less; raising it needs a
# reason in docs/benchmarks.md ("How fast is a cold retrieve?").
CLI_MODULE_BUDGET = 114  # all modules, the standard library's included (CPython 3.11); zlib for the blocks; vault.bounded; pipeline.spec; index.bm25_compiled; pipeline.loadonce; typing, _typing
# chunks.blocks: a served record is read from a compressed block; vault.bounded: .vaulteval.json; pipeline.spec: the one
# pipeline value (grammar, default, depth) that retrieve, the MCP server and eval run share; index.bm25_compiled: the
# compiled scorer, where it is built; pipeline.loadonce: a Retriever shared by threads (the MCP server's warm-up and
# first calls) loads each part once; typing: TYPE_CHECKING (an auto index imports it anyway).
CLI_VAULTEVAL_MODULE_BUDGET = 51
# Standard modules the served query does not need: each cost a measurable share of a cold call.
CLI_NOT_IMPORTED = ("dataclasses", "logging", "hashlib", "_hashlib", "numpy", "shutil",
                    "tempfile", "subprocess", "threading", "inspect", "textwrap", "datetime", "uuid", "random",
                    "vaulteval.pipeline.stages.registry", "vaulteval.pipeline.stages.base",
                    "vaulteval.chunks.chunking", "vaulteval.index.bm25", "vaulteval.index.fields")


def test_the_cli_process_stays_within_its_import_budget(provisioned_sample: Path) -> None:
    """``python -m vaulteval retrieve`` as a user runs it: what it imports beyond the bare interpreter."""
    imported = _imported_modules("vaulteval", "retrieve", "--vault", str(provisioned_sample), "espresso descaling",
                                 "--no-rerank")
    extra = imported - _imported_modules("pass")
    assert sorted(m for m in CLI_NOT_IMPORTED if m in imported) == []
    ours = sorted(m for m in extra if m == "vaulteval" or m.startswith("vaulteval."))
    assert len(ours) <= CLI_VAULTEVAL_MODULE_BUDGET, ours
    assert len(extra) <= CLI_MODULE_BUDGET, sorted(extra)
