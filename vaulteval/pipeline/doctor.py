"""The state of the ``retrieve`` capability: available, configured, verified or degraded.

Usage: ``report = doctor(vault)``; ``report.state == "verified"`` when retrieval is safe to use.

- available: the package and a vault with notes exist, but nothing is provisioned;
- configured: an index exists but is not current (stale or missing pages);
- verified: the index opens, passes its checksum, and every indexed page is current;
- degraded: the index is corrupt, unreadable or from another schema.

``doctor(vault, deep=True)`` also checks every byte of the index against its
block checksums (``verify_index`` alone is ``vaulteval index verify``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from vaulteval.errors import NotProvisioned
from vaulteval.index.file import IndexCorrupt, IndexFileError, verify_file
from vaulteval.index.reader import index_path
from vaulteval.pipeline.embed import embed_command
from vaulteval.pipeline.coexistence import coexistence_line, shared_state
from vaulteval.pipeline.storecheck import check_store
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.embeddings.store import store_path
from vaulteval.pipeline.findable import (  # noqa: F401 - page_currency and unindexed_pages are named here too
    PageCurrency,
    page_currency,
    unfindable_notes,
    unindexed_pages,
)
from vaulteval.vault.notefiles import unreadable_notes

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from vaulteval.vault.vault import Page, Vault


SCHEMA = "vaulteval.doctor.v1"


@dataclass
class DoctorReport:
    state: str
    vault: str
    index_path: str
    index_present: bool
    index_readable: bool
    problems: list[str] = field(default_factory=list)
    stats: dict[str, Any] | None = None
    pages_in_vault: int = 0
    pages_indexed: int = 0
    stale_pages: int = 0
    missing_pages: int = 0
    unindexed_pages: int = 0
    stale_chunks: int = 0
    deep: bool = False
    bad_section: str | None = None
    bad_block: int | None = None
    rebuild: str | None = None
    embeddings: dict[str, Any] | None = None
    store: dict[str, Any] | None = None  # --deep: what the check of the packed chunk store found
    coexistence: str | None = None  # one line when claude-obsidian's state shares .vault-meta/
    # Obsidian's excluded-files filters: {"configured": [...] now, "indexed_with": [...] or None (none recorded)}.
    exclusions: dict[str, Any] | None = None
    # Notes with no text Obsidian shows (empty, frontmatter or %%comments%% only): not indexed, not a problem.
    empty_pages: list[str] = field(default_factory=list)
    # Notes skipped because they cannot be named, opened or read: {"page_path", "reason"}.
    skipped_notes: list[dict[str, str]] = field(default_factory=list)
    # Chunks of current notes whose text the chunk-to-note check refuses (never served).
    refused_chunks: int = 0
    # Notes with text that no query can be served from: {"page_path", "reason"} (vaulteval.pipeline.findable).
    unfindable_notes: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **asdict(self)}


def companion_files(vault: "Vault") -> list[tuple[str, Path, str]]:
    """The other files in the index's checksummed format: (name, path, the command that rebuilds it)."""
    from vaulteval.index.fields import fields_path

    return [("fields", fields_path(vault.meta_dir), vault.rebuild_command()),
            ("embeddings", store_path(vault.meta_dir), embed_command(vault))]


def verify_index(vault: "Vault", retriever: "Retriever | None" = None) -> dict[str, Any]:
    """Usage: ``verify_index(vault)`` -> sizes of what was checked; NotProvisioned (exit 10) names the first bad
    block. The field index and the stored embeddings, when present, are checked byte for byte too."""
    retriever = retriever or Retriever(vault)
    index = retriever.index()
    try:
        report = index.verify()
    except IndexCorrupt as exc:
        raise NotProvisioned(f"{exc} ({index.path})", rebuild=vault.rebuild_command()) from None
    report["store"] = check_store(retriever)
    if report["store"]["problems"]:
        raise NotProvisioned(f"chunk store: {report['store']['problems'][0]} ({vault.meta_dir / 'store'})",
                             rebuild=vault.rebuild_command())
    for name, path, fix in companion_files(vault):
        report[name] = None
        if path.exists():
            try:
                report[name] = verify_file(path)
            except IndexFileError as exc:
                raise NotProvisioned(f"{name}: {exc} ({path})", rebuild=fix) from None
    return report


