"""The stage registry: every first stage and reranker, by name, with its parameter schema.

Usage::

    from vaulteval.pipeline.stages import registry
    stage = registry.parse_first_stage("hybrid:cc,alpha=0.3")   # a FirstStage value
    stage.text()                                                 # "hybrid:cc,alpha=0.3"
    [cls.name for cls in registry.first_stages()]                # ["bm25", "dense", "hybrid", ...]
    registry.stage("rerank").params                              # the reranker's keys

The stages are classes (``vaulteval.pipeline.stages.base``), one per module;
``FIRST_STAGE_MODULES`` and ``RERANKER_MODULES`` (in the package, ``vaulteval.pipeline.stages``)
list those modules, and each registers its class when imported.
"""

from __future__ import annotations

from typing import Any

from vaulteval.errors import UsageError
from vaulteval.pipeline.stages import FIRST_STAGE_MODULES, RERANKER_MODULES  # noqa: F401  (listed there)
from vaulteval.pipeline.stages.base import STAGES, FirstStage, Ranking, Reranker, Stage  # noqa: F401  (the stage API)

_LOADED = [False]


def _load() -> dict[str, type]:
    if not _LOADED[0]:
        import importlib

        for module in (*FIRST_STAGE_MODULES.values(), *RERANKER_MODULES.values()):
            importlib.import_module(module)
        _LOADED[0] = True
    return STAGES


def written(cls: type) -> str:
    """How a stage class is written: its name, or under the stage it refines (``bm25:prf=K``, ``rerank:cross``)."""
    if cls.selector:
        return f"{cls.refines}:{cls.selector}"
    return f"{cls.refines}:{cls.params[0].name}=K" if cls.refines else cls.name


def stages(role: str | None = None) -> list[type]:
    """Every registered stage class (of ``role``): first stages, then rerankers, each in its list's order."""
    order = [*FIRST_STAGE_MODULES.values(), *RERANKER_MODULES.values()]
    found = [cls for cls in _load().values() if role is None or cls.role == role]
    return sorted(found, key=lambda cls: order.index(cls.__module__) if cls.__module__ in order else len(order))


def first_stages() -> list[type]:
    return stages("first")


def rerankers() -> list[type]:
    return stages("rerank")


def kinds() -> list[str]:
    """The names a strategy string may start with (refining stages are written under another's name)."""
    return [cls.name for cls in stages() if not cls.refines]


def selected(kind: str, item: str) -> type | None:
    """The stage written ``KIND:ITEM`` selects by its bare leading item (``rerank:cross``), or None."""
    return next((cls for cls in stages() if cls.refines == kind and cls.selector and cls.selector == item), None)


def stage(name: str) -> type:
    found = _load().get(name)
    if found is None:
        raise UsageError(f"no stage named {name!r}; known: {', '.join(kinds())}")
    return found


def split_items(rest: str) -> list[str]:
    """The items of ``KIND:ITEM,ITEM``: stripped, empty ones skipped."""
    return [p.strip() for p in rest.split(",") if p.strip()]


def build(kind: str, items: list[str], context: str) -> tuple[Any, dict[str, str]]:
    """The stage a string's ``kind`` and stage ``items`` describe, and the items it did not take.

    A bare first item is the stage's option, or selects a stage that refines
    ``kind`` by it (its ``selector``: ``rerank:cross``); else a key of a stage
    that refines ``kind`` selects that stage (``bm25:prf=10``). Items left
    over (``{key: text}``) are for the caller (the workbench's strategy keys);
    a bare item elsewhere is an error.
    """
    cls = _load().get(kind)
    if cls is None or cls.refines:
        raise UsageError(f"strategy {context!r} must start with {', '.join(kinds())} (e.g. bm25:analyzer=english)")
    values: dict[str, Any] = {}
    rest: dict[str, str] = {}
    pairs: list[tuple[str, str]] = []
    chosen = None
    for i, item in enumerate(items):
        key, eq, value = item.partition("=")
        if not eq:
            if i == 0 and (chosen := selected(kind, key.strip().lower())) is not None:
                continue
            if i == 0 and cls.option is not None:
                values[cls.option.name] = _option(cls, kind, key.strip())
                continue
            raise UsageError(f"{context!r}: expected KEY=VALUE, got {item!r}")
        pairs.append((key.strip(), value.strip()))
    refined = [s for s in stages()
               if s.refines == kind and not s.selector and any(k == s.params[0].name for k, _ in pairs)]
    if chosen is not None or refined:
        cls = chosen or refined[0]
    schema = cls.schema()
    for key, value in pairs:
        if key in schema:
            values[key] = schema[key].read(value, f"{context!r}: ")
        else:
            rest[key] = value
    return cls(**values), rest


def _option(cls: type, kind: str, text: str) -> Any:
    """``cls``'s option from ``text``; a wrong one also names the stages a bare item selects under ``kind``."""
    try:
        return cls.option.check(text)
    except UsageError as exc:
        others = [s.selector for s in stages() if s.refines == kind and s.selector]
        raise UsageError(f"{exc}" + (f" (or {', '.join(others)})" if others else "")) from None


def parse_first_stage(text: str) -> Any:
    """Usage: ``parse_first_stage("hybrid:cc,alpha=0.3")`` (``retrieve --strategy``, the tuned strategy)."""
    kind, _, rest = text.strip().partition(":")
    found, left = build(kind.strip().lower(), split_items(rest), text)
    if found.role != "first":
        raise UsageError(f"strategy {text!r}: {kind} is a reranker; retrieve takes a first stage "
                         f"({', '.join(c.name for c in first_stages() if not c.refines)})")
    if left:
        keys = ", ".join(p.name for p in type(found).schema().values()) or "none"
        raise UsageError(f"strategy {text!r}: unknown key {next(iter(left))!r} (keys of {found.head()}: {keys})")
    return found
