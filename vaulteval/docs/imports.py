"""The package's import graph and its declared layering: what architecture.md's folder table shows and
tests/test_architecture.py checks (no cycle, no upward import).

Usage::

    graph = import_graph()            # {"vaulteval.index.reader": {"vaulteval.vault.paths", ...}, ...}
    LAYERS.index("index") < LAYERS.index("pipeline")

The graph is read with ``ast`` from every module under ``vaulteval/``. Every
import statement counts: module level, inside functions, and under
``TYPE_CHECKING``. A string constant that names a vaulteval module (as
``importlib.import_module`` takes) counts as an import of it too, so lazy
loading cannot hide an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]

# Lowest first. A module may import from its own folder and from lower ones.
# Top-level modules: ``errors``, ``version`` and ``hosts`` are the floor; the package ``__init__`` is the
# public façade above everything (it loads names lazily).
LAYERS = ["errors", "version", "hosts", "vault", "chunks", "index", "embeddings", "pipeline", "notes", "querysets",
          "workbench", "notebooks", "server", "cli", "docs",
          "__main__", "__init__"]


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(current: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the vaulteval modules it imports (``from pkg import mod`` resolves to the submodule)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if "." in node.value and node.value in files:
                    targets = [node.value]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target.startswith("vaulteval") and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph
