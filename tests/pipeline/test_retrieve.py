"""Retrieval results: CJK queries, the JSON schema, dedupe, read-only behaviour, the Python API.

Usage: ``.venv/bin/python -m pytest tests/pipeline/test_retrieve.py -q``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vaulteval import Vault
from vaulteval.cli.main import main

from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import retrieve

from pipeline_fixtures import (  # noqa: F401
    CHINESE_NOTE,
    DESCALING_NOTE,
    JAPANESE_NOTE,
    LONG_NOTE,
    append_text,
    fresh_vault,
    provisioned_sample,
    records_for,
    retrieve_json,
    run_cli,
    run_cli_json,
    run_json,
    snapshot,
)

CANDIDATE_KEYS = {
    "chunk_id", "page_address", "page_path", "absolute_path", "chunk_index", "score", "scores",
    "rerank_source", "snippet", "matched_terms", "heading_path", "first_line", "last_line",
    "modified", "snippet_line", "snippet_heading_path",
}
TIMED_STAGES = {"index_open", "bm25", "dense", "fusion", "integrity", "rerank", "dedupe", "total"}
EXPLAIN_KEYS = {
    "bm25_candidate_count", "post_rerank_count", "deduped_count", "bm25_top_param", "rerank_model",
    "stale_candidates_skipped", "timings_ms",
}


@pytest.fixture(autouse=True)
def _no_vault_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("VAULTEVAL_VAULT", "CLAUDE_OBSIDIAN_VAULT", "OLLAMA_HOST", "OLLAMA_URL"):
        monkeypatch.delenv(var, raising=False)


# -- 6. CJK -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "query, page",
    [
        ("熟普和生普", CHINESE_NOTE),          # Chinese: ripe and raw pu'er
        ("普洱茶怎么泡", CHINESE_NOTE),        # Chinese: how to brew pu'er
        ("東福寺の通天橋", JAPANESE_NOTE),      # Japanese: Tōfuku-ji's Tsūten bridge
        ("京都の紅葉の見頃", JAPANESE_NOTE),    # Japanese: best time for Kyoto's autumn leaves
    ],
)
def test_cjk_queries(provisioned_sample: Path, query: str, page: str) -> None:
    result = retrieve_json(provisioned_sample, query)
    assert result["candidates"], query
    assert result["candidates"][0]["page_path"] == page


def test_cjk_fullwidth_and_halfwidth_forms_match(provisioned_sample: Path) -> None:
    """NFKC: half-width katakana in the query finds the full-width note text."""
    full = retrieve_json(provisioned_sample, "ジャパンレールパス")
    half = retrieve_json(provisioned_sample, "ｼﾞｬﾊﾟﾝﾚｰﾙﾊﾟｽ")
    assert [c["chunk_id"] for c in half["candidates"]] == [c["chunk_id"] for c in full["candidates"]]
    assert [c["scores"]["bm25"] for c in half["candidates"]] == [c["scores"]["bm25"] for c in full["candidates"]]


# -- 11. JSON schema and dedupe ------------------------------------------------------

def test_explain_json_schema(provisioned_sample: Path) -> None:
    data = retrieve_json(provisioned_sample, "espresso grinder coffee beans", "--top", "50", "--bm25-top", "8")
    assert set(data) == {"schema", "query", "strategy", "label", "pipeline", "top_k", "candidates", "explain"}
    assert data["pipeline"] == {"text": "bm25:bm25_top=8", "source": "default"}  # no vectors: plain BM25
    assert data["schema"] == "vaulteval.retrieve.v2"
    assert data["query"] == "espresso grinder coffee beans"
    assert data["strategy"] == "bm25-only"
    assert data["label"] == {"first_stage": "bm25", "reranker": None, "fallbacks": []}
    assert data["top_k"] == 50
    cands = data["candidates"]
    assert len(cands) >= 5
    for c in cands:
        assert set(c) == CANDIDATE_KEYS
        assert isinstance(c["chunk_id"], str) and c["chunk_id"] == f"{c['page_address']}:{c['chunk_index']}"
        assert isinstance(c["chunk_index"], int)
        assert c["page_path"].startswith("wiki/") and c["page_path"].endswith(".md")
        assert c["absolute_path"] == str(provisioned_sample / c["page_path"])
        assert Path(c["absolute_path"]).is_file()
        assert isinstance(c["score"], float) and c["score"] > 0
        assert c["scores"] == {"bm25": c["score"]}  # nothing reranked: no rerank component
        assert c["rerank_source"] == "skipped"
        assert isinstance(c["snippet"], str) and 0 < len(c["snippet"]) <= 200
        rec = records_for(provisioned_sample, c["page_path"])[c["chunk_index"]]
        assert c["snippet"] in rec["raw_text"]  # a passage of the chunk, never text from elsewhere
        assert c["matched_terms"] and set(c["matched_terms"]) <= {"espresso", "grinder", "coffee", "beans"}
        assert 1 <= c["first_line"] <= c["snippet_line"] <= c["last_line"]
    scores = [c["scores"]["bm25"] for c in cands]
    assert scores == sorted(scores, reverse=True)
    assert len({c["page_path"] for c in cands}) == len(cands), "two candidates share a page"

    ex = data["explain"]
    assert EXPLAIN_KEYS <= set(ex)
    assert ex["bm25_top_param"] == 8
    assert ex["rerank_model"] is None
    assert ex["stale_candidates_skipped"] == 0
    assert ex["bm25_candidate_count"] == 8  # the query hits 13 chunks: the pool is full
    assert ex["post_rerank_count"] == ex["bm25_candidate_count"] - ex["stale_candidates_skipped"]
    assert ex["deduped_count"] == len(cands)  # --top 50 cuts nothing here
    assert isinstance(ex["timings_ms"], dict) and set(ex["timings_ms"]) == TIMED_STAGES
    assert ex["timings_ms"]["dense"] == ex["timings_ms"]["fusion"] == ex["timings_ms"]["rerank"] == 0.0
    assert all(isinstance(v, (int, float)) and v >= 0 for v in ex["timings_ms"].values())

    plain = run_json("retrieve", "--vault", provisioned_sample, "espresso grinder coffee beans", "--no-rerank")
    assert "explain" not in plain


def test_dedupe_keeps_the_best_chunk_of_a_page(provisioned_sample: Path) -> None:
    query = "zfs pool server boot disk"
    hits = run_json("index", "query", "--vault", provisioned_sample, query, "--top", "20")
    long_hits = [h for h in hits if h["page_path"] == LONG_NOTE]
    assert len(long_hits) >= 2, "the query should hit several chunks of the long note"
    data = retrieve_json(provisioned_sample, query, "--top", "20")
    ex = data["explain"]
    assert ex["deduped_count"] < ex["post_rerank_count"]
    (cand,) = [c for c in data["candidates"] if c["page_path"] == LONG_NOTE]
    assert cand["chunk_id"] == long_hits[0]["chunk_id"]
    assert cand["scores"]["bm25"] == max(h["score"] for h in long_hits)
    assert len({c["page_path"] for c in data["candidates"]}) == len(data["candidates"])


def test_top_1_and_top_limits(provisioned_sample: Path) -> None:
    one = retrieve_json(provisioned_sample, "espresso", "--top", "1")
    assert len(one["candidates"]) == 1 and one["top_k"] == 1
    five = retrieve_json(provisioned_sample, "espresso")
    assert five["top_k"] == 5 and len(five["candidates"]) == 5
    assert one["candidates"][0] == five["candidates"][0]
    narrow = retrieve_json(provisioned_sample, "espresso", "--bm25-top", "1", "--top", "5")
    assert len(narrow["candidates"]) == 1 and narrow["explain"]["bm25_candidate_count"] == 1
    # Every page with a hit, each once, in BM25 order: computed from the raw hits, not from explain.
    query = "zfs pool server boot disk"
    hits = run_json("index", "query", "--vault", provisioned_sample, query, "--top", "1000")
    first_per_page: dict[str, str] = {}
    for h in hits:
        first_per_page.setdefault(h["page_path"], h["chunk_id"])
    assert len(hits) > len(first_per_page) > 5, "the query should hit more than 5 pages and one page twice"
    wide = retrieve_json(provisioned_sample, query, "--top", "1000", "--bm25-top", "1000")
    assert [(c["page_path"], c["chunk_id"]) for c in wide["candidates"]] == list(first_per_page.items())
    assert wide["explain"]["bm25_candidate_count"] == len(hits)
    assert wide["explain"]["deduped_count"] == len(first_per_page)
    # --top cuts after the dedupe: deduped_count counts every page of the pool, the list holds 5.
    top5 = retrieve_json(provisioned_sample, query, "--bm25-top", "1000")
    assert top5["explain"]["deduped_count"] == len(first_per_page)
    assert top5["candidates"] == wide["candidates"][:5]


# -- 9. read-only -----------------------------------------------------------------

QUERIES = [
    ["descaling citric acid"],
    ["espresso", "--top", "1"],
    ["熟普和生普", "--explain"],
    ["東福寺の通天橋", "--top", "3"],
    ["xylophonequux"],
    ["zyxel router reset", "--explain", "--bm25-top", "5"],
    ["zfs pool server", "--top", "10", "--explain"],
    ["the of and"],
    ["sourdough starter hydration", "--explain"],
    ["bike chain wax", "--top", "1000", "--bm25-top", "1000"],
]


def test_retrieve_is_read_only(fresh_vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    append_text(fresh_vault, DESCALING_NOTE, "\nA change after provisioning.\n")  # stale path exercised too
    before = snapshot(fresh_vault)
    stale_seen = 0
    for i in range(100):
        args = QUERIES[i % len(QUERIES)]
        code = main(["retrieve", "--vault", str(fresh_vault), args[0], "--no-rerank", "--explain", *args[1:]])
        out = capsys.readouterr().out
        assert code == 0
        stale_seen += json.loads(out)["explain"]["stale_candidates_skipped"]
    assert stale_seen > 0
    for args in QUERIES[:3]:
        proc = run_cli("retrieve", "--vault", fresh_vault, *args, "--no-rerank")
        assert proc.returncode == 0, proc.stderr
    assert snapshot(fresh_vault) == before


def test_without_explain_only_served_candidates_are_read_and_every_one_is_checked(
        fresh_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A BM25-only query verifies hits in order until it has ``top`` pages: the same answer as checking the whole
    pool first, a stale page is still never served, and hits after the answer are not read."""
    from vaulteval.pipeline.retrieve import Retriever

    queries = ("zfs pool server boot disk", "descale espresso machine", "brew tea water temperature", "espresso")
    full = {(q, top): [c.to_dict() for c in retrieve(Vault(fresh_vault), q, top=top, explain=True).candidates]
            for q in queries for top in (1, 3, 10)}
    # The best page for descaling goes stale: both ways drop it, and agree on what comes instead.
    append_text(fresh_vault, DESCALING_NOTE, "\nEdited after provisioning.\n")
    for q in queries:
        for top in (1, 3, 10):
            lazy = retrieve(Vault(fresh_vault), q, top=top)
            checked = retrieve(Vault(fresh_vault), q, top=top, explain=True)
            assert [c.to_dict() for c in lazy.candidates] == [c.to_dict() for c in checked.candidates]
            assert DESCALING_NOTE not in [c.page_path for c in lazy.candidates]
            if DESCALING_NOTE not in [c["page_path"] for c in full[(q, top)]]:
                assert [c.to_dict() for c in lazy.candidates] == full[(q, top)]
    from vaulteval.chunks import integrity, segments

    opened: list[str] = []
    real_read, real_record = integrity.read_confined, segments.StoreReader.record
    monkeypatch.setattr(integrity, "read_confined", lambda base, rel, strip: opened.append(rel) or real_read(base, rel, strip))
    monkeypatch.setattr(segments.StoreReader, "record",
                        lambda self, where, size, crc: opened.append(where) or real_record(self, where, size, crc))
    one = Retriever(Vault(fresh_vault)).retrieve("zfs pool server boot disk", top=1)
    assert len(one.pool) == 1  # the first current hit answered; nothing after it was read
    assert len(opened) == 2 and opened[1] == one.candidates[0].page_path  # its chunk record, then its note (once)
    opened.clear()
    pool = Retriever(Vault(fresh_vault)).retrieve("zfs pool server boot disk", top=1, explain=True).pool
    records = [rel for rel in opened if rel.startswith("store/")]
    assert len(records) == len(pool) > 1  # with --explain every hit is checked, as before


