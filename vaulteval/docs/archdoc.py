"""The parts of docs/architecture.md that are facts of the code: folders, modules, registered stages.

Usage::

    print(folder_table())     # each folder's role (its docstring's first paragraph) and what it imports
    print(module_index())     # every module with the first paragraph of its docstring, folder by folder
    print(stage_table())      # the registered first stages and rerankers with their needs and capabilities
    print(analyzer_table())   # the analyzer names and the language catalog
    python -m vaulteval.docs  # rewrites them (and every other generated part) in place

A folder's role lives in its ``__init__`` docstring and a module's in its own,
so the prose is changed with the code and this file only arranges it.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from vaulteval.docs.imports import LAYERS, PACKAGE, import_graph, module_name
from vaulteval.index.langs.catalog import LANGUAGES
from vaulteval.index.analysis import NAMES
from vaulteval.pipeline.stages import registry


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _first_paragraph(path: Path) -> str:
    stat = path.stat()
    return _parsed_first_paragraph(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=1024)
def _parsed_first_paragraph(path: Path, mtime_ns: int, size: int) -> str:
    """Keyed by the file's stat too, so an edited docstring is read again."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return _cell(doc.strip().split("\n\n")[0])


def _graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    return _parsed_graph(tuple((str(p), p.stat().st_mtime_ns) for p in files))


@lru_cache(maxsize=4)
def _parsed_graph(signature: tuple[tuple[str, int], ...]) -> dict[str, set[str]]:
    """The import graph, read again whenever a module is added, removed or edited."""
    return import_graph()


def _layer_path(layer: str) -> Path:
    folder = PACKAGE / layer
    return folder / "__init__.py" if folder.is_dir() else PACKAGE / f"{layer}.py"


def _shown(layer: str) -> str:
    return f"`{layer}/`" if (PACKAGE / layer).is_dir() else f"`{layer}.py`"


def _layer(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def folder_table() -> str:
    """One row per layer, lowest first: its role and the folders its modules import."""
    graph = _graph()
    uses: dict[str, set[str]] = {layer: set() for layer in LAYERS}
    for module, targets in graph.items():
        uses[_layer(module)].update(_layer(t) for t in targets if _layer(t) != _layer(module))
    rows = ["| folder | owns | imports |", "|---|---|---|"]
    for layer in LAYERS:
        imported = ", ".join(_shown(u) for u in sorted(uses[layer], key=LAYERS.index)) or "nothing in vaulteval"
        rows.append(f"| {_shown(layer)} | {_first_paragraph(_layer_path(layer))} | {imported} |")
    return "\n".join(rows)


def module_index() -> str:
    """Every module, folder by folder in layer order, with the first paragraph of its docstring."""
    out = []
    for layer in LAYERS:
        folder = PACKAGE / layer
        if not folder.is_dir():
            continue
        out += ["<details>", f"<summary><code>{layer}/</code></summary>", "",
                "| module | what it is |", "|---|---|"]
        for path in sorted(folder.rglob("*.py"), key=lambda p: p.relative_to(folder).with_suffix("").parts):
            name = module_name(path).removeprefix(f"vaulteval.{layer}").lstrip(".").replace(".", "/") or "__init__"
            out.append(f"| `{name}` | {_first_paragraph(path)} |")
        out += ["", "</details>", ""]
    return "\n".join(out)


def _capabilities(cls: type) -> str:
    said = []
    if cls.role == "first":
        said.append(f"ranked by `{cls.ranked_by}`")
    else:
        said.append("reranks " + ", ".join(f"`{s}`" for s in sorted(cls.runs_over)))
    if cls.semantic:
        said.append("semantic")
    if cls.embeds_query:
        said.append("embeds the query")
    return ", ".join(said)


def stage_table() -> str:
    """The registered stages, in the registry's order, with what each needs and can do."""
    rows = ["| stage | role | module | what it does | needs | capabilities | keys |", "|---|---|---|---|---|---|---|"]
    for cls in registry.stages():
        role = "reranker" if cls.role == "rerank" else "first stage"
        module = cls.__module__.removeprefix("vaulteval.").replace(".", "/") + ".py"
        needs = ", ".join(f"`{n}`" for n in sorted(cls.needs)) or "nothing"
        keys = ", ".join(f"`{p.name}`" for p in cls.schema().values()) or "none"
        rows.append(f"| `{registry.written(cls)}` | {role} | `{module}` | {_cell(cls.summary)} | {needs} | "
                    f"{_capabilities(cls)} | {keys} |")
    return "\n".join(rows)


def analyzer_table() -> str:
    """The analyzer names an index or strategy may use, and the language catalog behind the language ones."""
    names = ", ".join(f"`{name}`" for name in NAMES)
    rows = [f"Analyzer names ({len(NAMES)}, `index/analysis.NAMES`): {names}.", "",
            "| language analyzer | code | script | analysis | folds accents | splits compounds |",
            "|---|---|---|---|---|---|"]
    for lang in sorted(LANGUAGES.values(), key=lambda lang: (lang.analyzer == "plain", lang.analyzer, lang.code)):
        if lang.analyzer == "plain":
            continue
        rows.append(f"| `{lang.analyzer}` | `{lang.code}` | {lang.script} | {lang.kind} | "
                    f"{'yes' if lang.fold else 'no'} | {'yes' if lang.compounds else 'no'} |")
    plain = sorted(code for code, lang in LANGUAGES.items() if lang.analyzer == "plain")
    rows += ["", f"Identified and recorded by `auto` but analyzed plainly (words split, lower-cased): "
                 f"{', '.join(f'`{c}`' for c in plain)}."]
    return "\n".join(rows)