def doctor(vault: "Vault", retriever: "Retriever | None" = None, *, deep: bool = False) -> DoctorReport:
    """Usage: ``doctor(vault).state`` -> 'verified' | 'configured' | 'available' | 'degraded'."""
    retriever = retriever or Retriever(vault)
    path = index_path(vault.meta_dir)
    report = DoctorReport(state="available", vault=str(vault.root), index_path=str(path),
                          index_present=path.is_file(), index_readable=False, deep=deep)
    pages = list(vault.iter_pages())
    report.pages_in_vault = len(pages)
    shared = shared_state(vault)
    report.coexistence = coexistence_line(shared)
    report.skipped_notes = [{"page_path": rel, "reason": why} for rel, why in unreadable_notes(vault)]
    report.exclusions = {"configured": list(vault.ignore.filters), "indexed_with": None,
                         "settings_ignored": vault.ignore_obsidian_settings}
    if not report.index_present:
        report.problems.append("no index: the vault is not provisioned")
        report.rebuild = vault.rebuild_command()
        return report
    try:
        index = retriever.index()
    except NotProvisioned as exc:
        return _degraded(report, vault, str(exc), *exc.where)
    try:
        if deep:
            index.verify()
        report.index_readable = True
        report.stats = index.stats()
        cur = _check_pages(index, retriever.integrity(), report)
    except IndexCorrupt as exc:
        return _degraded(report, vault, f"{exc} ({index.path})", exc.section, exc.block)
    except NotProvisioned as exc:  # a block read while listing the documents failed its checksum
        return _degraded(report, vault, str(exc), *exc.where)
    empty: set[str] = set()
    unindexed = unindexed_pages(pages, cur.indexed, empty)
    report.unindexed_pages = len(unindexed)
    report.empty_pages = sorted(empty)
    report.unfindable_notes = unfindable_notes(pages, cur, unindexed)
    if report.stale_pages:
        report.problems.append(f"{report.stale_pages} page(s) changed since the index was built")
    if report.missing_pages:
        report.problems.append(f"{report.missing_pages} indexed page(s) no longer exist")
    # --deep's store check counts these records among all it finds damaged: one finding, its.
    store = check_store(retriever, text_check=False) if deep else None
    if report.stale_chunks and not (store and store["damaged"]):
        report.problems.append(f"{report.stale_chunks} chunk record(s) differ from the index")
    if report.refused_chunks:
        report.problems.append(f"{report.refused_chunks} chunk(s) are refused by the chunk-to-note check (their text "
                               f"is not text of the note) in {len(cur.refused_pages)} note(s)")
    if report.unindexed_pages:
        report.problems.append(f"{report.unindexed_pages} page(s) are not in the index (new, or without text)")
    if index.n_docs == 0:
        report.problems.append("the index has no chunks")
    _check_exclusions(index, report)
    if deep:
        _deep_fields(vault, report)
        report.store = store  # without the chunk-to-note check: every row had it above (refused_chunks)
        report.problems += store["problems"]
    embed_problem = _embeddings(vault, retriever, report)
    if report.problems:
        report.state = "configured"
        # --embed with the store's own embedder and model also does all a plain provision does; --rebuild rewrites
        # records a plain run would keep (their note has not changed).
        report.rebuild = (embed_command(vault) if embed_problem else vault.rebuild_command()) + (
            " --rebuild" if report.refused_chunks else "")
    else:
        report.state = "verified"
    return report


def _check_exclusions(index, report: DoctorReport) -> None:
    """A problem when Obsidian's excluded-files filters changed since the build (retrieve drops hits under the
    current ones meanwhile)."""
    recorded = index.header.get("exclusions")
    if not isinstance(recorded, list):
        report.problems.append("the index does not record the excluded-files filters it was built with; "
                               "provision builds it again")
        return
    report.exclusions["indexed_with"] = recorded
    now = report.exclusions["configured"]
    if sorted(map(str, recorded)) != sorted(now):
        added = [f for f in now if f not in recorded]
        removed = [f for f in recorded if f not in now]
        parts = ([f"added {', '.join(added)}"] if added else []) + ([f"removed {', '.join(removed)}"] if removed else [])
        report.problems.append(f"Obsidian's excluded files changed since the index was built ({'; '.join(parts)}); "
                               "retrieve drops notes under the current filters until the next provision")


