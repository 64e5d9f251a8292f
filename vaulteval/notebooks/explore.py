"""Tables of the explore notebook: a vault's pages, chunks, index, staleness and vocabulary.

Usage::

    env = explore_env(vault)                 # the vault's own index, or one built in the cache
    folders([p.rel for p in vault.iter_pages()], chunk_table(env))
    top_terms(env.index, 20)
    retrieval_table(env.retriever.retrieve("query", top=5))

Like ``nbviews``: deterministic DataFrames without paths or build times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vaulteval.notebooks.views import DIGITS, one_line, rounded

if TYPE_CHECKING:
    import pandas as pd

    from vaulteval.index.reader import BM25Index
    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.workbench.workspace import StrategyEnv


def explore_env(vault: Any, analyzer: str = "vault", cache_dir: Any = None) -> "StrategyEnv":
    """The index to explore: the vault's own when it is provisioned (``analyzer="vault"``), else one in the cache.

    Any other value is an analyzer name (``auto``, ``english``, ``german``, …) built in the cache."""
    from vaulteval.errors import NotProvisioned
    from vaulteval.pipeline.retrieve import Retriever
    from vaulteval.workbench.strategy import Strategy
    from vaulteval.workbench.workspace import Workspace

    if analyzer == "vault":
        analyzer = "default"
        if not vault.is_bundled:
            try:
                analyzer = Retriever(vault).index().analyzer_name
            except NotProvisioned:
                pass
    return Workspace(vault, cache_dir).env(Strategy.of(analyzer=analyzer))


def index_overview(env: "StrategyEnv") -> "pd.DataFrame":
    """Index statistics (key, value) without its path, size on disk or build time."""
    import pandas as pd

    st = env.index.stats()
    keep = ("analyzer", "k1", "b", "doc_count", "page_count", "vocab_size", "postings", "avg_dl", "chunk_params")
    rows = [("source", "the vault's .vault-meta" if env.source == "vault" else "evaluation cache (vault untouched)")]
    for k in keep:
        value = st.get(k)
        if isinstance(value, dict):  # chunk_params: one readable row per setting, never a dict's repr
            rows += [(f"{k.removesuffix('_params')} {name.replace('_', ' ')}", str(v)) for name, v in value.items()]
        else:
            rows.append((k, str(value)))
    return pd.DataFrame(rows, columns=["key", "value"])


def chunk_table(env: "StrategyEnv") -> "pd.DataFrame":
    """One row per indexed chunk: page, folder, chunk index, characters."""
    import pandas as pd

    lead = env.vault.notes_rel
    rows = [(d.page_path, _folder(d.page_path, lead), d.chunk_index) for d in env.index.iter_docs()]
    df = pd.DataFrame(rows, columns=["page", "folder", "chunk_index"])
    df["chars"] = _chunk_chars(env)
    return df.sort_values(["page", "chunk_index"]).reset_index(drop=True)


def _chunk_chars(env: "StrategyEnv") -> list[int]:
    checker = env.retriever.integrity()
    out = []
    for doc in env.index.iter_docs():
        rec = checker.record(doc) or {}
        out.append(int(rec.get("char_count", len(rec.get("raw_text", "")))))
    return out


def _folder(page: str, notes_rel: str = "wiki") -> str:
    """The page's folder inside the notes folder ("(top)" for a note directly in it)."""
    parts = page.removeprefix(f"{notes_rel}/" if notes_rel else "").split("/")
    return "/".join(parts[:-1]) or "(top)"


def folders(vault_pages: list[str], chunks: "pd.DataFrame", notes_rel: str = "wiki") -> "pd.DataFrame":
    """Pages and chunks per folder of the notes folder (``vault.notes_rel``), with pages that have no chunk."""
    import pandas as pd

    pages = pd.DataFrame({"page": vault_pages})
    pages["folder"] = pages.page.map(lambda page: _folder(page, notes_rel))
    per_page = chunks.groupby("page").size()
    pages["chunks"] = pages.page.map(per_page).fillna(0).astype(int)
    out = pages.groupby("folder").agg(pages=("page", "size"), chunks=("chunks", "sum"),
                                      pages_without_chunks=("chunks", lambda s: int((s == 0).sum())))
    out.loc["total"] = out.sum()
    return out.reset_index()


def staleness(vault: Any, env: "StrategyEnv") -> "pd.DataFrame":
    """Doctor reports side by side: the vault's own index, and the explored one when it lives in the cache."""
    import pandas as pd

    from vaulteval.pipeline.doctor import doctor

    vault_doctor = doctor(vault)
    view_doctor = doctor(env.vault, env.retriever) if env.source != "vault" else None
    keys = ("state", "pages_in_vault", "pages_indexed", "stale_pages", "missing_pages", "unindexed_pages",
            "stale_chunks")
    cols = {"vault (.vault-meta)": vault_doctor}
    if view_doctor is not None:
        cols["evaluation cache"] = view_doctor
    data = {name: [str(getattr(rep, k)) for k in keys] + ["; ".join(rep.problems) or "-"] for name, rep in cols.items()}
    return pd.DataFrame(data, index=[*keys, "problems"]).rename_axis("check").reset_index()


PREFIX_LABELS = ("tags", "aliases")  # the contextual prefix's labels ("Tags: ...", "Aliases: ..."), in every chunk


def left_out_terms(index: "BM25Index") -> set[str]:
    """Analyzed forms of stopwords and of the prefix labels: words that say nothing about the notes."""
    from vaulteval.workbench.misses import stop_terms

    return set(stop_terms(index)) | set(PREFIX_LABELS) | {t for w in PREFIX_LABELS for t in index.analyze(w)}


def top_terms(index: "BM25Index", n: int = 20) -> "pd.DataFrame":
    """The ``n`` terms found in the most chunks (ties: more occurrences, then alphabetical), without
    stopwords and prefix labels (``left_out_terms``)."""
    import pandas as pd

    skip = left_out_terms(index)
    rows = []
    for tid, term in enumerate(index.all_terms()):
        if term in skip:
            continue
        docs, tfs = index.postings(tid)
        rows.append((term, int(docs.size), int(tfs.sum())))
    df = pd.DataFrame(rows, columns=["term", "chunks", "occurrences"])
    df = df.sort_values(["chunks", "occurrences", "term"], ascending=[False, False, True]).head(n)
    df["share_of_chunks"] = (df.chunks / max(index.n_docs, 1)).round(DIGITS)
    return df.reset_index(drop=True)


def judged_coverage(vault_pages: list[str], qs: "QuerySet") -> "pd.DataFrame":
    """How much of the vault the query set judges: pages judged relevant, pages never judged."""
    import pandas as pd

    judged = {d for q in qs for d, g in q.relevant.items() if g > 0}
    rows = [("pages in the vault", len(vault_pages)), ("pages judged relevant by some query", len(judged)),
            ("pages never judged relevant", len(set(vault_pages) - judged)),
            ("queries", len(qs)), ("negative queries", len(qs.negative))]
    return pd.DataFrame(rows, columns=["key", "value"])


def retrieval_table(result: Any) -> "pd.DataFrame":
    """A RetrievalResult as a table: rank, page, chunk, BM25 score, snippet (no absolute paths)."""
    import pandas as pd

    rows = [(i, c.page_path, c.chunk_index, c.bm25_score, one_line(c.snippet, 100))
            for i, c in enumerate(result.candidates, 1)]
    return rounded(pd.DataFrame(rows, columns=["rank", "page", "chunk", "bm25_score", "snippet"]))

