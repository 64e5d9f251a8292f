"""vaulteval: read-only retrieval over an Obsidian vault, and a workbench that measures it.

The public API, one line each (names load on first use, so ``import vaulteval``
stays cheap and the retrieve path never pulls in pandas)::

    vault = Vault("path/to/vault")                      # select a vault (or Vault.select())
    provision(vault)                                    # chunks + BM25 index in .vault-meta/vaulteval/
    retrieve(vault, "descale the espresso machine")     # one query -> RetrievalResult (.to_json())
    Retriever(vault).retrieve("query", top=5)           # reuse one opened index for many queries
    doctor(vault).state                                 # 'verified' | 'configured' | 'available' | 'degraded'
    qs = load_queryset("querysets/my-vault.yaml", vault)  # a QuerySet with graded judgments; qs.vault is its vault
    runs = run(qs, ["bm25", "bm25:analyzer=english"])   # Runs: one Run per strategy (runs["bm25"], runs.save(dir))
    Run.from_trec("old/bm25.trec")                      # a Run from a TREC file (run.save("x.trec") writes one)
    report = compare(qs, runs, ["nDCG@10", "RR"], baseline="bm25")  # Report: CIs, deltas, p, MDE; .save(dir)
    ev = evaluate(qs, ["bm25", "rerank:st"])            # EvalRun: run + compare + misses, slices; ev.save("runs/")
    Strategy.parse("bm25:analyzer=english,k1=1.2")       # a strategy from its string form
    read_note(vault, "[[Descaling#How often]]")         # one note: text, headings, links, backlinks
    search_notes(vault, "descale")                      # text search of every note, no index needed
    read_ledgers(vault)                                 # claim and source ledgers, checked

Stage folders, lowest first: vault, chunks, index, embeddings, pipeline, notes,
querysets, workbench, notebooks, server, cli (see docs/architecture.md).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.version import __version__  # noqa: E402

# name -> module that defines it; resolved lazily by __getattr__.
_API = {
    "Vault": "vaulteval.vault.vault",
    "provision": "vaulteval.pipeline.provision",
    "retrieve": "vaulteval.pipeline.retrieve",
    "Retriever": "vaulteval.pipeline.retrieve",
    "RetrievalResult": "vaulteval.pipeline.retrieve",
    "doctor": "vaulteval.pipeline.doctor",
    "read_note": "vaulteval.notes.read",
    "search_notes": "vaulteval.notes.search",
    "read_ledgers": "vaulteval.notes.ledgers",
    "QuerySet": "vaulteval.querysets.queryset",
    "load_queryset": "vaulteval.querysets.queryset",
    "Strategy": "vaulteval.workbench.strategy",
    "evaluate": "vaulteval.workbench.evaluate",
    "EvalRun": "vaulteval.workbench.evaluate",
    "Run": "vaulteval.workbench.runs",
    "Runs": "vaulteval.workbench.api",
    "run": "vaulteval.workbench.api",
    "compare": "vaulteval.workbench.api",
    "Report": "vaulteval.workbench.report",
    "VaultevalError": "vaulteval.errors",
    "UsageError": "vaulteval.errors",
    "NotProvisioned": "vaulteval.errors",
    "VaultBusy": "vaulteval.errors",
    "VaultSelectionError": "vaulteval.errors",
    "DuplicateAddress": "vaulteval.errors",
}

__all__ = [*_API, "__version__"]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'vaulteval' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
