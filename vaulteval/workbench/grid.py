"""What ``tune`` searches by default: every analyzer and reranker the vault can run, and ``--grid`` specs.

Usage::

    grid = default_grid(vault, "bm25")      # ["bm25", "bm25:analyzer=english", ..., "rerank:st", ...]
    parse_grid("bm25;hybrid:rrf")           # ["bm25", "hybrid:rrf"]

The policy:

- lexical: BM25 with every analyzer of the analyzer registry
  (``vaulteval.index.analysis.NAMES``, so a new analyzer joins the grid by
  being registered) that fits the vault: ``auto`` always, a language analyzer
  (``german``, ``chinese``, ...) when at least 5% of the notes are in its
  language (``vault_languages``), the english stemmer and stopword options, and on each
  language analyzer two k1/b settings and each BM25-index stage's own
  ``tune_grid`` (field weightings; a new stage joins by being registered);
- semantic, when the vault has stored embeddings (``provision --embed``):
  the ``tune_grid`` of every stage that needs them (dense; hybrid per
  analyzer: rrf, and cc at alpha 0.3, 0.5, 0.7); and the store's reranker
  (``rerank:st`` for a sentence-transformers store, with the store's model)
  over BM25 on every analyzer. A store is what the vault can run without
  asking anyone: nothing on the grid contacts a model the vault was not
  provisioned with. The store's reranker over a hybrid is not on the grid:
  the hybrid's candidates hold the dense top, so re-scoring them with the
  store's own model ranks exactly as ``dense`` (no two entries rank alike by
  construction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaulteval.errors import UsageError, VaultevalError
from vaulteval.vault.paths import home_path

if TYPE_CHECKING:
    from vaulteval.vault.vault import Vault



LANGUAGE_SHARE = 0.05  # a language analyzer joins the grid when at least this share of the notes is in it
SAMPLE_NOTES = 600     # notes read to find the vault's languages (evenly spread, in path order)


def available_analyzers(vault: "Vault | None" = None) -> list[str]:
    """The analyzer registry's names, ``default`` first; with ``vault``, a language analyzer only when
    the vault's notes are in that language (``vault_languages``), and ``auto`` always."""
    from vaulteval.index import analysis

    names = list(dict.fromkeys(["default", *analysis.NAMES]))
    if vault is None:
        return names
    present = vault_languages(vault)
    return [a for a in names if (language := analysis.language_of_head(a)) is None or language.code in present]


def vault_languages(vault: "Vault") -> set[str]:
    """Codes of the languages at least ``LANGUAGE_SHARE`` of the vault's notes are written in: from an
    ``auto`` index's header when the vault has one, else identified on a sample of the notes."""
    from collections import Counter

    from vaulteval.errors import PathEscape
    from vaulteval.index.langs.identify import MAX_CHARS, identify
    from vaulteval.vault.paths import open_confined

    counts: Counter[str] = Counter()
    try:
        from vaulteval.pipeline.retrieve import Retriever

        index = Retriever(vault).index()
        if isinstance(index.header.get("languages"), dict):  # an index that records each chunk's language
            counts.update({str(k): int(v) for k, v in index.header["languages"].items()})
    except (VaultevalError, OSError, ValueError, TypeError):  # no usable index: read the notes
        pass
    if not counts:
        pages = list(vault.iter_pages())
        step = max(1, len(pages) // SAMPLE_NOTES)
        for page in pages[::step]:
            try:
                with open_confined(vault.notes_dir, page.rel, strip=vault.notes_strip) as fh:
                    counts[identify(fh.read(MAX_CHARS * 4).decode("utf-8", "replace")[:MAX_CHARS])] += 1
            except (OSError, PathEscape):
                continue
    total = sum(counts.values()) or 1
    return {code for code, n in counts.items() if n / total >= LANGUAGE_SHARE}


def store_reranker(vault: "Vault") -> str | None:
    """``st`` or ``ollama`` plus the store's model (``st,model=...``), or None without a readable store."""
    from vaulteval.embeddings.models import is_shipped_name
    from vaulteval.embeddings.store import StoreError, open_store, store_path
    from vaulteval.pipeline.stages.embedder import BACKENDS

    if not store_path(vault.meta_dir).exists():
        return None
    try:
        store = open_store(vault.meta_dir)
    except (StoreError, OSError):  # a broken store is doctor's business; tune searches without it
        return None
    if store.backend not in BACKENDS or "," in store.model:
        return None
    if store.backend == "sentence-transformers":
        return "st" if is_shipped_name(store.model) else f"st,model={store.model}"
    return f"ollama,model={store.model}"


def default_grid(vault: "Vault", baseline: str) -> list[str]:
    """Usage: ``default_grid(vault, "bm25")``: the policy in the module docstring, ``baseline`` first.

    The stages and their settings come from the stage registry: each first stage's ``tune_grid``
    whose ``needs`` the vault meets (a stage that ranks with the BM25 index, on every analyzer),
    and each reranker the store runs, over BM25.
    """
    from vaulteval.pipeline.stages import registry
    from vaulteval.workbench.strategy import Strategy

    analyzers = available_analyzers(vault)
    languages = [a for a in analyzers if a != "default"]
    grid = [baseline, *(f"bm25:analyzer={a}" for a in languages)]
    if "english" in languages:
        from vaulteval.index.analyzers import STEMMERS, STOPLISTS

        grid += [f"bm25:analyzer=english,stemmer={s}" for s in STEMMERS[1:2]]
        grid += [f"bm25:analyzer=english,stopwords={w}" for w in STOPLISTS[1:2]]
    for a in languages:
        grid += [f"bm25:analyzer={a},k1=1.2,b=0.75", f"bm25:analyzer={a},k1=0.9,b=0.4"]
    reranker = store_reranker(vault)
    available = frozenset({"bm25", "dense", "embedder"} if reranker is not None else {"bm25"})
    stages = [cls for cls in registry.first_stages() if cls.needs <= available]
    for cls in stages:  # lexical stages on every language, semantic ones on every analyzer
        on = (analyzers if cls.semantic else languages) if "bm25" in cls.needs else ["default"]
        for a in on:
            keys = [] if a == "default" else [f"analyzer={a}"]
            grid += [_text(cls.head(), [p for p in (point,) if p] + keys) for point in cls.tune_grid]
    for rr in registry.rerankers():
        if reranker is None or not rr.needs <= available:
            continue
        for a in analyzers:
            keys = [] if a == "default" else [f"analyzer={a}"]
            grid.append(_text(f"{rr.name}:{reranker}", keys))
    return list(dict.fromkeys(Strategy.parse(s).text() for s in grid))


def _text(head: str, items: list[str]) -> str:
    if not items:
        return head
    return f"{head},{','.join(items)}" if ":" in head else f"{head}:{','.join(items)}"


MAX_GRID_BYTES = 1 << 20  # a grid file names strategies, one a line


def parse_grid(spec: str) -> list[str]:
    """``--grid``: strategies separated by ``;``, or ``@FILE`` with one per line (``#`` comments)."""
    if spec.startswith("@"):
        from vaulteval.vault.metadir import read_capped

        try:
            text = read_capped(home_path(spec[1:]), MAX_GRID_BYTES).decode("utf-8")
        except OSError as exc:
            raise UsageError(f"--grid {spec}: cannot read it ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise UsageError(f"--grid {spec}: not UTF-8 text; one strategy a line") from None
        items = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    else:
        items = [part.strip() for part in spec.split(";")]
    items = [i for i in items if i]
    if not items:
        raise UsageError("--grid names no strategy")
    return items
