"""The analyzer registry (``vaulteval.index.analysis``): one name grammar, one lookup, the protocol's parts."""

from __future__ import annotations

import pytest

from vaulteval.errors import UsageError
from vaulteval.index import analysis
from vaulteval.index.analysis import Analyzer, compose, head_of, lookup
from vaulteval.index.tokenize import ANALYZER_VERSION, tokenize_default, tokenize_english
from vaulteval.pipeline.indexsettings import IndexSettings

WITH_OPTIONS = ("english:stemmer=porter", "english:stopwords=lucene", "english:stemmer=none,stopwords=none",
                "german:compounds=no", "spanish:fold=no", "russian:stopwords=none", "french:fold=no,stopwords=none",
                "english:stopwords=none", "german:fold=yes")


@pytest.mark.parametrize("name", analysis.NAMES)
def test_every_registered_head_is_an_analyzer_named_as_looked_up(name: str) -> None:
    analyzer = lookup(name)
    assert isinstance(analyzer, Analyzer) and analyzer.name == name and lookup(name) is analyzer
    assert analyzer.version == ANALYZER_VERSION
    assert analyzer.identity()["analyzer"] == name
    assert all(isinstance(t, str) for t in analyzer("Tresor teilen, share the vault"))


def test_the_seed_and_english_analyzers_are_tokenizes_functions_themselves() -> None:
    assert lookup("default").terms is tokenize_default and lookup("english").terms is tokenize_english
    assert lookup("default").languages == () and lookup("english").languages == ("en",)
    assert lookup("german").languages == ("de",) and "ko" in lookup("auto").languages


@pytest.mark.parametrize("name, error", [
    ("klingon", "unknown analyzer 'klingon'"), ("default:stemmer=porter", "unknown analyzer"),
    ("auto:fold=no", "unknown analyzer"), ("english:stemmer=snowball", "normal form"),
    ("english:fold=no", "unknown option"), ("german:compounds=yes", "normal form"),
    ("spanish:compounds=yes", "german, dutch and swedish"), ("", "unknown analyzer"), (3, "unknown analyzer"),
])
def test_a_bad_name_is_one_usage_error(name: object, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        lookup(name)


@pytest.mark.parametrize("name", WITH_OPTIONS)
def test_a_names_options_are_index_settings_that_compose_back_to_it(name: str) -> None:
    settings = lookup(name).settings()
    assert settings and compose(head_of(name), settings) == name
    assert IndexSettings.from_settings({"analyzer": name}).index_analyzer == name
    assert IndexSettings(analyzer=head_of(name), **settings).index_analyzer == name


def test_only_auto_has_a_pre_analysis_hook_and_records_each_chunks_language() -> None:
    assert [n for n in analysis.NAMES if lookup(n).pre_analyze() is not None] == ["auto"]
    assert [n for n in analysis.NAMES if lookup(n).per_chunk] == ["auto"]
    pre = lookup("auto").pre_analyze()
    try:
        assert all(callable(getattr(pre, part)) for part in ("offer", "offer_record", "terms", "close"))
    finally:
        pre.close()


def test_identity_names_the_libraries_an_index_depends_on() -> None:
    assert lookup("default").identity() == {"analyzer": "default", "analyzer_version": ANALYZER_VERSION,
                                            "analyzer_libraries": None}
    assert set(lookup("english:stemmer=porter").identity()["analyzer_libraries"]) == {"PyStemmer"}
    assert "kiwipiepy" in lookup("auto").identity({"ko"})["analyzer_libraries"]
    assert "kiwipiepy" not in lookup("auto").identity({"de"})["analyzer_libraries"]


def test_a_one_language_analyzer_gives_every_chunk_its_code() -> None:
    items = [("a.md", "Die Notizen werden geteilt"), ("b.md", "Tresor")]
    assert [code for code, _ in lookup("german").documents(items)] == ["de", "de"]
    assert [code for code, _ in lookup("default").documents(items)] == ["", ""]
    assert lookup("german").documents(items)[0][1] == lookup("german")(items[0][1])
