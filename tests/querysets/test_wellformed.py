"""The generator's malformed-query filter, prose reading and word segments; cases are fragments the hub vault produced.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_wellformed.py -q``
"""

from __future__ import annotations

import pytest

from vaulteval.querysets.generate.prose import HOLE, prose, sentences
from vaulteval.querysets.generate.script import mixed, segments
from vaulteval.querysets.generate.wellformed import reject_reason, trim_edges

# Queries an earlier generator wrote on the community hub vault and the help vault, and why each is malformed.
HUB_FRAGMENTS = [
    ("[Obsidian for Beginners](https://www.", "url"),
    ("v=E6ySG7xYgjY) guide that uses methodology.", "url"),
    ("What are", "ragged-end"),
    ("Check the backlinks for [[🗂️", "wikilink"),
    ("{'LawList': 'Custom Lits Styles'}", "repr"),
    ("Cuando falla, e.", "ragged-end"),
    ("svg#icon]] at the bottom of the.", "wikilink"),
    ("com/SkepticMystic/breadcrumbs/discussions/175) on Github about.", "url"),
    ("%% MOCs: Don’t edit below %%", "comment"),
    ("Dabravin <ivaylo.dabravin@gmail.com>", "url"),
    ("[TTRPG Games Index | Nicole van der Hoeven](https://notes.", "url"),
    ("Available for: #placeholder/tool", "markdown"),
    ("'New Tab", "unbalanced"),
    ("The Publish core plugin is.", "ragged-end"),
    ("04 - Guides,", "ragged-end"),
    ("Buy me a", "ragged-end"),
    ("<b>Hello there</b> friends", "html"),
    ("Hello {{title}} world", "template"),
    ("aliases:", "repr"),
    ("and then the sync stops", "ragged-start"),
    ("name:: Entry", "markdown"),
]


@pytest.mark.parametrize("text, reason", HUB_FRAGMENTS)
def test_hub_fragments_are_rejected_with_their_reason(text: str, reason: str) -> None:
    assert reject_reason(text) == reason


@pytest.mark.parametrize("text", [
    "Sync your vault across devices", "What is a vault for?", "Personal OS", "PARA", "D&D", "Notepad++",
    "iOS/iPadOS/MacOS app that imports from the Share menu", "log in", "don't panic", "平滑光标", "JR奈良線",
    "Los archivos se sincronizan solos",
])
def test_what_people_type_passes(text: str) -> None:
    assert reject_reason(text) is None


def test_names_refuse_paths_but_sentences_keep_slashed_words() -> None:
    assert reject_reason("How to/Add custom styles", name=True) == "path"
    assert reject_reason("How to/Add custom styles") is None


def test_sentence_kinds_need_content_words() -> None:
    assert reject_reason("For more details, see it", min_content=3) == "no-content-word"
    assert reject_reason("Excluded files stay hidden from search", min_content=3) is None


def test_trim_edges_removes_what_a_removed_link_leaves_dangling() -> None:
    assert trim_edges("This option is only available for users with a.") == "This option is only available for users"
    assert trim_edges("and you will also need to delete it, and") == "you will also need to delete it"
    assert trim_edges("Cuando falla, e.") == "Cuando falla"
    assert trim_edges("Core plugins are listed in") == "Core plugins are listed"
    assert trim_edges("in") == "" and trim_edges("How to log in") == "How to log in"
    assert reject_reason(trim_edges("The Publish core plugin is.")) is None


def test_prose_keeps_link_text_and_drops_markup() -> None:
    line = ("- See [the guide](https://example.org/a?v=1) and [[Sync/Set up|set up sync]] %% todo %% "
            "<b>now</b> `code` #tag ![[img.png]] [[Other note#Part]]")
    assert prose(line) == "See the guide and set up sync now code Other note"  # code that is one name reads as it


def test_prose_marks_the_removed_link_and_sentences_split_on_real_ends() -> None:
    text = prose("Read www.example.com first. Then open [[Target]] in v1.2, or not!", keep="[[Target]]")
    parts = sentences(text)
    assert parts[0] == "Read first."
    assert HOLE in parts[1] and parts[1].endswith("or not!")


def test_segments_are_whole_words_never_random_cuts() -> None:
    assert segments("東福寺の通天橋は十一月の下旬が一番きれい。") == ["東福寺", "通天橋", "十一月", "下旬", "一番"]
    assert segments("火锅要点微辣，兔头在双流买。Metro 2号线到春熙路。") == ["火锅要点微辣", "兔头在双流买"]
    assert segments("성수동 카페 거리는") == ["성수동", "카페", "거리는"]
    assert segments("这是一个非常非常长的句子没有任何标点符号") == []  # a long run is a clause: no cut is made
    assert mixed("JR奈良線で行く") == ["JR奈良線"]
    assert mixed("Minote Sync 小米笔记同步插件") == ["Sync 小米笔记同步插件"]


@pytest.mark.parametrize("line, link, query", [
    # the originals of fragments a code-heavy garden produced: inline code or a link stood in the hole
    ("Iterators give you an `Iterator<Item = T>` to step over.", None, ""),
    ("Iterators give you an `Iter` to step over.", None, "Iterators give you an Iter to step over."),
    ("[[Bandwidth]] is the maximum transmission capacity across a given path.", "[[Bandwidth]]",
     "What is the maximum transmission capacity across a given path?"),
    ("`Bandwidth` is the maximum transmission capacity across a given path.", None,
     "Bandwidth is the maximum transmission capacity across a given path."),
    ("An `Actor<T>` encapsulates a thread and a concurrent message queue.", None, ""),
    ("An [[Actor]] encapsulates a thread and a concurrent message queue.", "[[Actor]]", ""),
    ("An ![[actor.png]] encapsulates a thread and a concurrent message queue.", None, ""),
    # holes a sentence survives: brackets, a separator, a trailing reference, a run of code
    ("Sleep pressure builds up (see [[adenosine]]) during the day.", "[[adenosine]]",
     "Sleep pressure builds up during the day."),
    ("- [[Dataview]]: query your notes like a database.", "[[Dataview]]", "query your notes like a database."),
    ("Naps help a lot, see [[adenosine]].", "[[adenosine]]", "Naps help a lot, see"),
    ("Coffee blocks [[adenosine]].", "[[adenosine]]", ""),
    ("Choose between Live preview or [[Source mode]].", "[[Source mode]]", ""),
    ("Install it from https://example.org/x today.", None, ""),
    ("Use `a b`, `c d` or `e f` to pick one.", None, ""),
])
def test_a_sentence_that_lost_code_or_a_link_is_mended_or_dropped(line: str, link: str | None, query: str) -> None:
    from vaulteval.querysets.generate.prose import CUT, mend

    (sentence,) = sentences(prose(line, keep=link, cuts=True))
    mended = mend(sentence)
    assert mended == query
    assert HOLE not in mended and CUT not in mended


@pytest.mark.parametrize("sentence, query", [
    ("[[X]] is really nice.", ""),                    # no definition to ask about
    ("`--vim`-only: the launcher opens notes.", ""),  # the code was part of a word
    ("[[X]] — a calendar for daily notes.", "a calendar for daily notes."),
])
def test_a_leading_hole_is_asked_about_or_dropped_only_before_a_definition(sentence: str, query: str) -> None:
    from vaulteval.querysets.generate.prose import mend

    link = "[[X]]" if "[[X]]" in sentence else None
    assert mend(sentences(prose(sentence, keep=link, cuts=True))[0]) == query
