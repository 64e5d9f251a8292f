"""queryset generate: one test per kind on constructed vaults, determinism, splits, the CLI and the llm kind.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_generate.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.errors import UsageError
from vaulteval.querysets.generate.core import generate_queryset
from vaulteval.querysets.generate.llm import LlmSettings
from vaulteval.querysets.generate.script import segments
from vaulteval.querysets.queryset import load_queryset
from vaulteval.querysets.scripts import script_of
from vaulteval.querysets.written.worksheet import QUESTION_RULES, TASK_INTRO
from vaulteval.vault.vault import BUNDLED_SAMPLE, Vault

from evalkit import make_vault, snapshot
from fake_llm_servers import EgressGuard, FakeServer, Reply

PAGES = {
    "coffee/Espresso grinder settings.md": "---\naliases: [Burr grinder dial, Grind size]\ntags: [coffee]\n---\n"
                                           "# Espresso grinder settings\n\nThe dial sits at 12 for the dark roast.\n\n"
                                           "## Retention and purging\n\nPurge two grams after changing the dial.\n",
    "coffee/Descaling routine.md": "---\ntags: [coffee]\n---\nCitric acid every month keeps the boiler clean.\n\n"
                                   "After descaling I always check the grind (see [[Espresso grinder settings]]) "
                                   "because the taste changes a lot with fresh water.\n",
    "garden/Monstera.md": "# Monstera\n\nBought in 2022 with three leaves near the window.\n\n## Repotting in spring\n\n"
                          "Use chunky bark mix and a pot two centimetres wider.\n",
    "travel/京都の紅葉.md": "# 京都の紅葉\n\n東福寺の通天橋は十一月の下旬が一番きれい。JR奈良線で行く。\n",
    "travel/서울 카페.md": "# 서울 카페\n\n성수동 카페 거리는 주말에 붐빈다. 오전 10시 전에 가면 조용하다.\n",
    "travel/成都美食.md": "# 成都美食\n\n火锅要点微辣，兔头在双流买。Metro 2号线到春熙路。\n",
}


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(make_vault(tmp_path / "v", PAGES))


def _generate(vault: Vault, tmp_path: Path, kinds: list[str], n: int = 40, seed: int = 0, **kw) -> list[dict]:
    out = tmp_path / f"q-{'-'.join(kinds)}-{seed}.yaml"
    generate_queryset(vault, out, kinds=kinds, n=n, seed=seed, **kw)
    load_queryset(out, vault)  # every generated set is a valid query set
    return yaml.safe_load(out.read_text(encoding="utf-8"))["queries"]


def test_title_kind_gives_exact_partial_and_typo_variants(vault: Vault, tmp_path: Path) -> None:
    qs = _generate(vault, tmp_path, ["title"])
    grinder = [q for q in qs if q["relevant"] == {"wiki/coffee/Espresso grinder settings.md": 2}]
    variants = {q["variant"]: q["query"] for q in grinder}
    assert variants["exact"] == "Espresso grinder settings"
    assert set(variants["partial"].split()) < {"Espresso", "grinder", "settings"}
    assert variants["typo"] != variants["exact"] and len(variants["typo"]) in (24, 25, 26)
    assert grinder[0]["source"] == {"page": "wiki/coffee/Espresso grinder settings.md", "line": 5}
    assert all(q["kind"] == "title" and q["split"] in ("tune", "test") for q in qs)


def test_alias_kind_uses_frontmatter_aliases(vault: Vault, tmp_path: Path) -> None:
    qs = _generate(vault, tmp_path, ["alias"])
    exact = {q["query"] for q in qs if q["variant"] == "exact"}
    assert exact == {"Burr grinder dial", "Grind size"}
    assert all(q["relevant"] == {"wiki/coffee/Espresso grinder settings.md": 2} for q in qs)
    assert all(q["source"]["line"] == 2 for q in qs)


def test_heading_kind_resolves_to_its_page(vault: Vault, tmp_path: Path) -> None:
    qs = {q["query"]: q for q in _generate(vault, tmp_path, ["heading"])}
    assert qs["Repotting in spring"]["relevant"] == {"wiki/garden/Monstera.md": 2}
    assert qs["Repotting in spring"]["source"] == {"page": "wiki/garden/Monstera.md", "line": 5}
    assert "Espresso grinder settings" not in qs  # the H1 is the title, not a heading query


def test_backlink_kind_removes_the_link_and_judges_the_target(vault: Vault, tmp_path: Path) -> None:
    (q,) = _generate(vault, tmp_path, ["backlink"])
    assert q["query"] == "After descaling I always check the grind because the taste changes a lot with fresh water."
    assert q["relevant"] == {"wiki/coffee/Espresso grinder settings.md": 2}
    assert q["source"] == {"page": "wiki/coffee/Descaling routine.md", "line": 6}  # the distractor


def test_no_title_words_kind_drops_every_title_and_alias_word(tmp_path: Path) -> None:
    basil = "# Basil\n\nBasil is a herb that wilts in cold draughts.\n"
    vault = Vault(make_vault(tmp_path / "v", {**PAGES, "garden/Basil.md": basil}))
    qs = _generate(vault, tmp_path, ["no-title-words"])
    assert qs
    for q in qs:
        (target,) = q["relevant"]
        title = Path(target).stem.casefold().split()
        assert not set(q["query"].casefold().split()) & set(title), q
    texts = {q["query"] for q in qs}
    assert "After descaling I always check because the taste changes a lot with fresh water." not in texts
    # a sentence is mended around the words it lost ("Basil is a herb" asks what), or left out when they leave a
    # hole ("After descaling I always check the because ...": "grind" is an alias word)
    assert "What is a herb that wilts in cold draughts?" in texts
    assert not [t for t in texts if t.startswith(("After descaling", "The sits"))]

    assert any(q["variant"] == "from-heading" and q["query"] == "Repotting in spring" for q in qs) is False


def test_script_kind_gives_cjk_word_segments_and_mixed_queries(vault: Vault, tmp_path: Path) -> None:
    qs = _generate(vault, tmp_path, ["script"])
    segs = [q for q in qs if q["variant"].startswith("segment-")]
    mixed = [q for q in qs if q["variant"].startswith("mixed-")]
    assert segs and mixed
    for q in segs:
        page = q["source"]["page"]
        text = (vault.root / page).read_text(encoding="utf-8")
        assert q["query"] in segments(text)  # a whole segment of the page, never a cut inside one
        assert q["relevant"][page] == 2
    assert any(q["query"].isascii() is False and any(c.isascii() and c.isalpha() for c in q["query"]) for q in mixed)
    assert {q["variant"].split("-", 1)[1] for q in qs} <= {"Han", "Kana", "Hangul"}


def test_negative_kind_is_assumed_and_flagged_for_review(vault: Vault, tmp_path: Path) -> None:
    qs = _generate(vault, tmp_path, ["negative"], n=10)
    assert len(qs) == 10
    assert all(q["relevant"] == {} and q["status"] == "assumed-negative" for q in qs)
    assert all(q["source"]["list"] == "negatives" for q in qs)


def test_llm_kind_asks_the_local_generate_model(vault: Vault, tmp_path: Path, ollama_server) -> None:
    qs = _generate(vault, tmp_path, ["llm"], n=3, llm=LlmSettings(model="llama3.2", host=ollama_server.url))
    assert len(qs) == 3 and all(q["kind"] == "llm" and q["query"].startswith("What does the note say") for q in qs)
    calls = ollama_server.calls("/api/generate")
    assert len(calls) == 3 and all(c.model == "llama3.2" for c in calls)
    for q in qs:
        assert q["relevant"] == {q["source"]["page"]: 2}
        assert 0 <= q["overlap"] <= 1 and q["overlap_band"] in ("low", "mid", "high")


def test_llm_kind_takes_two_questions_per_note_and_names_the_words_to_avoid(tmp_path: Path) -> None:
    two = Vault(make_vault(tmp_path / "two", {k: PAGES[k] for k in list(PAGES)[:2]}))
    replies = [Reply(200, {"model": "llama3.2", "done": True, "response": text}) for text in (
        "1. How often should I clean the boiler?\n2. \"Why does the taste change?\"\n3. A third, not asked for?",
        "Question: What number do I set for dark beans?\n\n- How much coffee to throw away after adjusting?")]
    with FakeServer(replies) as srv:
        qs = _generate(two, tmp_path, ["llm"], n=4, llm=LlmSettings(host=srv.url))
        prompts = [r.body["prompt"] for r in srv.requests if r.path == "/api/generate"]
    assert len(prompts) == 2  # two notes, two questions from each: numbering, quotes and labels removed
    assert sorted(q["query"] for q in qs) == sorted([
        "How often should I clean the boiler?", "Why does the taste change?",
        "What number do I set for dark beans?", "How much coffee to throw away after adjusting?"])
    assert all(p.startswith(TASK_INTRO + "\nRules:\n" + QUESTION_RULES) for p in prompts)  # the worksheet's task
    assert all("in language en. Reply with two short questions, each on its own line," in p for p in prompts)
    (grinder,) = [p for p in prompts if "dial sits at 12" in p]
    avoid = grinder.split("do not use these words from the note: ", 1)[1].split(". Reply", 1)[0].split(", ")
    assert {"espresso", "grinder", "settings"} <= set(avoid)
    assert grinder.rstrip().endswith("Purge two grams after changing the dial.")  # the note's prose comes last


@pytest.mark.parametrize(("reply", "questions"), [
    ("<think>The user wants questions about grinders. Let me think.</think>\n\nHow fine should coffee be ground?\n"
     "Why does espresso taste sour?", ["How fine should coffee be ground?", "Why does espresso taste sour?"]),
    ("<think>never closed", []),
    ("Here are two short questions:\n\n1. **How often should I descale it?**\n2. **What makes crema thin?**",
     ["How often should I descale it?", "What makes crema thin?"]),
    ("Sure! Here are two questions a person might type.\n\n- \"best grind for dark roast?\"\n- how much to discard?",
     ["best grind for dark roast?", "how much to discard?"]),
    ("**Question 1:** ¿Cómo recupero una nota borrada?\n(I avoided the words you listed.)",
     ["¿Cómo recupero una nota borrada?"]),
    ("「ノートを元に戻す方法は？」", ["ノートを元に戻す方法は？"]),
    ("recover a deleted note", ["recover a deleted note"]),
])
def test_llm_replies_as_real_models_write_them_give_only_the_questions(reply: str, questions: list[str]) -> None:
    from vaulteval.querysets.generate.llm import clean_questions

    assert clean_questions(reply) == questions


def test_llm_malformed_answers_are_rejected_and_counted(vault: Vault, tmp_path: Path) -> None:
    reply = Reply(200, {"model": "llama3.2", "done": True, "response": "See [[Monstera]] for details"})
    with FakeServer([reply]) as srv:
        summary = generate_queryset(vault, tmp_path / "q.yaml", kinds=["llm"], n=2, llm=LlmSettings(host=srv.url))
    assert summary["queries"] == 0 and summary["rejected"]["llm"]["wikilink"] >= 2


def test_llm_kind_refuses_a_remote_host_without_allow_egress(vault: Vault, tmp_path: Path, capsys) -> None:
    with pytest.raises(UsageError, match="--allow-egress"):
        _generate(vault, tmp_path, ["llm"], n=2, llm=LlmSettings(host="http://10.1.2.3:11434"))
    with EgressGuard() as attempts:
        rc = main(["queryset", "generate", "--vault", str(vault.root), "--out", str(tmp_path / "r.yaml"),
                   "--kinds", "llm", "--n", "2", "--llm-host", "http://10.1.2.3:11434"])
    assert rc == 2 and attempts == []
    assert "--allow-egress" in capsys.readouterr().err
    assert not (tmp_path / "r.yaml").exists()


def test_generation_is_deterministic_and_the_seed_matters(tmp_path: Path) -> None:
    sample = Vault(BUNDLED_SAMPLE)
    a, b, c = (tmp_path / d / "q.yaml" for d in ("a", "b", "c"))
    generate_queryset(sample, a, n=80, seed=7)
    generate_queryset(sample, b, n=80, seed=7)
    generate_queryset(sample, c, n=80, seed=8)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_sampling_is_deduplicated_stratified_and_split(tmp_path: Path) -> None:
    sample = Vault(BUNDLED_SAMPLE)
    out = tmp_path / "q.yaml"
    summary = generate_queryset(sample, out, n=120, seed=1)
    qs = yaml.safe_load(out.read_text(encoding="utf-8"))["queries"]
    keys = [" ".join(q["query"].casefold().split()) for q in qs]
    assert len(keys) == len(set(keys)) == summary["queries"]
    folders = {q["source"]["page"].split("/")[1] for q in qs if q["kind"] == "title"}
    assert len(folders) >= 8  # strata take turns: no folder crowds out the others
    splits = [q["split"] for q in qs]
    assert 0.15 < splits.count("tune") / len(splits) < 0.45
    judged = [q for q in qs if q["relevant"]]
    assert all(set(q["judged"]) == set(q["relevant"]) for q in judged)
    assert all(info["sha256"].startswith("sha256:") for q in judged for info in q["judged"].values())


def test_generate_never_writes_the_vault(vault: Vault, tmp_path: Path) -> None:
    before = snapshot(vault.root)
    with pytest.raises(UsageError, match="inside the vault"):
        generate_queryset(vault, vault.root / "q.yaml", n=5)
    generate_queryset(vault, tmp_path / "q.yaml", n=5)
    assert snapshot(vault.root) == before


def test_cli_generate_reports_progress_on_stderr(vault: Vault, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cli.yaml"
    rc = main(["queryset", "generate", "--vault", str(vault.root), "--out", str(out), "--n", "12",
               "--kinds", "title,heading", "--seed", "3"])
    captured = capsys.readouterr()
    assert rc == 0 and out.is_file()
    assert "reading pages: 6/6" in captured.err
    assert '"queries": 12' in captured.out
    assert main(["queryset", "generate", "--vault", str(vault.root), "--out", str(out), "--kinds", "bogus"]) == 2
    assert "unknown query kind 'bogus'" in capsys.readouterr().err


@pytest.mark.parametrize("text, script", [("git commit", "Latin"), ("提交文件", "Han"), ("ファイル", "Kana"),
                                          ("파일 열기", "Hangul"), ("git 提交", "Han"), ("файл", "Cyrillic"),
                                          ("123 !", "None")])
def test_script_of_names_the_writing_system(text: str, script: str) -> None:
    assert script_of(text) == script


def test_llm_kind_on_a_vault_too_small_for_three_failures_still_says_the_model_failed(tmp_path: Path) -> None:
    one = Vault(make_vault(tmp_path / "one", {k: PAGES[k] for k in list(PAGES)[:1]}))
    with FakeServer([Reply(500, {"error": "model 'llama3.2' not found"})]) as srv:
        with pytest.raises(UsageError, match="failed on every note asked .*ollama pull llama3.2"):
            _generate(one, tmp_path, ["llm"], n=2, llm=LlmSettings(host=srv.url))
        assert len([r for r in srv.requests if r.path == "/api/generate"]) == 1


def test_page_facts_read_aliases_and_tags_under_any_key_case() -> None:
    from vaulteval.querysets.generate.pages import page_facts

    facts = page_facts("wiki/Sleep.md", b"---\nAliases: [Slumber, Kip]\nTags: rest night-time\n---\nBody.\n")
    assert facts.aliases == ["Slumber", "Kip"]
    assert facts.tags == ["rest", "night-time"]


def test_relative_links_give_backlink_and_link_text_queries() -> None:
    from vaulteval.querysets.generate.kinds import Context
    from vaulteval.querysets.generate.pages import page_facts
    from vaulteval.querysets.generate.sentence_kinds import backlink_candidates, link_text_candidates

    notes = {
        "content/Concepts/adenosine.md": "# Adenosine\n\nA molecule.\n",
        "content/Guides/Naps.md": ("# Naps\n\nA short nap clears some of the tiredness, see [[../Concepts/adenosine]].\n\n"
                                   "Coffee blocks [[../Concepts/adenosine.md|the build-up of sleep pressure]].\n"),
    }
    facts = [page_facts(rel, text.encode()) for rel, text in notes.items()]
    ctx = Context(facts, notes_rel="content")
    backlinks = {c.text: c.relevant for c in backlink_candidates(ctx)}
    assert backlinks == {"A short nap clears some of the tiredness": (("content/Concepts/adenosine.md", 2),)}
    (shown,) = link_text_candidates(ctx)
    assert (shown.text, shown.relevant) == ("the build-up of sleep pressure", (("content/Concepts/adenosine.md", 2),))