def test_a_warm_retriever_reads_records_from_held_blocks_and_still_drops_a_stale_note(fresh_vault: Path,
                                                                                       monkeypatch) -> None:
    """A Retriever kept open holds the chunk store's blocks inflated: its queries read no record from the segment
    file, serve what a cold one serves, and still read each note, so an edited one is dropped."""
    from vaulteval.chunks import segments
    from vaulteval.pipeline.retrieve import Retriever

    queries = ("zfs pool server boot disk", "descale espresso machine", "brew tea water temperature")
    cold = {q: [c.to_dict() for c in retrieve(Vault(fresh_vault), q, top=3, explain=True).candidates] for q in queries}
    warm = Retriever(Vault(fresh_vault))
    warm.open()
    file_reads: list[int] = []
    real = segments.read_record
    monkeypatch.setattr(segments, "read_record", lambda fd, *a: file_reads.append(fd) or real(fd, *a))
    for query in queries:
        assert [c.to_dict() for c in warm.retrieve(query, top=3, explain=True).candidates] == cold[query]
    assert file_reads == [] and warm.integrity().store().held_bytes > 0
    retrieve(Vault(fresh_vault), queries[1], top=3)
    assert file_reads  # a cold call reads its records from the file
    append_text(fresh_vault, DESCALING_NOTE, "\nEdited after provisioning.\n")
    assert DESCALING_NOTE not in [c.page_path for c in warm.retrieve(queries[1], top=3).candidates]


