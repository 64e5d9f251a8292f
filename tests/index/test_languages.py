"""Language analyzers and ``analyzer=auto``: tokens on fixed texts, names, identification, the index's
per-chunk languages, queries in the vault's languages (and in one it lacks), and the missing-library line."""

from __future__ import annotations

import pytest

from vaulteval import Vault
from vaulteval.errors import UsageError
from vaulteval.index.langs import libraries
from vaulteval.index.langs.auto import QueryAnalyzer
from vaulteval.index.langs.identify import identify, page_languages
from vaulteval.index.langs.registry import LanguageNameError, language_analyzer, parse
from vaulteval.index.analysis import lookup
from vaulteval.index.tokenize import tokenize_default
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import Retriever

# Fixed texts and the terms each analyzer must give (Snowball stems, stopwords out, compounds split).
EXPECTED = [
    ("german", "Die Tresorverwaltung der Notizen", ["tresorverwalt", "tresor", "verwalt", "notiz"]),
    ("german:compounds=no", "Die Tresorverwaltung der Notizen", ["tresorverwalt", "notiz"]),
    ("russian", "Как восстановить удалённые заметки?", ["восстанов", "удален", "заметк"]),
    ("spanish", "deletrear las matrículas", ["deletr", "matricul"]),
    ("spanish", "deletrear las matriculas", ["deletr", "matricul"]),  # typed without the accent: same terms
    ("spanish:fold=no", "acción", ["accion"]),  # Snowball Spanish drops acute accents itself
    ("french", "les réunions de l'équipe", ["reunion", "equip"]),  # elision split, accents folded
    ("french:fold=no", "l'équipe", ["équip"]),
    ("swedish", "versionshistorik", ["versionshistorik", "version", "historik"]),
    ("chinese", "恢复笔记", ["恢复", "笔记", "恢", "恢复", "恢复笔", "复", "复笔", "复笔记", "笔", "笔记", "记"]),
    ("japanese", "ノートを消した", ["ノート", "消す", "ノ", "ノー", "ノート", "ー", "ート", "ートを", "ト", "トを",
                                     "トを消", "を", "を消", "を消し", "消", "消し", "消した", "し", "した", "た"]),
    ("korean", "메모를 지웠다", ["메모", "지우", "메모", "모를", "지웠", "웠다"]),
    ("korean", "Obsidian Sync", ["obsidian", "sync"]),  # no Hangul: the shared split, Kiwi never loaded
]


@pytest.mark.parametrize("name, text, expected", EXPECTED)
def test_each_analyzer_gives_the_expected_terms_every_time(name: str, text: str, expected: list[str]) -> None:
    analyze = lookup(name)
    assert analyze(text) == expected
    assert analyze(text) == expected  # caches and lazily loaded dictionaries change nothing


