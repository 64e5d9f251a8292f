"""queryset generate: malformed candidates refused and counted, overlap recorded and sliced, script share capped.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_generate_quality.py -q``
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vaulteval.errors import UsageError
from vaulteval.querysets.bands import judges_semantic, semantic_note
from vaulteval.querysets.generate.core import generate_queryset
from vaulteval.querysets.generate.lexical import Lexicon, band
from vaulteval.querysets.generate.pages import page_facts
from vaulteval.querysets.queryset import load_queryset
from vaulteval.vault.vault import Vault
from vaulteval.workbench.slices import query_slices

from evalkit import make_vault

MESSY = {
    "plugins/Folder Color.md": "---\naliases: [Hue, Base, true, {Opener: New Tab by Default}, How to/Color folders]\n---\n"
                               "# Folder Color\n\nPaints each folder in the file explorer with its own hue.\n\n"
                               "## Palette choices\n\nPastel shades keep the sidebar calm at night.\n",
    "people/Nicole.md": "# Nicole\n\nWatch the [Obsidian for Beginners](https://www.youtube.com/watch?v=E6ySG7xYgjY) "
                        "guide that uses [[Folder Color]] methodology.\n\nShe paints every folder with "
                        "[[Folder Color]] so the sidebar reads like a map of her projects.\n\n"
                        "[[Folder Color]] is the plugin that gives her sidebar its pastel map.\n\n"
                        "Check the backlinks for [[Folder Color]]\n",
    "notes/Garden.md": "# Garden\n\nTomatoes need a stake once the first truss sets fruit.\n\n"
                       "## Watering\n\nWater the beds early so leaves dry before the evening chill.\n",
}


@pytest.fixture
def messy(tmp_path: Path) -> Vault:
    return Vault(make_vault(tmp_path / "v", MESSY))


def _queries(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["queries"]


def test_no_markup_fragments_reach_the_set_and_each_refusal_is_counted(messy: Vault, tmp_path: Path) -> None:
    out = tmp_path / "q.yaml"
    summary = generate_queryset(messy, out, kinds=["title", "alias", "heading", "backlink", "no-title-words"], n=60)
    texts = [q["query"] for q in _queries(out)]
    assert not [t for t in texts if any(m in t for m in ("[[", "](", "http", "www.", "{", "v="))]
    # the link was a part of the sentence: no query is left with its hole; one it was the subject of is asked about
    assert not [t for t in texts if t.startswith("She paints every folder")]
    assert "What is the plugin that gives her sidebar its pastel map?" in texts
    assert summary["rejected"]["alias"]["path"] >= 1  # How to/Color folders
    assert "backlink" in summary["rejected"]  # "Check the backlinks for" has no content left
    header = yaml.safe_load(out.read_text(encoding="utf-8"))["generator"]
    assert header["rejected"] == summary["rejected"]
    assert "Opener" not in " ".join(texts)  # a mapping in aliases: is no name


def test_no_typo_variants_of_names_shorter_than_five_letters(messy: Vault, tmp_path: Path) -> None:
    out = tmp_path / "q.yaml"
    generate_queryset(messy, out, kinds=["alias", "title"], n=40)
    typos = [q["query"] for q in _queries(out) if q["variant"] == "typo"]
    assert typos and all(len(t) >= 5 for t in typos)
    exact = {q["query"] for q in _queries(out) if q["variant"] == "exact"}
    assert {"Hue", "Base"} <= exact  # the names themselves stay
    assert "True" not in exact  # YAML's true is no name


def test_every_query_records_overlap_band_and_bm25_rank(messy: Vault, tmp_path: Path) -> None:
    out = tmp_path / "q.yaml"
    summary = generate_queryset(messy, out, n=40)
    qs = load_queryset(out, messy)  # the new fields load and validate
    raw = _queries(out)
    for q in raw:
        if q["relevant"]:
            assert q["overlap_band"] == band(q["overlap"])
            assert q["bm25_rank"] is None or q["bm25_rank"] >= 1
        else:
            assert "overlap" not in q
    titles = [q for q in raw if q["kind"] == "title" and q["variant"] == "exact"]
    assert titles and all(q["overlap"] == 1.0 for q in titles)
    assert next(q for q in titles if q["query"] == "Garden")["bm25_rank"] == 1
    assert sum(summary["overlap_bands"].values()) == sum(1 for q in raw if q["relevant"])
    slices = query_slices(qs)
    assert set(slices[slices.slice_by == "overlap"].slice) <= {"low", "mid", "high"}
    assert judges_semantic(qs) == summary["judges_semantic_strategies"]


def test_max_overlap_keeps_only_queries_that_share_few_words(messy: Vault, tmp_path: Path) -> None:
    out = tmp_path / "q.yaml"
    summary = generate_queryset(messy, out, n=40, max_overlap=0.5)
    raw = [q for q in _queries(out) if q["relevant"]]
    assert raw and all(q["overlap"] <= 0.5 for q in raw)
    assert summary["rejected"]["title"]["overlap"] >= 1
    with pytest.raises(UsageError, match="--max-overlap"):
        generate_queryset(messy, tmp_path / "x.yaml", n=5, max_overlap=1.5)


def test_a_set_of_mostly_high_overlap_queries_is_marked(messy: Vault, tmp_path: Path) -> None:
    out = tmp_path / "q.yaml"
    summary = generate_queryset(messy, out, kinds=["title", "heading"], n=20)
    qs = load_queryset(out, messy)
    assert summary["judges_semantic_strategies"] is False and summary["high_overlap_share"] > 0.5
    assert "CANNOT JUDGE SEMANTIC STRATEGIES" in semantic_note(qs)
    hand = load_queryset(Path(__file__).resolve().parents[2] / "querysets" / "sample-vault.yaml")
    assert semantic_note(hand) is None  # no bands recorded: nothing to say


def test_lexicon_overlap_and_rank() -> None:
    facts = [page_facts("wiki/a.md", b"Descaling the espresso machine with citric acid"),
             page_facts("wiki/b.md", b"Sourdough starter feeding schedule"),
             page_facts("wiki/c.md", b"Espresso grinder dial for dark roast")]
    lex = Lexicon(facts)
    assert lex.overlap("espresso citric starter", "wiki/a.md") == pytest.approx(2 / 3)
    assert lex.overlap("the", "wiki/a.md") == 0.0  # stopwords only: no terms
    assert lex.bm25_rank("citric acid espresso", "wiki/a.md") == 1
    assert lex.bm25_rank("espresso grinder", "wiki/a.md") == 2
    assert lex.bm25_rank("sourdough", "wiki/a.md") is None
    assert "citric" in lex.rare_terms("wiki/a.md", 3)


def test_script_queries_are_capped_unless_asked_for(tmp_path: Path) -> None:
    words = [chr(0x4E00 + 7 * i) + chr(0x4E01 + 7 * i) for i in range(30)]  # a different word on every page
    pages = {f"cn/笔记{i}.md": f"# 笔记{i}\n\n今天看到{w}很好。\n" for i, w in enumerate(words)}
    pages.update({f"en/Note {i}.md": f"# Note {i}\n\nPlain words about topic number {i} here.\n" for i in range(30)})
    vault = Vault(make_vault(tmp_path / "v", pages))
    default = generate_queryset(vault, tmp_path / "d.yaml", n=60)
    assert default["by_kind"].get("script", 0) <= 3  # 5% of 60
    asked = generate_queryset(vault, tmp_path / "a.yaml", kinds=["title", "script"], n=60)
    assert asked["by_kind"]["script"] > 3


def test_summary_kind_drops_the_pages_distinctive_words(messy: Vault, tmp_path: Path) -> None:
    out = tmp_path / "q.yaml"
    generate_queryset(messy, out, kinds=["summary"], n=20)
    raw = _queries(out)
    assert raw
    distinctive = {"wiki/plugins/Folder Color.md": {"folder", "color", "palette", "choices", "hue", "base"},
                   "wiki/notes/Garden.md": {"garden", "watering"}, "wiki/people/Nicole.md": {"nicole"}}
    for q in raw:
        words = set(q["query"].casefold().replace(".", "").split())
        (target,) = q["relevant"]
        assert not words & distinctive[target], q["query"]


def test_link_text_kind_is_another_authors_name_for_the_page(tmp_path: Path) -> None:
    vault = Vault(make_vault(tmp_path / "v", {
        "Sync.md": "---\naliases: [Cloud copy]\n---\n# Sync\n\nKeeps vaults alike on every device.\n\n## Version history\n\nOld states.\n",
        "Home.md": "# Home\n\nRead about [[Sync|keeping phone and laptop in step]] first.\n\n"
                   "Also [[Sync|sync]], [[Sync|Cloud copy]], [[Sync#Version history|version history]], "
                   "[[Sync|Open]] and [[Sync|older revisions of a page]].\n",
    }))
    out = tmp_path / "q.yaml"
    summary = generate_queryset(vault, out, kinds=["link-text"], n=20)
    raw = _queries(out)
    # the target's title, an alias, the linked heading and one-word texts are no new name for the page
    assert sorted(q["query"] for q in raw) == ["keeping phone and laptop in step", "older revisions of a page"]
    assert all(q["relevant"] == {"wiki/Sync.md": 2} and q["source"]["page"] == "wiki/Home.md" for q in raw)
    assert summary["rejected"]["link-text"]["no-content-word"] == 1  # "Open"


def test_eval_slices_by_overlap_band_and_its_report_says_what_the_set_cannot_judge(messy: Vault, tmp_path: Path) -> None:
    from vaulteval.workbench.evaluate import evaluate

    out = tmp_path / "q.yaml"
    generate_queryset(messy, out, kinds=["title", "heading"], n=20)
    ev = evaluate(messy, load_queryset(out, messy), ["bm25"], measures=["nDCG@10"], cache_dir=tmp_path / "cache")
    bands = ev.slices[ev.slices.slice_by == "overlap"]
    assert "high" in set(bands.slice)
    assert bands[bands.slice == "high"].n.iloc[0] == sum(1 for q in _queries(out) if q.get("overlap_band") == "high")
    assert any(n.startswith("CANNOT JUDGE SEMANTIC STRATEGIES") for n in ev.report.notes)
