"""What ``tune`` searches by default: every analyzer and reranker the vault can run, and ``--grid`` specs.

Usage::

    grid = default_grid(vault, "bm25")      # ["bm25", "bm25:analyzer=english", ..., "rerank:st", ...]
    parse_grid("bm25;hybrid:rrf")           # ["bm25", "hybrid:rrf"]

The policy:

- lexical: BM25 with every analyzer of the analyzer registry
  (``vaulteval.index.tokenize.ANALYZERS``, so a new language joins the grid by
  being registered), the english stemmer and stopword options, and on each
  language analyzer two k1/b settings and two field weightings;
- semantic, when the vault has stored embeddings (``provision --embed``):
  dense; per analyzer hybrid rrf and cc (alpha 0.3, 0.5, 0.7); and the
  store's reranker (``rerank:st`` for a sentence-transformers store, with the
  store's model) over BM25 and over both hybrids. A store is what the vault
  can run without asking anyone: nothing on the grid contacts a model the
  vault was not provisioned with.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault

HYBRID_ALPHAS = (0.3, 0.5, 0.7)
DEFAULT_ALPHA = 0.5  # written without alpha=, as the strategy grammar names it


def available_analyzers() -> list[str]:
    """The analyzer registry's names, ``default`` first."""
    from vaulteval.index.tokenize import ANALYZERS

    return list(dict.fromkeys(["default", *ANALYZERS]))


def store_reranker(vault: "Vault") -> str | None:
    """``st`` or ``ollama`` plus the store's model (``st,model=...``), or None without a readable store."""
    from vaulteval.rerank.config import BACKENDS
    from vaulteval.rerank.models import default_st_model
    from vaulteval.rerank.store import StoreError, open_store, store_path

    if not store_path(vault.meta_dir).exists():
        return None
    try:
        store = open_store(vault.meta_dir)
    except (StoreError, OSError):  # a broken store is doctor's business; tune searches without it
        return None
    if store.backend not in BACKENDS or "," in store.model:
        return None
    if store.backend == "sentence-transformers":
        return "st" if store.model == default_st_model() else f"st,model={store.model}"
    return f"ollama,model={store.model}"


def default_grid(vault: "Vault", baseline: str) -> list[str]:
    """Usage: ``default_grid(vault, "bm25")``: the policy in the module docstring, ``baseline`` first."""
    analyzers = available_analyzers()
    languages = [a for a in analyzers if a != "default"]
    grid = [baseline, *(f"bm25:analyzer={a}" for a in languages)]
    if "english" in languages:
        from vaulteval.index.analyzers import STEMMERS, STOPLISTS

        grid += [f"bm25:analyzer=english,stemmer={s}" for s in STEMMERS[1:2]]
        grid += [f"bm25:analyzer=english,stopwords={w}" for w in STOPLISTS[1:2]]
    for a in languages:
        grid += [f"bm25:analyzer={a},k1=1.2,b=0.75", f"bm25:analyzer={a},k1=0.9,b=0.4",
                 f"bm25:analyzer={a},w_title=1,w_aliases=1", f"bm25:analyzer={a},w_title=2,w_aliases=2,w_headings=1"]
    reranker = store_reranker(vault)
    if reranker is not None:
        backend = reranker.split(",", 1)[0]
        grid.append("dense")
        for a in analyzers:
            keys = "" if a == "default" else f",analyzer={a}"
            grid += [f"hybrid:rrf{keys}", *(f"hybrid:cc{keys}" + (f",alpha={x:g}" if x != DEFAULT_ALPHA else "")
                                             for x in HYBRID_ALPHAS)]
            rest = reranker[len(backend):]
            grid += [f"rerank:{reranker}{keys}", f"hybrid:rrf{keys},rerank={backend}{rest}",
                     f"hybrid:cc{keys},rerank={backend}{rest}"]
    return list(dict.fromkeys(grid))


def parse_grid(spec: str) -> list[str]:
    """``--grid``: strategies separated by ``;``, or ``@FILE`` with one per line (``#`` comments)."""
    if spec.startswith("@"):
        try:
            text = Path(spec[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--grid {spec}: cannot read it ({exc})") from None
        items = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    else:
        items = [part.strip() for part in spec.split(";")]
    items = [i for i in items if i]
    if not items:
        raise UsageError("--grid names no strategy")
    return items