@pytest.mark.parametrize("name, error", [
    ("german:compounds=yes", "normal form"), ("spanish:compounds=yes", "german, dutch and swedish"),
    ("chinese:fold=yes", "no fold"), ("german:colour=red", "unknown option"), ("klingon", "unknown"),
])
def test_analyzer_names_are_checked(name: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        lookup(name)("text")


def test_option_names_round_trip() -> None:
    for name in ("german", "german:compounds=no", "spanish:fold=no", "english", "russian:stopwords=none"):
        if name != "english":
            language, values = parse(name)
            assert language.analyzer == name.partition(":")[0]
    with pytest.raises(LanguageNameError):
        parse("auto")


def test_default_is_still_the_seed_tokenizer() -> None:
    text = "Descaling the 東京 espresso machines, naïve café"
    assert lookup("default").terms is tokenize_default
    assert lookup("default")(text) == ["descaling", "東", "東京", "京", "espresso", "machines", "naïve", "café"]


@pytest.mark.parametrize("text, code", [
    ("Wie lange werden ältere Fassungen meiner Notizen in der Cloud aufbewahrt?", "de"),
    ("How long are older versions of my notes kept in the cloud?", "en"),
    ("¿Cuánto tiempo se guardan las versiones anteriores de mis notas?", "es"),
    ("Как долго хранятся старые версии моих заметок?", "ru"),
    ("笔记的旧版本保存多久", "zh"), ("古いバージョンはどのくらい保存されますか", "ja"), ("이전 버전은 얼마나 보관되나요", "ko"),
    ("1234 -- !!", "und"),
])
def test_identification_by_script_then_identifier(text: str, code: str) -> None:
    assert identify(text) == code


# A tldr page in Hindi: its commands hold more letters than its prose, all Latin.
HINDI_PAGE = ("# docker ps\n\n> कंटेनरों की सूची दिखाएं।\n\n- सभी कंटेनर दिखाएं:\n\n"
              "`docker ps --all --no-trunc --format table --filter status=running --quiet`\n\n"
              "- नवीनतम कंटेनर:\n\n`docker ps --latest --size --filter name=webserver`\n")


def test_code_is_left_out_of_what_is_identified() -> None:
    from vaulteval.index.langs.identify import prose
    from vaulteval.index.langs.scripts import script_counts

    assert identify(HINDI_PAGE) == "hi" != identify(HINDI_PAGE, script_counts(HINDI_PAGE))  # counts given: as it is
    assert page_languages([HINDI_PAGE, "- सभी दिखाएं: `docker ps --all --no-trunc --format table`"]) == ["hi", "hi"]
    assert prose("Lista:\n\n`docker ps`\n") == "Lista:\n\n \n"
    # A chunk that starts inside a code block: only the fence lines go, never the prose between two blocks.
    chunk = 'x = "UNTITLED"\n```\n\nQuesto applica `upper` a `title`.\n\n> ```md\n> code\n> ```\n'
    assert prose(chunk) == 'x = "UNTITLED"\n \n\nQuesto applica   a  .\n\n \n> code\n \n'
    assert prose("Texte\n~~~sh\nls\n~~~\n") == "Texte\n \nls\n \n"
    assert prose("`only code`") == "`only code`" and prose("no code at all") == "no code at all"


GERMAN = ("Der Tresor speichert alle Notizen als einfache Textdateien auf deinem Gerät. Du kannst Ordner anlegen, "
          "Dateien verschieben und jederzeit eine Sicherung erstellen, ohne dass ein Konto nötig ist. ") * 2
ENGLISH = ("The vault keeps every note as a plain text file on your device. You can create folders, move files "
           "and make a backup at any time without needing an account. ") * 2


def test_a_mixed_note_gets_each_chunk_in_its_language() -> None:
    assert page_languages([GERMAN, ENGLISH, "Siehe auch: Tresor"]) == ["de", "en", "de"]  # short: the note's


def _write(root, rel: str, text: str) -> None:
    path = root / "wiki" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def mixed_vault(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("mixed") / "vault"
    (root / ".obsidian").mkdir(parents=True)
    _write(root, "Tresor.md", "# Tresor\n\n" + GERMAN * 6 + "\n\n## English\n\n" + ENGLISH * 6)
    _write(root, "Verwaltung.md", "# Tresorverwaltung\n\nDie Tresorverwaltung zeigt alle Tresore und Einstellungen.\n")
    _write(root, "Sync.md", "# Sync\n\nSync keeps your notes the same on every device you use.\n")
    _write(root, "同期.md", "# 同期\n\n同期はすべてのデバイスでノートを同じに保ちます。Obsidian Sync を使います。\n")
    provision(Vault(root), analyzer="auto")
    return root


def test_the_index_records_each_chunks_language_and_the_libraries(mixed_vault) -> None:
    index = Retriever(Vault(mixed_vault)).index()
    by_page: dict[str, list[str]] = {}
    for doc, code in zip(index.all_docs(), index.doc_languages()):
        by_page.setdefault(doc.page_path, []).append(code)
    assert by_page["wiki/Tresor.md"][0] == "de" and by_page["wiki/Tresor.md"][-1] == "en"
    assert by_page["wiki/同期.md"] == ["ja"] and by_page["wiki/Sync.md"] == ["en"]
    assert set(index.header["languages"]) == {"de", "en", "ja"}
    libs = index.header["analyzer_libraries"]
    assert libs["py3langid"] and libs["PyStemmer"] and libs["fugashi"] and libs["wordfreq"]


def test_a_compound_in_the_query_finds_its_parts_and_back(mixed_vault) -> None:
    index = Retriever(Vault(mixed_vault)).index()
    hits = index.search("Verwaltung", 5)  # the note only says "Tresorverwaltung"
    assert [index.doc(h.doc).page_path for h in hits] == ["wiki/Verwaltung.md"]


def test_a_short_query_is_analyzed_in_every_language_of_its_script() -> None:
    analyze = QueryAnalyzer({"de": 10, "en": 10, "ja": 5})
    terms = analyze("Notizen")  # one word: German and English (and plain), never Japanese
    assert {"notiz", "notizen"} <= set(terms) and analyze.last == ["de", "en", "und"]  # plain: the Japanese notes
    assert len(terms) == len(set(terms))  # each term once


def test_a_long_query_is_analyzed_in_every_language_of_its_script_too(mixed_vault) -> None:
    analyze = QueryAnalyzer({"de": 10, "en": 10, "ja": 5})
    terms = analyze("Wie kann ich eine Sicherung aller Notizen erstellen?")
    assert analyze.last == ["de", "en", "und"] and "sicherung" in terms and "notiz" in terms
    index = Retriever(Vault(mixed_vault)).index()
    assert index.doc(index.search("eine Sicherung aller Notizen erstellen", 1)[0].doc).page_path == "wiki/Tresor.md"


def test_a_query_in_a_language_the_vault_lacks_still_finds_bm25_hits(mixed_vault) -> None:
    index = Retriever(Vault(mixed_vault)).index()
    hits = index.search("¿Cómo funciona Obsidian Sync en todos mis dispositivos?", 5)
    assert {index.doc(h.doc).page_path for h in hits} >= {"wiki/Sync.md", "wiki/同期.md"}


def test_a_missing_library_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_jieba(name, *args, **kwargs):
        if name == "jieba":
            raise ImportError("No module named 'jieba'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jieba)
    monkeypatch.setattr(libraries.importlib, "import_module", lambda name: no_jieba(name))
    with pytest.raises(libraries.MissingLibrary) as err:
        libraries.need("jieba", "chinese")
    assert "\n" not in str(err.value) and "vaulteval[languages]" in str(err.value) and "jieba" in str(err.value)


def test_a_tuned_auto_analyzer_is_what_provision_builds_next(tmp_path) -> None:
    from pipeline_fixtures import run_main
    from vaulteval.pipeline.tuned import write_tuned
    from vaulteval.workbench.strategy import Strategy

    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    _write(root, "Sync.md", "# Sync\n\nSync keeps your notes the same on every device you use.\n")
    _write(root, "Tresor.md", "# Tresor\n\n" + GERMAN)
    settings = Strategy.parse("bm25:analyzer=auto").index.settings()
    write_tuned(Vault(root), "bm25", run_id="t", index=settings)
    code, _, err = run_main("provision", "--vault", root)
    assert code == 0, err
    index = Retriever(Vault(root)).index()
    assert index.analyzer_name == "auto" and index.header["languages"] == {"de": 1, "en": 1}


def test_a_hits_passages_are_analyzed_in_the_querys_languages_only() -> None:
    header = {"languages": {"de": 10, "en": 10, "ja": 5}}
    latin = lookup("auto").passages(header, "delete a note")("ノートを消した")
    assert "消す" not in latin and "消した" in latin  # n-grams of the plain split, MeCab's lemma never asked for
    assert "消す" in lookup("auto").passages(header, "ノートを消す")("ノートを消した")


def test_a_hits_text_is_analyzed_in_its_own_language_not_in_every_language_of_the_query(monkeypatch) -> None:
    from vaulteval.index.langs import segmenters

    header = {"languages": {"de": 10, "en": 10, "ja": 5}}
    of = lookup("auto").chunk_analysis(header, "deleted notes")  # analyzed in German and English (and plainly)
    name, english = of("en")
    assert name == "auto/en:bare" and english("the deleted notes") == ["the", "delet", "note"]  # no German stem
    assert of("de")[1]("Notizen gelöscht") == ["notiz", "geloscht"]
    monkeypatch.setattr(segmenters, "_mecab", lambda: pytest.fail("MeCab loaded for a Latin query's hit"))
    name, japanese = of("ja")  # a Japanese chunk found by Latin words: its segmenter is not needed
    terms = japanese("ノートを消した Obsidian")
    assert name == "auto/ja:nodict" and "obsidian" in terms and "消した" in terms and "消す" not in terms
    name, german = lookup("auto").chunk_analysis({"languages": {"de": 10, "ja": 5}}, "Notizen")("de")  # the query's one language:
    assert name == "auto/de" and german("der Tresorverwaltung") == ["tresorverwalt", "tresor", "verwalt"]  # as indexed
    assert lookup("default").chunk_analysis({}, "deleted notes")("en")[0] == "default"


def test_matched_terms_are_the_query_words_the_chunks_postings_hold(mixed_vault) -> None:
    from pipeline_fixtures import retrieve_json

    result = retrieve_json(mixed_vault, "eine Sicherung aller Notizen erstellen", "--top", "5")
    hit = next(c for c in result["candidates"] if c["page_path"] == "wiki/Tresor.md")
    # "eine" is a German stopword: the German chunk's index has no term for it, so it did not match
    assert hit["matched_terms"] == ["Sicherung", "Notizen", "erstellen"]
    assert "Sicherung" in hit["snippet"]
    sync = retrieve_json(mixed_vault, "Obsidian Sync devices", "--top", "5")
    japanese = next(c for c in sync["candidates"] if c["page_path"] == "wiki/同期.md")
    assert japanese["matched_terms"] == ["Obsidian", "Sync"] and "Obsidian Sync" in japanese["snippet"]


def _sections(path) -> dict:
    from vaulteval.index.file import read_sections

    _, sections = read_sections(path)
    return {name: bytes(sections[name]) if sections.dtype(name) == "bytes" else sections[name].tolist()
            for name in sections}


def test_auto_field_terms_taken_in_the_build_pass_equal_those_read_back(tmp_path, monkeypatch) -> None:
    from vaulteval.chunks.integrity import IntegrityChecker
    from vaulteval.index.fields import fields_path
    from vaulteval.pipeline.provision import ensure_fields

    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    _write(root, "Tresor.md", "---\naliases: [Safe]\n---\n# Tresor\n\n" + GERMAN * 6 + "\n\n## English\n\n" + ENGLISH * 6
           + "\n```\nobsidian --open Tresor\n```\n")
    _write(root, "同期.md", "# 同期\n\n同期はすべてのデバイスでノートを同じに保ちます。\n\n```\nsync --all\n```\n")
    reads: list[int] = []
    real = IntegrityChecker.record
    monkeypatch.setattr(IntegrityChecker, "record", lambda self, doc: reads.append(1) or real(self, doc))
    provision(Vault(root), analyzer="auto")
    assert reads == []  # the build's own pass gave the field texts: no record read again
    path = fields_path(root / ".vault-meta" / "vaulteval")
    collected = _sections(path)
    assert "obsidian" in collected["code.terms"].decode() and "同期" in collected["title.terms"].decode()
    path.unlink()
    assert ensure_fields(Vault(root)) and len(reads) > 0  # rebuilt from the pages and records
    assert _sections(path) == collected


def test_the_identifier_narrowed_to_a_script_picks_what_ranking_every_language_picks() -> None:
    from vaulteval.index.langs.catalog import languages_of_script
    from vaulteval.index.langs.identify import MAX_CHARS, best_among, identifier

    texts = [GERMAN, ENGLISH, "deletrear las matriculas", "Notizen", "Как долго хранятся старые версии моих заметок?",
             "Ово је кратка белешка", "mise à jour des notes", "git commit --amend", "xq"]
    for text in texts:
        for script in ("latin", "cyrillic"):
            candidates = languages_of_script(script)
            ranked = [code for code, _ in identifier().rank(text[:MAX_CHARS]) if code in candidates]
            assert best_among(text, candidates) == ranked[0], (text, script)


@pytest.mark.parametrize("code", ["en", "de", "ru", "es", "zh", "fr"])
def test_a_frequency_list_read_down_to_a_floor_is_the_top_of_the_whole_list(code: str) -> None:
    from vaulteval.index.langs.frequencies import zipf

    whole = zipf(code)
    assert len(whole) > 10_000
    assert zipf(code, 6.0) == {word: z for word, z in whole.items() if z >= 6.0} != {}


@pytest.mark.parametrize("text", [
    "", "1234 -- !!", "Descaling the espresso machine", "Ärger über Überschriften, naïve café",
    "데이터 디렉터리에 대한 `tldr {{경로/대상}}` data", "削除したノート, Obsidian", "Как удалить заметку? ok",
    "mixed \u0301\u00e9\U00020001\ud800 ΑΒΓ αβγ עברית", "AbCxYz\x00\x7f\x80\xff",
])
def test_script_counts_are_each_letters_script_counted_one_by_one(text: str) -> None:
    from vaulteval.index.langs.scripts import SCRIPTS, script_counts, script_of

    expected: dict[str, int] = {}
    for char in text:
        name = "latin" if char.isascii() and char.isalpha() else script_of(char) if not char.isascii() else None
        if name:
            expected[name] = expected.get(name, 0) + 1
    assert script_counts(text) == expected and list(script_counts(text)) == [s for s in SCRIPTS if s in expected]


def test_the_split_without_regex_is_regexs_split() -> None:
    import re
    import unicodedata

    regex = pytest.importorskip("regex")
    from vaulteval.index.langs import words as words_module

    first, rest = regex.compile(r"[\p{L}\p{N}_]"), regex.compile(r"[\p{L}\p{M}\p{N}_]")
    fast = re.compile(words_module._FAST_WORD.pattern)
    for low, high in words_module.FAST_BLOCKS:  # every code point the split without regex may see
        for code in range(low, high + 1):
            char = chr(code)
            assert bool(fast.fullmatch(char)) == bool(first.fullmatch(char)), hex(code)
            assert bool(fast.fullmatch("a" + char)) == bool(rest.fullmatch(char)), hex(code)
    from vaulteval.index.langs.scripts import CJK, SCRIPTS

    cjk = "".join(SCRIPTS[name] for name in CJK)
    cjk_char, cjk_runs = re.compile(f"[{cjk}]"), re.compile(f"([{cjk}]+)|[^{cjk}]+")
    for text in ("Ünïcode café ДРУГ 2½ e\u0301t\u0301e x_y l'été — “quoted” → ①", "東京とノートー", "x\U00020001y",
                 "한국어々 ﾉｰﾄ", "ـعربي", ""):
        expected = words_module._word_pattern().findall(unicodedata.normalize("NFKC", text).lower())
        assert words_module.words(text) == expected
        assert words_module.has_cjk(text) == (cjk_char.search(text) is not None)
        assert words_module.split_cjk(text) == [(bool(m.group(1)), m.group(0)) for m in cjk_runs.finditer(text)]


def test_a_query_split_once_for_all_its_languages_gets_each_analyzers_terms() -> None:
    from vaulteval.index.langs.auto import query_analyzer
    from vaulteval.index.langs.catalog import PLAIN
    from vaulteval.index.langs.registry import analyzer_for

    analyze = QueryAnalyzer({"de": 10, "en": 10, "fr": 10, "es": 10, "ru": 5, "ja": 5})
    for text in ("Wie kann ich eine Sicherung aller Notizen erstellen?", "l'équipe réunions café naïve",
                 "Tresorverwaltung 東京 notes", "восстановить заметки", "Die Notizen, die Notizen: notes notes notes"):
        codes, with_plain = analyze.languages_for(text)
        separately = [query_analyzer(c, len(codes) == 1)(text) for c in codes]
        separately += [analyzer_for(PLAIN, False, False)(text)] if with_plain else []
        best: dict[str, int] = {}  # each term once per analyzer that gives it, as often as the most of them
        for terms in separately:
            for term in dict.fromkeys(terms):
                best[term] = max(best.get(term, 0), terms.count(term))
        assert analyze(text) == [t for t, n in best.items() for _ in range(n)] != [], text


def test_korean_texts_given_to_kiwi_together_get_the_terms_each_gets_alone() -> None:
    from vaulteval.index.langs.segmenters import KoreanAnalyzer

    texts = ["메모를 지웠다", "Obsidian Sync", "", "이전 버전은 얼마나 보관되나요?\n\n`git log` 로 기록 보기", "메모를 지웠다"]
    alone = [KoreanAnalyzer()(text) for text in texts]
    assert KoreanAnalyzer().many(texts) == alone and alone[0] == ["메모", "지우", "메모", "모를", "지웠", "웠다"]


def test_chinese_segmentation_neither_reads_nor_writes_a_cache_in_the_temp_folder(tmp_path, monkeypatch) -> None:
    import tempfile

    from vaulteval.index.langs import segmenters
    from vaulteval.index.analysis import lookup

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "jieba.cache").write_bytes(b"planted")  # would be read back if jieba used its cache
    segmenters._jieba.cache_clear()
    try:
        assert "笔记" in lookup("chinese")("恢复笔记")
    finally:
        segmenters._jieba.cache_clear()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jieba.cache"]
    assert (tmp_path / "jieba.cache").read_bytes() == b"planted"


_SEGMENTER_PROBE = r"""
import sys
from vaulteval import Vault
from vaulteval.pipeline.retrieve import Retriever, retrieve
vault = Vault(sys.argv[1])
retrieve(vault, "backup of every note", top=3)
cold = "fugashi" in sys.modules
Retriever(vault).open(analyzers=False)
lazy = "fugashi" in sys.modules
Retriever(vault, warm=False).open()
one_shot = "fugashi" in sys.modules
Retriever(vault).open()
from vaulteval.index.langs import segmenters
print(cold, lazy, one_shot, "fugashi" in sys.modules, segmenters._mecab.cache_info().currsize)
"""


def test_a_searcher_kept_open_loads_its_vaults_segmenters_as_it_opens_and_a_latin_query_never(mixed_vault) -> None:
    """A CLI call (cold) on a Latin query loads no segmenter; ``Retriever.open()`` loads the Japanese one the
    index's languages need (its dictionary too), ``open(analyzers=False)`` leaves it to the first such query."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _SEGMENTER_PROBE, str(mixed_vault)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True).stdout
    assert out.split() == ["False", "False", "False", "True", "1"]


def test_loading_a_vaults_word_split_brings_regex_only_for_scripts_outside_the_fast_blocks() -> None:
    from vaulteval.index.langs import words as words_module

    words_module._word_pattern.cache_clear()
    words_module.load(["latin", "han", "cyrillic", "hangul"])
    assert words_module._word_pattern.cache_info().currsize == 0
    words_module.load(["latin", "devanagari"])
    assert words_module._word_pattern.cache_info().currsize == 1
    assert words_module.words("बग रिपोर्ट") == ["बग", "रिपोर्ट"]