# -- 13. the Python API ---------------------------------------------------------------

def test_python_api_matches_cli(tmp_path: Path) -> None:
    from vaulteval.cli.sample import copy_sample

    root = copy_sample(tmp_path / "api")
    report = provision(Vault(root))
    assert report["index"]["docs"] == 54 and report["prefix"]["chunks_written"] == 54
    for query in ("descale espresso machine", "普洱茶怎么泡", "xylophonequux"):
        api = retrieve(Vault(root), query, top=3).to_dict()
        cli = run_cli_json("retrieve", "--vault", root, query, "--top", "3", "--no-rerank")
        assert cli.pop("pipeline") == {"text": "bm25", "source": "default"}  # what the command chose, and why
        assert api == cli
        api_ex = retrieve(Vault(root), query, top=3, explain=True).to_dict()
        cli_ex = run_cli_json("retrieve", "--vault", root, query, "--top", "3", "--no-rerank", "--explain")
        cli_ex.pop("pipeline")
        api_ex["explain"].pop("timings_ms")
        cli_ex["explain"].pop("timings_ms")
        assert api_ex == cli_ex
    cli = run_cli_json("retrieve", "--vault", root, "espresso", "--top", "2", "--no-rerank")
    cli.pop("pipeline")
    assert json.loads(retrieve(Vault(root), "espresso", top=2).to_json()) == cli


def test_python_api_errors(tmp_path: Path) -> None:
    from vaulteval import NotProvisioned, UsageError
    from vaulteval.cli.sample import copy_sample

    root = copy_sample(tmp_path / "api")
    with pytest.raises(NotProvisioned) as exc:
        retrieve(Vault(root), "espresso")
    assert exc.value.exit_code == 10 and f"vaulteval provision --vault {root}" in str(exc.value)
    provision(Vault(root))
    for kwargs in ({"top": 0}, {"top": 1001}, {"bm25_top": 0}, {"top": True}):
        with pytest.raises(UsageError):
            retrieve(Vault(root), "espresso", **kwargs)
    with pytest.raises(UsageError):
        retrieve(Vault(root), "  ")
