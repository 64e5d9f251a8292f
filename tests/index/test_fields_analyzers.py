"""Field-weighted BM25 (title, aliases, headings, code) and the english analyzer options."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_fixtures import run_json
from vaulteval import Vault
from vaulteval.errors import UsageError
from vaulteval.index.analyzers import LUCENE_STOPWORDS, english_analyzer_name, parse_analyzer_name
from vaulteval.index.fieldbuild import code_text, headings_text
from vaulteval.index.fields import fields_path, open_fields
from vaulteval.index.tokenize import get_analyzer
from vaulteval.pipeline.retrieve import Retriever


def _pages(root: Path, query: str, strategy: str) -> list[str]:
    out = run_json("retrieve", "--vault", root, query, "--no-rerank", "--strategy", strategy, "--top", "3")
    return [c["page_path"] for c in out["candidates"]]


@pytest.mark.parametrize("query, page", [
    ("Espresso machine", "wiki/coffee/Espresso machine.md"),  # the title
    ("Levain", "wiki/baking/Sourdough starter.md"),  # an alias
    ("Tokyo kissaten", "wiki/travel/japan/東京の喫茶店.md"),  # an English alias of a Japanese title
])
def test_a_known_item_query_puts_that_note_first_only_with_field_weights(
        provisioned_sample: Path, query: str, page: str) -> None:
    assert _pages(provisioned_sample, query, "bm25")[0] != page
    assert _pages(provisioned_sample, query, "bm25:w_title=2,w_aliases=2")[0] == page


def test_default_weights_are_exactly_seed_bm25(provisioned_sample: Path) -> None:
    plain = run_json("retrieve", "--vault", provisioned_sample, "espresso", "--no-rerank", "--top", "10")
    same = run_json("retrieve", "--vault", provisioned_sample, "espresso", "--no-rerank", "--top", "10",
                    "--strategy", "bm25:w_body=1,w_title=0")
    assert same == plain and plain["strategy"] == "bm25-only"


def test_the_field_file_belongs_to_its_index_build(provisioned_sample: Path) -> None:
    vault = Vault(provisioned_sample)
    index = Retriever(vault).index()
    fields = open_fields(vault.meta_dir, index)
    assert fields is not None and set(fields.tables) == {"title", "aliases", "headings", "code"}
    assert fields_path(vault.meta_dir).is_file()
    # A field file from another build (different identity) is ignored, never mixed in.
    other = index.with_params(index.k1, index.b)
    other.header = dict(index.header, built_at="1999-01-01T00:00:00Z")
    assert open_fields(vault.meta_dir, other) is None


def test_code_and_heading_extraction() -> None:
    text = "# Setup\nprose\n```bash\nrestic backup /srv\n# not a heading\n```\n## Restore\n~~~\nrestic restore\n"
    assert code_text(text).strip() == "restic backup /srv\n# not a heading\nrestic restore"
    assert headings_text(text).split("\n") == ["Setup", "Restore"]


@pytest.mark.parametrize("stemmer, stopwords, name", [
    ("snowball", "seed", "english"), ("porter", "seed", "english:stemmer=porter"),
    ("snowball", "lucene", "english:stopwords=lucene"), ("none", "none", "english:stemmer=none,stopwords=none"),
])
def test_analyzer_names_round_trip(stemmer: str, stopwords: str, name: str) -> None:
    assert english_analyzer_name(stemmer, stopwords) == name
    if name != "english":
        assert parse_analyzer_name(name) == (stemmer, stopwords)
        assert get_analyzer(name)("the generously descaled machines")


def test_analyzer_options_change_terms_as_documented() -> None:
    text = "It is not the generously descaled machines"
    assert get_analyzer("english:stemmer=porter")(text) == ["not", "gener", "descal", "machin"]
    assert get_analyzer("english")(text) == ["not", "generous", "descal", "machin"]
    assert "not" not in get_analyzer("english:stopwords=lucene")(text) and "not" in LUCENE_STOPWORDS
    assert get_analyzer("english:stemmer=none,stopwords=none")(text)[:3] == ["it", "is", "not"]
    for bad in ("english:stemmer=lovins", "english:stopwords=seed", "english:colour=red"):
        with pytest.raises(UsageError):
            get_analyzer(bad)
