"""The pipeline value: one grammar for every registered stage, the default built from what the vault has,
and one ranking whether retrieve, the MCP server or eval run's ``default`` runs it.

The embedded sample vault (``embedded_sample``) is built once per module in-process (sentence-transformers, offline).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalkit import write_yaml
from pipeline_fixtures import cli_env, run_json, run_main
from vaulteval import Vault
from vaulteval.errors import UsageError
from vaulteval.pipeline.spec import WITH_VECTORS, default_pipeline, has_vectors
from vaulteval.pipeline.indexsettings import IndexSettings
from vaulteval.pipeline.spec import DEFAULT_DEPTH, Pipeline
from vaulteval.pipeline.tuned import built_index_settings
from vaulteval.pipeline.stages import registry
from vaulteval.pipeline.stages.embedder import EmbedderSettings
from vaulteval.workbench.strategy import Strategy

QUERIES = ["coffee machine flow is weak and the steam wand sputters", "starter smells like nail polish remover",
           "dough slumps out of the basket when the kitchen is warm"]


def _examples() -> list[str]:
    """A pipeline string for every registered stage and every setting tune proposes for it."""
    out = []
    for cls in registry.stages():
        if cls.role == "first":
            if cls.refines:
                out.append(f"{cls.refines}:{cls.params[0].name}=10")
            out += [f"{cls.head()}:{point}" if point else cls.head() for point in cls.tune_grid]
        else:  # the embedding reranker as rerank:st; one a bare item selects as written (rerank:cross)
            head = registry.written(cls) if cls.selector else f"{cls.name}:st"
            out.append(head)
            out.append(f"{head},w_title=2,bm25_top=20")
            out += [f"{first}:rerank={head.partition(':')[2]}" for first in sorted(cls.runs_over - {cls.over})]
    return out


@pytest.mark.parametrize("text", _examples())
def test_every_registered_stage_round_trips_through_text_and_dict(text: str) -> None:
    pipeline = Pipeline.parse(text)
    assert Pipeline.parse(pipeline.text()) == pipeline
    assert Pipeline.from_dict(json.loads(json.dumps(pipeline.to_dict()))) == pipeline
    assert Pipeline.parse(pipeline.text()).text() == pipeline.text()
    # the workbench's strategy reads the same grammar and runs the same pipeline
    assert Strategy.parse(text).pipeline == pipeline


INDEXED = ["bm25:analyzer=english,k1=1.2", "bm25:analyzer=default", "hybrid:cc,alpha=0.3,analyzer=german,fold=yes,rerank=st",
           "rerank:st,w_title=2,analyzer=english,stemmer=porter,stopwords=lucene,bm25_top=20",
           "dense:target=600,overlap=100,hard_max=1200", "bm25:analyzer=spanish,compounds=default,b=0.4,prefix=synthetic",
           "bm25:analyzer=english,stopwords=short"]


@pytest.mark.parametrize("text", INDEXED)
def test_index_settings_round_trip_with_the_stages(text: str) -> None:
    pipeline = Pipeline.parse(text)
    assert pipeline.index and Pipeline.parse(pipeline.text()) == pipeline
    assert Pipeline.from_dict(json.loads(json.dumps(pipeline.to_dict()))) == pipeline
    assert Pipeline.parse(pipeline.text()).text() == pipeline.text()
    assert pipeline.replace(index=()) != pipeline  # the settings are part of the value
    assert pipeline.index_settings.index_analyzer == Strategy.parse(text).index_analyzer
    defaults = IndexSettings()
    # a strategy (whose index settings all have a value) names those off their defaults
    assert dict(Strategy.parse(text).pipeline.index) == {k: v for k, v in pipeline.index if getattr(defaults, k) != v}


def test_a_pipeline_without_index_settings_saves_none() -> None:
    assert "index" not in Pipeline.parse("hybrid:cc").to_dict() and Pipeline.parse("bm25").index == ()
    assert Pipeline.parse("bm25:analyzer=english,stopwords=short").text() == "bm25:analyzer=english,stopwords=short"
    with pytest.raises(UsageError, match="stopwords must be one of"):
        Pipeline.parse("bm25:analyzer=english,stopwords=seed")  # not a name of this vaulteval's lists
    with pytest.raises(UsageError, match="unknown index setting"):
        Pipeline.from_dict({**Pipeline.parse("bm25").to_dict(), "index": {"colour": "red"}})


def test_every_registered_stage_is_covered_by_the_round_trip() -> None:
    covered = {Pipeline.parse(t).first.name for t in _examples()} | {
        Pipeline.parse(t).reranker.name for t in _examples() if Pipeline.parse(t).reranker is not None}
    assert covered == {cls.name for cls in registry.stages()}


def test_depth_has_one_default_and_is_written_only_when_it_differs() -> None:
    assert Pipeline.parse("rerank:st").depth == DEFAULT_DEPTH == Strategy.parse("rerank:st").bm25_top
    assert Pipeline.parse("dense:bm25_top=20").text() == "dense:bm25_top=20"
    assert Pipeline.parse("hybrid:cc,rerank=st").reranker is not None
    assert Pipeline.parse("dense").reranker is None  # dense is dense: no reranker unless the string names one


@pytest.mark.parametrize("text, why", [
    ("bm25:colour=red", "unknown key 'colour'"),
    ("bm25:analyzer=klingon", "analyzer must be one of"),
    ("bm25:stemmer=porter", "need analyzer=english"),
    ("hybrid:cc,k1=-1", "k1"),
    ("bm25:rerank=st", "rerank= reranks"),
    ("dense:bm25_top=0", "bm25_top must be"),
    ("hybrid:xx", "fusion"),
    ("", "empty"),
])
def test_a_bad_pipeline_string_is_one_usage_error(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        Pipeline.parse(text)


def test_capabilities_come_from_the_stages_not_their_names() -> None:
    assert not Pipeline.parse("bm25").semantic and Pipeline.parse("bm25").plain
    assert Pipeline.parse("dense").semantic and "dense" in Pipeline.parse("dense").needs
    assert Pipeline.parse("rerank:st").semantic and not Pipeline.parse("rerank:st").plain
    assert not Pipeline.parse("bm25:prf=10").plain


def test_a_vault_without_vectors_gets_plain_bm25_and_a_damaged_store_warns_and_keeps_bm25(fresh_vault: Path) -> None:
    vault = Vault(fresh_vault)
    assert not has_vectors(vault) and default_pipeline(vault) == Pipeline.parse("bm25")
    plain = run_json("retrieve", "--vault", fresh_vault, "espresso")
    assert plain["pipeline"] == {"text": "bm25", "source": "default"} and plain["strategy"] == "bm25-only"
    store = vault.meta_dir / "embeddings" / "vectors.vtv"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_bytes(b"not a store")
    assert has_vectors(vault) and default_pipeline(vault) == Pipeline.parse("bm25")  # unreadable: not used
    code, stdout, stderr = run_main("retrieve", "--vault", fresh_vault, "espresso")
    assert code == 0 and "the default pipeline runs bm25" in stderr and "provision" in stderr
    out = json.loads(stdout)
    assert out["pipeline"] == {"text": "bm25", "source": "default"}
    assert [c["page_path"] for c in out["candidates"]] == [c["page_path"] for c in plain["candidates"]]
    code, _, stderr = run_main("retrieve", "--vault", fresh_vault, "espresso", "--strategy", "hybrid:cc")
    assert code == 10  # named by the user: the store's problem is the answer, not a silent BM25


def test_the_served_path_refuses_index_settings_the_vaults_index_was_not_built_with(fresh_vault: Path) -> None:
    from vaulteval.server import warm

    built = built_index_settings(Vault(fresh_vault))
    own, other = built["analyzer"], "english" if built["analyzer"] != "english" else "default"
    assert ":" not in own  # the sample's index: a plain analyzer name
    for strategy, key in ((f"bm25:analyzer={other}", "analyzer"), (f"hybrid:cc,analyzer={other}", "analyzer"),
                          (f"bm25:analyzer={own},k1={built['k1'] + 0.5}", "k1"), ("bm25:target=600", "target")):
        code, stdout, stderr = run_main("retrieve", "--vault", fresh_vault, "espresso", "--strategy", strategy)
        assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
        assert f"names {key}=" in stderr and "drop" in stderr
        server = warm.WarmVault(Vault(fresh_vault), warm.Served())
        with pytest.raises(UsageError, match=f"names {key}="):
            server._pipeline(strategy)  # an MCP search naming the strategy
    same = run_json("retrieve", "--vault", fresh_vault, "espresso", "--strategy",
                    f"bm25:analyzer={own},k1={built['k1']},b={built['b']}")
    plain = run_json("retrieve", "--vault", fresh_vault, "espresso", "--strategy", "bm25")
    assert same["candidates"] and [c["page_path"] for c in same["candidates"]] == \
        [c["page_path"] for c in plain["candidates"]]  # its own settings, named: run exactly as without them


def test_retrieve_mcp_search_and_eval_runs_default_return_the_same_ranking(embedded_sample: Path, tmp_path: Path) -> None:
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.querysets.queryset import load_queryset

    cli = {}
    for query in QUERIES:
        out = run_json("retrieve", "--vault", embedded_sample, query, "--top", "5")
        assert out["pipeline"] == {"text": WITH_VECTORS, "source": "default"}
        assert out["label"]["first_stage"] == "hybrid:cc" and out["label"]["reranker"] is None
        cli[query] = [c["page_path"] for c in out["candidates"]]

    async def search_all() -> dict:
        params = StdioServerParameters(command=sys.executable, args=["-m", "vaulteval", "mcp", "--vault", str(embedded_sample)],
                                       env=cli_env())
        found = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for query in QUERIES:
                res = await client.call_tool("search", {"query": query, "limit": 5})
                assert res.isError is False, res.content
                assert res.structuredContent["pipeline"] == {"text": WITH_VECTORS, "source": "default"}
                found[query] = [c["page_path"] for c in res.structuredContent["candidates"]]
        return found

    assert anyio.run(search_all) == cli
    qs = write_yaml(tmp_path / "q.yaml", [{"id": f"q{i}", "query": q, "relevant": {cli[q][0]: 1}}
                                          for i, q in enumerate(QUERIES)], vault=str(embedded_sample))
    ev = evaluate(Vault(embedded_sample), load_queryset(qs), ["default"], measures=["nDCG@10"])
    rankings = ev.run("default").rankings()
    assert {q: rankings[f"q{i}"][:5] for i, q in enumerate(QUERIES)} == cli


def test_dense_is_dense_in_retrieve_and_eval(embedded_sample: Path) -> None:
    out = run_json("retrieve", "--vault", embedded_sample, QUERIES[0], "--strategy", "dense")
    assert out["label"] == {"first_stage": "dense", "reranker": None, "fallbacks": []}
    assert out["pipeline"] == {"text": "dense", "source": "strategy"}
    assert all("rerank" not in c["scores"] for c in out["candidates"])
    reranked = run_json("retrieve", "--vault", embedded_sample, QUERIES[0], "--strategy", "dense:rerank=st")
    assert reranked["label"]["reranker"] == "sentence-transformers"


def test_a_store_whose_model_does_not_read_the_vaults_language_is_not_the_default(
        embedded_sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An English model over a vault whose ``auto`` index counts most chunks in German: BM25 (docs/strategies.md)."""
    import vaulteval.index.location as location
    from vaulteval.pipeline.spec import model_reads_vault
    from vaulteval.embeddings.store import open_store

    vault = Vault(embedded_sample)
    store = open_store(vault.meta_dir)
    model = str(EmbedderSettings.of_store(store).checked().model)
    assert model_reads_vault(vault, model)  # no language counts: the store is trusted
    header = {"languages": {"de": 40, "en": 3, "und": 90}}
    monkeypatch.setattr(location, "peek_header", lambda meta_dir: header)
    assert not model_reads_vault(vault, model)
    assert default_pipeline(vault) == Pipeline.parse("bm25")
    header["languages"] = {"en": 40, "de": 3}
    assert default_pipeline(vault) == Pipeline.parse(WITH_VECTORS)