def _deep_fields(vault: "Vault", report: DoctorReport) -> None:
    """--deep: every byte of the field index too (the stored embeddings are checked whole whenever they open)."""
    name, path, _fix = companion_files(vault)[0]
    if path.exists():
        try:
            verify_file(path)
        except IndexFileError as exc:
            report.problems.append(f"{name}: {exc} ({path}); field weights are not applied until it is rebuilt")


def _embeddings(vault: "Vault", retriever: Retriever, report: DoctorReport) -> bool:
    """Fill ``report.embeddings``: absent, unusable (corrupt), or current with how many rows match the index."""
    path = store_path(vault.meta_dir)
    if not path.exists():
        report.embeddings = {"state": "absent", "path": str(path)}
        return False
    try:
        store = retriever.store()
    except NotProvisioned as exc:
        report.embeddings = {"state": "unusable", "path": str(path), "error": str(exc)}
        report.problems.append(f"stored embeddings are unusable: {exc}")
        return True
    onnx = _onnx_export(vault, store)
    if onnx is not None and onnx["state"] == "damaged":
        report.problems.append(f"the ONNX export of the embedding model is damaged ({onnx['problem']}); queries "
                               "embed with sentence-transformers until provision writes it again")
    served = sum(1 for doc in retriever.store_docs() if doc >= 0)
    missing = len({*range(retriever.index().n_docs)} - set(retriever.store_docs()))
    report.embeddings = {"state": "current" if not missing and served == len(store) else "partial",
                         **store.describe(), "rows_served": served, "rows_stale": len(store) - served,
                         "chunks_without_vector": missing, "onnx": onnx}
    if missing or served != len(store):
        report.problems.append(f"{missing} chunk(s) have no stored vector and {len(store) - served} stored "
                               "vector(s) are stale (dense and hybrid skip them)")
        return True
    return False


def _onnx_export(vault: "Vault", store) -> dict[str, Any] | None:
    """The state of the ONNX export a sentence-transformers store's queries use (None for other backends)."""
    from vaulteval.embeddings.onnxfiles import ONNX_DIR, export_state
    from vaulteval.hosts import RerankConfigError
    from vaulteval.pipeline.stages.embedder import EmbedderSettings

    if store.backend != "sentence-transformers":
        return None
    try:
        model = str(EmbedderSettings.of_store(store).checked().model)
    except RerankConfigError as exc:
        return {"state": "unknown", "problem": str(exc)}
    return export_state(vault.meta_dir / ONNX_DIR, model)


def _degraded(report: DoctorReport, vault: "Vault", problem: str, section: str | None = None,
              block: int | None = None) -> DoctorReport:
    report.state = "degraded"
    report.index_readable = False
    report.problems.append(problem)
    report.bad_section, report.bad_block = section, block
    report.rebuild = vault.rebuild_command()
    return report


def stale_pages(vault: "Vault", retriever: "Retriever | None" = None) -> set[str]:
    """Usage: ``stale_pages(vault)`` -> the pages the index does not hold as they are now: changed, deleted or
    new since the build, or with chunk records that differ from it; empty when the index is current.

    The index must open (NotProvisioned otherwise); the same checks as ``doctor``'s.
    """
    retriever = retriever or Retriever(vault)
    cur = page_currency(retriever.index(), retriever.integrity())
    return (cur.changed | cur.missing | cur.chunk_pages | cur.refused_pages
            | unindexed_pages(vault.iter_pages(), cur.indexed))


def _check_pages(index, checker, report: DoctorReport) -> PageCurrency:
    """Count stale, missing and changed pages, chunk records and refused chunks."""
    cur = page_currency(index, checker)
    report.stale_pages, report.missing_pages, report.stale_chunks = len(cur.changed), len(cur.missing), cur.stale_chunks
    report.refused_chunks = cur.refused_chunks
    report.pages_indexed = len(cur.indexed)
    return cur
