"""The analyzers, rule by rule: ``default`` is exactly the seed tokenizer, ``english`` goes beyond it.

Usage: ``.venv/bin/python -m pytest tests/index/test_tokenize.py -q``

Each table row names the rule it pins (docs/index-format.md#analyzers). The
oversized-input rows check the refusal (a query gets exit 2) and that the index
build takes an oversized chunk from another tool whole and says so.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from vaulteval import Vault
from vaulteval.chunks.chunking import sha256_bytes, sha256_text
from vaulteval.index.tokenize import (MAX_INPUT_CHARS, SEED_CJK_RANGES, STOPWORDS, TextTooLong,
                                      tokenize_default, tokenize_english)
from vaulteval.pipeline.retrieve import Retriever
from vaulteval.workbench.strategy import Strategy, StrategyError
from vaulteval.vault.metadir import META_REL

from pipeline_fixtures import put_record, run_main, write_note

# (rule, text, expected default terms)
DEFAULT_TABLE = [
    ("lowercase", "Espresso MACHINE", ["espresso", "machine"]),
    ("NFKC: full-width letters and digits", "ＥＳＰＲＥＳＳＯ ２０２６", ["espresso", "2026"]),
    ("NFKC: ligature", "ﬁlter", ["filter"]),
    ("NFKC: circled digit joins the word", "step①②", ["step12"]),
    ("NFKC before the regex: a super-script is a digit", "m²", ["m2"]),
    ("word regex: apostrophe and hyphen inside a word", "user's well-formed", ["user's", "well-formed"]),
    ("word regex: punctuation splits", "a.b,c;d:e!f?g", []),
    ("word regex: a word starts with \\w", "'quoted' -dash", ["quoted", "dash"]),
    ("underscore is a word character", "snake_case", ["snake_case"]),
    ("strip: trailing apostrophe", "patients' results", ["patients", "results"]),
    ("strip: underscores around", "_foo_ __init__", ["foo", "init"]),
    ("strip: trailing hyphen", "pre- post-", ["pre", "post"]),
    ("strip: mixed edge characters", "_-'x'-_ ab'_", ["ab"]),
    ("length: one character dropped", "x y z ab", ["ab"]),
    ("length: one character after stripping dropped", "s' _q_", []),
    ("length: one digit dropped, two kept", "7 42", ["42"]),
    ("stopwords dropped", "the cat is on a mat", ["cat", "mat"]),
    ("stopwords dropped after lowercasing", "THE Cat", ["cat"]),
    ("stopwords dropped after stripping", "_the_ 'and'", []),
    ("no stemming in default", "machines descaling", ["machines", "descaling"]),
    ("CJK: 1-, 2-, 3-grams", "東京の", ["東", "東京", "東京の", "京", "京の", "の"]),
    ("CJK: one character is a term", "茶", ["茶"]),
    ("CJK: two characters", "紅葉", ["紅", "紅葉", "葉"]),
    ("CJK run inside a word: split into runs", "東京tower", ["東", "東京", "京", "tower"]),
    ("runs: non-CJK run stripped and filtered", "東京's", ["東", "東京", "京"]),
    ("runs: several changes", "ab東cd京ef", ["ab", "東", "cd", "京", "ef"]),
    ("runs: hyphen inside a non-CJK run kept", "ラーメン-shop", ["ラ", "ラー", "ラーメ", "ー", "ーメ", "ーメン",
                                                             "メ", "メン", "ン", "shop"]),
    ("runs: short non-CJK run between CJK dropped", "東a京", ["東", "京"]),
    ("Hangul syllables", "한국", ["한", "한국", "국"]),
    ("Hiragana and Katakana form one run", "ひカ", ["ひ", "ひカ", "カ"]),
    ("NFKC: half-width katakana become full-width", "ｶﾀ", ["カ", "カタ", "タ"]),
    ("iteration mark is not CJK in the seed", "佐々木", ["佐", "木"]),
    ("iteration mark alone: a one-character non-CJK run", "時々", ["時"]),
    ("CJK punctuation splits words", "東京。京都", ["東", "東京", "京", "京", "京都", "都"]),
    ("astral CJK (Extension B)", "\U00020000\U00020001", ["\U00020000", "\U00020000\U00020001", "\U00020001"]),
    ("Extension G", "\U00030000", ["\U00030000"]),
    ("non-CJK scripts are words", "Ελληνικά русский", ["ελληνικά", "русский"]),
    ("emoji and symbols are no words", "☕ → ✓", []),
    ("empty", "", []),
]


@pytest.mark.parametrize("rule,text,expected", DEFAULT_TABLE, ids=[r[0] for r in DEFAULT_TABLE])
def test_default_rules(rule: str, text: str, expected: list[str]) -> None:
    assert tokenize_default(text) == expected


def _wordlike(ch: str) -> bool:
    """A word character that NFKC leaves alone (so the analyzer sees it as written)."""
    return re.fullmatch(r"\w", ch) is not None and unicodedata.normalize("NFKC", ch) == ch


def _in_seed_ranges(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in SEED_CJK_RANGES)


# Every seed range: its first and last word characters are CJK (n-grams, no length rule), and
# the nearest word character outside the ranges joins the Latin letters around it instead.
@pytest.mark.parametrize("lo,hi", SEED_CJK_RANGES, ids=[f"U+{lo:04X}-{hi:04X}" for lo, hi in SEED_CJK_RANGES])
def test_every_seed_cjk_range(lo: int, hi: int) -> None:
    # Hangul Compatibility and half-width forms change under NFKC: compare with the normalized form.
    def cjk_word(cp: int) -> bool:
        n = unicodedata.normalize("NFKC", chr(cp))
        return len(n) == 1 and re.fullmatch(r"\w", n) is not None

    first = next(cp for cp in range(lo, hi + 1) if cjk_word(cp))
    last = next(cp for cp in range(hi, lo - 1, -1) if cjk_word(cp))
    for cp in (first, last):
        ch, n = chr(cp), unicodedata.normalize("NFKC", chr(cp))
        assert tokenize_default(ch + ch) == [n, n + n, n], hex(cp)
        assert tokenize_default(f"ab{ch}cd") == ["ab", n, "cd"], hex(cp)
    for step, start in ((-1, lo - 1), (1, hi + 1)):
        # The nearest word character outside every range (none above U+323AF).
        outside = next((cp for cp in range(start, start + step * 4096, step)
                        if 0 <= cp < 0x110000 and not _in_seed_ranges(cp) and _wordlike(chr(cp))), None)
        if outside is not None:
            ch = chr(outside)
            assert tokenize_default(f"ab{ch}cd") == [f"ab{ch}cd"], hex(outside)


def test_the_stopword_list_is_the_seeds() -> None:
    assert len(STOPWORDS) == 38
    assert {"a", "the", "your", "with", "its"} <= STOPWORDS and "not" not in STOPWORDS


# -- english: stemming, and the iteration marks inside CJK runs ------------------------------

ENGLISH_TABLE = [
    ("Snowball stemming", "descaling machines", ["descal", "machin"]),
    ("strip before stemming", "patients'", ["patient"]),
    ("stopwords before stemming", "the running", ["run"]),
    ("々 inside a run: 佐々木", "佐々木", ["佐", "佐々", "佐々木", "々", "々木", "木"]),
    ("々 at the end: 時々", "時々", ["時", "時々", "々"]),
    ("〆 joins the run", "〆切", ["〆", "〆切", "切"]),
    ("〻 joins the run", "人〻", ["人", "人〻", "〻"]),
    ("CJK n-grams are not stemmed", "東京", ["東", "東京", "京"]),
]


@pytest.mark.parametrize("rule,text,expected", ENGLISH_TABLE, ids=[r[0] for r in ENGLISH_TABLE])
def test_english_rules(rule: str, text: str, expected: list[str]) -> None:
    assert tokenize_english(text) == expected


# -- the 8,000-character limit ----------------------------------------------------------------

@pytest.mark.parametrize("analyze", [tokenize_default, tokenize_english])
def test_limit_is_refused_not_truncated(analyze) -> None:
    assert len(analyze("ab " * (MAX_INPUT_CHARS // 3) + "ab")) == MAX_INPUT_CHARS // 3 + 1  # 8,000 chars: fine
    assert len(analyze("x" * MAX_INPUT_CHARS)) == 1
    with pytest.raises(TextTooLong):
        analyze("x" * (MAX_INPUT_CHARS + 1))
    # Under the limit before NFKC, over it after: "ﷺ" becomes 18 characters.
    expands = "\ufdfa" * 500
    assert len(expands) <= MAX_INPUT_CHARS < len(unicodedata.normalize("NFKC", expands))
    with pytest.raises(TextTooLong):
        analyze(expands)
    # Over before NFKC, under after: decomposed Hangul composes (2 code points -> 1).
    composes = "\u1100\u1161" * 4001
    assert len(composes) > MAX_INPUT_CHARS >= len(unicodedata.normalize("NFKC", composes))
    with pytest.raises(TextTooLong):
        analyze(composes)
    # No term is ever dropped: 8,000 CJK characters give all their n-grams (over 20,000 terms).
    assert len(analyze("東" * MAX_INPUT_CHARS)) == 3 * MAX_INPUT_CHARS - 3
    # The index build analyzes oversized documents whole.
    assert len(analyze("ab " * 5000, bounded=False)) == 5000


@pytest.mark.parametrize("query,code", [
    ("espresso " * 888 + "espresso", 0),          # 8,000 characters
    ("e" * 8001, 2),
    ("\ufdfa" * 500, 2),                           # over the limit only after NFKC
    ("\u1100\u1161" * 4001, 2),                    # over the limit only before NFKC
])
def test_query_limit_exit_codes(provisioned_sample: Path, query: str, code: int) -> None:
    exit_code, out, err = run_main("retrieve", "--vault", provisioned_sample, query, "--no-rerank")
    assert exit_code == code, err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and "8000" in err, err
    else:
        assert json.loads(out)["candidates"]


def test_oversized_foreign_chunk_is_indexed_whole_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "v"
    page = write_note(root, "wiki/big.md", "placeholder\n")
    raw = " ".join(f"w{i}" for i in range(3000)) + " lastword"  # about 17,000 characters
    assert len(raw) > MAX_INPUT_CHARS
    record = {"page_path": "wiki/big.md", "page_address": "foreign", "chunk_index": 0, "raw_text": raw,
              "contextualized_text": raw, "prefix": "", "prefix_source": "synthetic", "char_count": len(raw),
              "body_hash": sha256_text(raw), "page_body_hash": sha256_bytes(page.read_bytes()),
              "created_at": "2026-01-01T00:00:00Z"}
    put_record(root, record, key="wiki/big.md")  # a chunk another tool wrote, past the tokenizer's bound
    code, out, err = run_main("index", "build", "--vault", root, "--analyzer", "default")
    assert code == 0, err
    assert json.loads(out)["oversized"] == ["foreign:0"]
    index = Retriever(Vault(root)).index()
    assert int(index.doc_len[0]) == 3001
    assert index.search("lastword", k=1), "the tail of an oversized chunk was dropped"


def test_strategy_hard_max_must_fit_the_tokenizer() -> None:
    assert Strategy.parse("bm25:target=6000,hard_max=6998").index.hard_max == 6998  # 6,998 + 2 + 1,000 prefix
    with pytest.raises(StrategyError, match="hard_max <= 6998"):
        Strategy.parse("bm25:target=6000,hard_max=6999")


def test_index_from_another_analyzer_version_is_rebuilt(fresh_vault: Path) -> None:
    """An index whose terms came from the previous tokenizer is refused with the rebuild command."""
    from vaulteval.index.file import read_sections, write_sections

    path = fresh_vault / META_REL / "bm25" / "index.vti"
    header, sections = read_sections(path)
    old_header = {k: v for k, v in header.items()
                  if k not in ("analyzer_version", "schema_version", "sections", "body_size", "body_crc32")}
    from vaulteval.vault.metadir import MetaDir

    meta = MetaDir.open(Vault(fresh_vault))
    bm25_dir = meta.sub("bm25")
    try:
        write_sections(bm25_dir, "index.vti", old_header, {name: bytes(v) if isinstance(v, memoryview) else v.copy()
                                                            for name, v in sections.items()})
    finally:
        bm25_dir.close()
        meta.close()
    code, _out, err = run_main("retrieve", "--vault", fresh_vault, "espresso", "--no-rerank")
    assert code == 10, err
    assert "analyzer version 1" in err and "rebuild with: vaulteval provision --vault" in err
    assert run_main("provision", "--vault", fresh_vault)[0] == 0
    assert run_main("retrieve", "--vault", fresh_vault, "espresso", "--no-rerank")[0] == 0


# -- the compiled-pattern tokenizer against the word-by-word one it replaced -------------------

def _word_by_word(text: str, extended: bool, stem, stop=STOPWORDS) -> list[str]:
    """The analyzer as it was written before issue 26: one loop over the words (kept here as the reference)."""
    ranges = tuple(sorted(SEED_CJK_RANGES + ((0x3005, 0x3006), (0x303B, 0x303B)))) if extended else SEED_CJK_RANGES
    cls = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)
    runs_re = re.compile(f"([{cls}]+)|[^{cls}]+")
    out: list[str] = []
    for word in re.findall(r"\w[\w'\-]*", unicodedata.normalize("NFKC", text)):
        word = word.lower()
        for m in runs_re.finditer(word):
            if m.group(1):
                run = m.group(1)
                for i in range(len(run)):
                    out.extend(run[i:i + n] for n in (1, 2, 3) if i + n <= len(run))
                continue
            part = m.group(0).strip("'_-")
            if len(part) > 1 and part not in stop:
                out.append(stem(part) if stem else part)
    return out


# Characters where the rules have edges: the word pattern's ' and -, underscores, CJK and iteration marks,
# final sigma and other case changes that alter length, compatibility forms, combining marks, NUL.
_EDGE_ALPHABET = list("aZ0_'-. \n\t\x00ΣσςΟΔİıẞßǅﬁ①²ｶﾞ東京の한々〆〻ー") + ["\u0301", "\u200d", "\u00ad", "\U00020000"]


@pytest.mark.parametrize("analyzer", ["default", "english", "english:stemmer=porter,stopwords=lucene"])
def test_compiled_tokenizer_is_the_word_by_word_one(analyzer: str) -> None:
    from hypothesis import given, settings, strategies as st

    from vaulteval.index.analyzers import make_stemmer, parse_analyzer_name, stopword_list
    from vaulteval.index.analysis import lookup

    analyze = lookup(analyzer)
    if analyzer == "default":
        stem, stop, extended = None, STOPWORDS, False
    else:
        stemmer, stopwords = parse_analyzer_name(analyzer) if ":" in analyzer else ("snowball", "short")
        stem, stop, extended = make_stemmer(stemmer), frozenset(stopword_list(stopwords, STOPWORDS)), True
    texts = st.one_of(st.text(st.sampled_from(_EDGE_ALPHABET), max_size=60), st.text(max_size=60),
                      st.text(st.characters(max_codepoint=127), max_size=80))

    @settings(max_examples=400, deadline=None, database=None)
    @given(texts)
    def same(text: str) -> None:
        assert analyze(text) == _word_by_word(text, extended, stem, stop)

    same()
    for text in [row[1] for row in DEFAULT_TABLE] + ["ΟΔΟΣ.Β", "ΣΑΣ-Σ", "İstanbul's", "a'b' _x_y_ --z--"]:
        assert analyze(text) == _word_by_word(text, extended, stem, stop), text
