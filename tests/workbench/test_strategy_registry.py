"""The stage registry drives the strategy grammar, its text form, the docs, `eval run --help` and tune's grid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vaulteval.pipeline.stages import registry
from vaulteval.workbench.strategy import STRATEGY_PARAMS, Strategy, StrategyError
from vaulteval.workbench.strategydoc import END, generated_part, key_tables, strategy_help

REPO = Path(__file__).resolve().parents[2]


def _sample_value(param):
    """A value of ``param`` other than its default, inside its range."""
    if param.choices:
        return next(c for c in param.choices if c != param.default)
    if param.type is str:
        return "x"
    if param.high is not None:
        value = param.high if param.high != param.default else param.low
        return value if not param.high_open else (param.low + param.high) / 2
    return param.type((param.low or 0) + 2)


def test_the_docs_key_tables_are_the_registrys() -> None:
    text = (REPO / "docs" / "strategies.md").read_text(encoding="utf-8")
    assert END in text and generated_part(text) == key_tables().strip(), \
        "docs/strategies.md is out of date; run: python -m vaulteval.docs"
    for cls in registry.stages():
        for param in cls.schema().values():
            assert f"| `{param.name}` |" in text


def test_eval_run_help_names_every_stage_and_key(capsys) -> None:
    from vaulteval.cli.main import main

    with pytest.raises(SystemExit):
        main(["eval", "run", "--help"])
    out = capsys.readouterr().out
    assert strategy_help().splitlines()[0] in out
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", out))
    for cls in registry.stages():
        assert cls.name in words or cls.head() in words
        assert {p.name for p in cls.schema().values()} <= words
    assert {p.name for p in STRATEGY_PARAMS} <= words


def test_retrieve_help_names_every_first_stage(capsys) -> None:
    from vaulteval.cli.main import main

    with pytest.raises(SystemExit):
        main(["retrieve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for cls in registry.first_stages():
        assert registry.written(cls) in out
    assert set(registry.FIRST_STAGE_MODULES) == {registry.written(c) for c in registry.first_stages()}
    assert set(registry.RERANKER_MODULES) == {registry.written(c) for c in registry.rerankers()}


@pytest.mark.parametrize("cls", registry.stages(), ids=lambda c: c.name)
def test_every_key_of_every_stage_round_trips(cls) -> None:
    for param in cls.schema().values():
        if param.name in ("host", "model"):
            continue  # checked when the first query runs, not here
        kind = cls.over if cls.role == "rerank" else cls.head()
        first = registry.stage(kind)() if cls.role == "rerank" else None
        stage = cls(**{param.name: _sample_value(param)})
        s = Strategy(first=first, reranker=stage) if first is not None else Strategy(first=stage)
        again = Strategy.parse(s.text())
        assert again == s and again.name == s.name and Strategy.from_dict(s.to_dict()) == s
        assert s.value(param.name) == stage[param.name] if cls.role == "first" else True


@pytest.mark.parametrize("param", STRATEGY_PARAMS, ids=lambda p: p.name)
def test_every_strategy_key_round_trips(param) -> None:
    values = {"name": "mine", "analyzer": "english", "stemmer": "porter", "stopwords": "lucene", "target": 800, "overlap": 100,
              "hard_max": 5000}
    text = f"bm25:{param.name}={values.get(param.name, _sample_value(param))}"
    if param.name in ("stemmer", "stopwords"):
        text += ",analyzer=english"
    if param.name in ("fold", "compounds"):  # options of a language analyzer
        text = f"bm25:{param.name}={'yes' if param.name == 'fold' else 'no'},analyzer=german"
    s = Strategy.parse(text)
    assert s.value(param.name) != param.default
    assert Strategy.parse(s.text()) == s and Strategy.from_dict(s.to_dict()) == s


def test_a_stoplist_of_another_name_is_refused() -> None:
    with pytest.raises(StrategyError, match="stopwords"):
        Strategy.parse("bm25:analyzer=english,stopwords=seed")  # not a name of this vaulteval's lists


def test_a_record_of_another_format_is_refused_in_one_line() -> None:
    flat = {"name": "bm25", "analyzer": "english", "k1": 1.5, "b": 0.75, "first": "bm25", "rerank": None}
    with pytest.raises(StrategyError) as info:
        Strategy.from_dict(flat)  # a flat record without "format"
    message = str(info.value)
    assert "format None" in message and "eval run" in message and "\n" not in message


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(StrategyError, match="format 3"):
        Strategy.from_dict({**Strategy.parse("bm25").to_dict(), "format": 3})


def test_stages_say_what_they_need() -> None:
    needs = {cls.name: cls.needs for cls in registry.first_stages()}
    assert "dense" in needs["dense"] and "dense" in needs["hybrid"]
    assert "dense" not in needs["bm25"] and all(n <= {"bm25", "dense"} for n in needs.values())
    assert registry.parse_first_stage("bm25:w_title=2").plain is False and registry.parse_first_stage("bm25").plain


def test_reading_a_first_stage_imports_no_numpy_typing_or_dataclasses() -> None:
    """``retrieve --strategy bm25`` (or a tuned ``bm25``) keeps the lean start of a plain query."""
    import json
    import subprocess
    import sys

    code = ("import json, sys; from vaulteval.pipeline.stages.registry import parse_first_stage; "
            "assert parse_first_stage('bm25').plain and parse_first_stage('hybrid:cc,alpha=0.3'); "
            "print(json.dumps(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = set(json.loads(proc.stdout))
    assert "vaulteval.pipeline.stages.prf" in loaded  # every stage module was read
    assert not {"numpy", "dataclasses"} & loaded


@pytest.mark.parametrize("text", ["hybrid:cc,rerank=st", "hybrid:rrf,analyzer=english,rerank=st",
                                  "dense:rerank=ollama,model=nomic-embed-text-v2-moe,bm25_top=20"])
def test_rerank_key_on_dense_and_hybrid_is_the_strategys_reranker(text: str) -> None:
    s = Strategy.parse(text)  # the form verdict's tune.json and .vaulteval.json hold
    assert s.reranker is not None and s.reranker.name == "rerank" and s.first.name in ("dense", "hybrid")
    assert s.text() == text and Strategy.parse(s.text()) == s and Strategy.from_dict(s.to_dict()) == s


@pytest.mark.parametrize("text", ["bm25:rerank=st", "hybrid:cc,rerank=nope", "hybrid:cc,model=m"])
def test_a_misplaced_rerank_key_is_a_strategy_error(text: str) -> None:
    with pytest.raises(StrategyError):
        Strategy.parse(text)
