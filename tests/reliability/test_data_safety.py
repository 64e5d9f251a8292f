"""No write or delete outside the vault, no hang on special files, no nonsense parameters.

Usage: ``.venv/bin/python -m pytest tests/reliability/test_data_safety.py -q``

Each test plants what a review found on a copy of the sample vault and runs the
real CLI in a subprocess with a timeout, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from vaulteval.errors import UsageError
from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import (  # noqa: F401
    DESCALING_NOTE,
    assert_one_line_error,
    chunk_records,
    fresh_vault,
    index_file,
    records_for,
    run_cli,
    run_main,
    snapshot,
)

META = META_REL
TIMEOUT = 60


def _in_process(*args) -> subprocess.CompletedProcess:
    """The CLI's own main in this process (fast), shaped like a finished subprocess."""
    code, out, err = run_main(*args)
    return subprocess.CompletedProcess(list(map(str, args)), code, out, err)


def _notes(root: Path) -> dict:
    return snapshot(root / "wiki")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the vault holding unrelated things that must survive untouched."""
    target = tmp_path / "outside"
    (target / "family-photos").mkdir(parents=True)
    (target / "family-photos" / "2019.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    (target / "c-000103").mkdir()
    (target / "c-000103" / "chunk-000.json").write_text('{"mine": true}')
    (target / "c-000103" / "chunk-009.json").write_text('{"also": "mine"}')
    (target / "notes.txt").write_text("keep me\n")
    return target


# -- item 1: symlinks at every level of the derived state -------------------------

def _swap_for_link(path: Path, target: Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    os.symlink(target, path)


@pytest.mark.parametrize("where", [".vault-meta", META, f"{META}/store", f"{META}/bm25"])
@pytest.mark.parametrize("command", [("provision",), ("prefix", "--all"), ("index", "build")])
def test_a_symlinked_meta_folder_is_refused_before_anything_changes(fresh_vault: Path, outside: Path,
                                                                    where: str, command: tuple) -> None:
    # The page behind c-000103 changes, so a run that followed the link would write there.
    with open(fresh_vault / DESCALING_NOTE, "a", encoding="utf-8") as fh:
        fh.write("\nA fresh paragraph about descaling with citric acid.\n")
    _swap_for_link(fresh_vault / where, outside)
    before_out, before_notes = snapshot(outside), _notes(fresh_vault)
    before_meta = snapshot(fresh_vault / META) if where not in (".vault-meta", META) else None
    line = assert_one_line_error(_in_process(*command, "--vault", fresh_vault), 2)
    assert "symlink" in line and "nothing was changed" in line
    assert snapshot(outside) == before_out, "something outside the vault changed"
    assert _notes(fresh_vault) == before_notes
    if before_meta is not None:
        assert snapshot(fresh_vault / META) == before_meta, ".vault-meta changed before the refusal"


@pytest.mark.parametrize("name", [".lock", "chunk-catalog.vcc", "bm25/index.vti", "embeddings.sqlite"])
def test_a_symlinked_meta_file_is_refused(fresh_vault: Path, outside: Path, name: str) -> None:
    _swap_for_link(fresh_vault / META / name, outside / "notes.txt")
    before = snapshot(outside)
    line = assert_one_line_error(_in_process("provision", "--vault", fresh_vault), 2)
    assert name.rsplit("/", 1)[-1] in line
    assert snapshot(outside) == before and (outside / "notes.txt").read_text() == "keep me\n"


@pytest.mark.parametrize("where", [".vault-meta", META])
def test_a_symlinked_meta_on_a_bare_vault_writes_nothing_there(fresh_vault: Path, tmp_path: Path, where: str) -> None:
    import shutil

    shutil.rmtree(fresh_vault / ".vault-meta")
    (fresh_vault / where).parent.mkdir(exist_ok=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    os.symlink(empty, fresh_vault / where)
    assert_one_line_error(run_cli("provision", "--vault", fresh_vault, timeout=TIMEOUT), 2)
    assert list(empty.iterdir()) == [], "derived state (the lock included) was written through the link"


@pytest.mark.parametrize("where", [".vault-meta", META])
def test_retrieve_refuses_a_symlinked_meta_folder(fresh_vault: Path, tmp_path: Path, where: str) -> None:
    (fresh_vault / where).rename(tmp_path / "moved-meta")
    os.symlink(tmp_path / "moved-meta", fresh_vault / where)
    line = assert_one_line_error(run_cli("retrieve", "--vault", fresh_vault, "descaling", "--no-rerank",
                                         timeout=TIMEOUT), 2)
    assert "symlink" in line


def test_retrieve_never_opens_the_vaults_embedding_cache(fresh_vault: Path, outside: Path,
                                                         ollama_server, monkeypatch) -> None:
    # The query path caches outside the vault: a symlink where provisioning keeps its cache is never followed.
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url)
    target = outside / "notes.txt"
    os.symlink(target, fresh_vault / META / "embeddings.sqlite")
    before = snapshot(fresh_vault)
    code, out, err = run_main("retrieve", "--vault", fresh_vault, "descaling", "--model", "all-minilm")
    assert code == 0 and json.loads(out)["strategy"] == "bm25+rerank:ollama", err
    assert snapshot(fresh_vault) == before
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in outside.iterdir()) == ["c-000103", "family-photos", "notes.txt"]


# -- item 3: one validator for k1, b and chunk sizes -----------------------------

@pytest.mark.parametrize("flags", [("--k1", "nan"), ("--k1", "-1.5"), ("--b", "7"), ("--b", "-0.1"),
                                   ("--k1", "inf"), ("--b", "nan"), ("--k1", "1e300")])
def test_index_build_refuses_nonsense_bm25_parameters(fresh_vault: Path, flags: tuple) -> None:
    before = index_file(fresh_vault).read_bytes()
    line = assert_one_line_error(_in_process("index", "build", "--vault", fresh_vault, *flags), 2)
    assert flags[0].lstrip("-") in line
    assert index_file(fresh_vault).read_bytes() == before


@pytest.mark.parametrize("k1,b", [(math.nan, 0.75), (-1.5, 0.75), (1.2, 7), (math.inf, 0.5), (1.2, math.nan),
                                  ("1.2", 0.75), (True, 0.75), (None, 0.5)])
def test_the_validator_refuses_bad_bm25_values_everywhere(fresh_vault: Path, k1, b) -> None:
    from vaulteval import Vault
    from vaulteval.index.build import build_index
    from vaulteval.pipeline.provision import build
    from vaulteval.index.params import check_bm25_params
    from vaulteval.workbench.strategy import IndexSettings

    with pytest.raises(UsageError):
        check_bm25_params(k1, b)
    with pytest.raises(UsageError):
        IndexSettings(k1=k1, b=b)
    before = index_file(fresh_vault).read_bytes()
    with pytest.raises(UsageError):
        build(Vault(fresh_vault), k1=k1, b=b)
    with pytest.raises(UsageError):
        build_index(Vault(fresh_vault), k1=k1, b=b)
    assert index_file(fresh_vault).read_bytes() == before


@pytest.mark.parametrize("text", ["bm25:k1=nan", "bm25:k1=-1.5", "bm25:b=7", "bm25:k1=inf",
                                  "bm25:target=10", "bm25:hard_max=7500", "bm25:overlap=-1",
                                  "bm25:target=900,overlap=900", "bm25:target=5000,hard_max=4000"])
def test_strategies_use_the_same_validator(text: str) -> None:
    from vaulteval.workbench.strategy import Strategy, StrategyError

    with pytest.raises(StrategyError):
        Strategy.parse(text)


@pytest.mark.parametrize("sizes", [(2000, 200, 4000), (50, 0, 50), (800, 100, 6998)])
def test_sensible_chunk_sizes_pass(sizes: tuple) -> None:
    from vaulteval.index.params import check_chunk_params

    assert check_chunk_params(*sizes) == sizes


# -- item 5: FIFOs and other special files never hang -------------------------------

def test_a_fifo_named_like_a_note_does_not_hang_provision(fresh_vault: Path) -> None:
    os.mkfifo(fresh_vault / "wiki" / "note.md")
    proc = run_cli("provision", "--vault", fresh_vault, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert "note.md" not in {r["page_path"].rsplit("/", 1)[-1] for r in chunk_records(fresh_vault)}


def test_a_page_replaced_by_a_fifo_does_not_block_retrieve(fresh_vault: Path) -> None:
    assert records_for(fresh_vault, DESCALING_NOTE)
    (fresh_vault / DESCALING_NOTE).unlink()
    os.mkfifo(fresh_vault / DESCALING_NOTE)
    proc = run_cli("retrieve", "--vault", fresh_vault, "descaling citric acid", "--no-rerank", "--explain",
                   timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert DESCALING_NOTE not in [c["page_path"] for c in result["candidates"]]
    assert result["explain"]["stale_candidates_skipped"] >= 1
    proc = run_cli("provision", "--vault", fresh_vault, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr


def test_a_segment_replaced_by_a_fifo_does_not_block_retrieve(fresh_vault: Path) -> None:
    (segment,) = (fresh_vault / META / "store").iterdir()
    segment.unlink()
    os.mkfifo(segment)
    proc = run_cli("retrieve", "--vault", fresh_vault, "descaling citric acid", "--no-rerank", timeout=TIMEOUT)
    assert proc.returncode == 10 and "chunk records that are missing" in proc.stderr, proc.stderr
    assert run_cli("provision", "--vault", fresh_vault, timeout=TIMEOUT).returncode == 0
    proc = run_cli("retrieve", "--vault", fresh_vault, "descaling citric acid", "--no-rerank", timeout=TIMEOUT)
    assert proc.returncode == 0 and json.loads(proc.stdout)["candidates"][0]["page_path"] == DESCALING_NOTE
    assert segment.exists()  # the generation served when that writer started is kept for its readers...
    assert run_cli("provision", "--vault", fresh_vault, timeout=TIMEOUT).returncode == 0
    assert not segment.exists()  # ...and removed by the writer after


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_warm_retriever_holds_no_segment_that_is_a_fifo_or_a_link(fresh_vault: Path, tmp_path: Path,
                                                                     kind: str) -> None:
    """A warm Retriever reads its segments whole before the first query: one replaced by a FIFO or by a link to
    a copy outside the vault is neither read (no hang, nothing from outside) nor served, as in a CLI call."""
    from vaulteval import Vault
    from vaulteval.errors import NotProvisioned
    from vaulteval.pipeline.retrieve import Retriever

    (segment,) = (fresh_vault / META / "store").iterdir()
    if kind == "fifo":
        segment.unlink()
        os.mkfifo(segment)
    else:
        outside = tmp_path / "outside" / segment.name
        outside.parent.mkdir()
        segment.rename(outside)
        os.symlink(outside, segment)
    retriever = Retriever(Vault(fresh_vault))
    with pytest.raises(NotProvisioned, match="chunk records that are missing"):
        retriever.retrieve("descaling citric acid", top=5)
    assert retriever.integrity().store().held_bytes == 0


@pytest.mark.parametrize("name", ["bm25/index.vti", "chunk-catalog.vcc"])
def test_derived_files_replaced_by_a_fifo_never_hang(fresh_vault: Path, name: str) -> None:
    path = fresh_vault / META / name
    path.unlink()
    os.mkfifo(path)
    proc = run_cli("retrieve", "--vault", fresh_vault, "descaling", "--no-rerank", timeout=TIMEOUT)
    assert proc.returncode in (0, 10) and "Traceback" not in proc.stderr
    proc = run_cli("provision", "--vault", fresh_vault, timeout=TIMEOUT)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr and len(proc.stderr.splitlines()) == 1


# -- item 7: the catalog is keyed by everything that shapes a record ---------------

def test_changing_the_prefix_tier_without_rebuild_reprefixes(fresh_vault: Path, monkeypatch) -> None:
    from fake_llm_servers import FakeServer, Reply
    from vaulteval import Vault
    from vaulteval.chunks.prefix_llm import PrefixSettings
    from vaulteval.pipeline.provision import provision

    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    vault = Vault(fresh_vault)
    assert {r["prefix_source"] for r in chunk_records(fresh_vault)} == {"synthetic"}
    with FakeServer([Reply(200, {"response": "Zanzibarish context line."})]) as srv:
        report = provision(vault, prefix_settings=PrefixSettings(tier="ollama", ollama_host=srv.url))
    assert report["prefix"]["tier"] == "ollama"
    recs = chunk_records(fresh_vault)
    assert {r["prefix_source"] for r in recs} == {"ollama"}
    # the LLM line leads the prefix; a page's tags and aliases follow it as terms
    assert all(r["prefix"].startswith("Zanzibarish context line.") for r in recs)
    assert run_main("retrieve", "--vault", fresh_vault, "zanzibarish", "--no-rerank")[0] == 0
    provision(vault)  # back to synthetic, again without --rebuild
    assert {r["prefix_source"] for r in chunk_records(fresh_vault)} == {"synthetic"}
    assert not any("Zanzibarish" in r["contextualized_text"] for r in chunk_records(fresh_vault))
