"""Chinese, Japanese and Korean analyzers: a word segmenter for CJK text, the shared split for the rest.

Usage: ``ChineseAnalyzer()("如何恢复误删的笔记")`` -> ``["如何", "恢复", "误删", "笔记"]``.

- Chinese: jieba's search mode (``cut_for_search``: words, plus the shorter words inside long
  ones), the ``stop-words`` package's Chinese list dropped.
- Japanese: MeCab through fugashi with the unidic-lite dictionary; content words (nouns, verbs,
  adjectives, adverbs, prefixes, suffixes) as their dictionary form, so 消した and 消す meet.
- Korean: Kiwi (kiwipiepy); nouns, verb and adjective stems, roots, adverbs, foreign words and
  numbers; particles and endings are dropped.

Each also adds the n-grams of every CJK run: the default analyzer's 1- to 3-grams for Chinese and
Japanese, syllable bigrams for Korean. Measured on the help vault's question sets (docs/benchmarks.md),
segmenter words alone lose to the default's n-grams on Chinese and Japanese (0.74 against 0.83, 0.51
against 0.61): a query segmented differently from the note misses it. Words plus n-grams keep the
n-grams' recall and add the segmenter's precision and, for Japanese, dictionary forms.

Each loads its dictionary the first time it meets text in its script, never before (or when ``load``
is called: a searcher kept open loads them as it opens): a Latin-only text is split by the shared rule
(``words``) without loading anything. Latin words inside CJK text
are split the same way, not stemmed. A build hands each analyzer all its texts at once (``many``):
Kiwi spreads them over its worker threads, one per core, the tokens of each text unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache

from vaulteval.index.langs.libraries import need
from vaulteval.index.langs.words import cjk_ngrams, has_cjk, split_cjk, words

_PLAIN_STOP = frozenset("a an and are as at be by for from has have he her him his i if in is it its of on or "
                        "that the their them they this to was were will with you your".split())


def _plain_words(text: str, out: list[str]) -> None:
    out.extend(w for w in words(text) if len(w) > 1 and w not in _PLAIN_STOP)


MEMO_LIMIT = 200_000  # memoized tokens and words per analyzer; the memo starts over past this


class _Segmented:
    """Segment text that has CJK characters; split the rest by the shared rule.

    The terms of a segmenter's token and the n-grams of a word depend on that string alone, and the
    same few thousand recur across a vault's notes: each is worked out once (``_memo``)."""

    what = ""

    def __init__(self) -> None:
        self._token_memo: dict[str, tuple[str, ...]] = {}
        self._word_memo: dict[str, tuple[str, ...]] = {}

    def __call__(self, text: str) -> list[str]:
        if not has_cjk(text):
            out: list[str] = []
            _plain_words(text, out)
            return out
        import unicodedata

        return self._terms(text, self._tokens(unicodedata.normalize("NFKC", text)))

    def many(self, texts: list[str]) -> list[list[str]]:
        """``[self(text) for text in texts]`` (a build's texts of this language; Korean overrides it)."""
        return [self(text) for text in texts]

    def _terms(self, text: str, tokens: Iterable[str]) -> list[str]:
        """The terms of ``text`` whose (NFKC) segmentation is ``tokens``."""
        out: list[str] = []
        token_memo, word_memo = self._token_memo, self._word_memo
        if len(token_memo) + len(word_memo) > MEMO_LIMIT:
            token_memo.clear()
            word_memo.clear()
        for token in tokens:
            terms = token_memo.get(token)
            if terms is None:
                terms = token_memo[token] = self._token_terms(token)
            out.extend(terms)
        for word in words(text):  # and the CJK runs' n-grams, for recall where segmentations differ
            if not word.isascii():
                grams = word_memo.get(word)
                if grams is None:
                    grams = word_memo[word] = self._word_ngrams(word)
                out.extend(grams)
        return out

    def without_dictionary(self, text: str) -> list[str]:
        """The terms of ``text`` the segmenter's dictionary plays no part in: the words outside CJK runs,
        split as ``self`` splits text without CJK, and the CJK runs' n-grams; nothing is loaded. (A hit's
        passages for a query in another script: ``auto.PassageAnalysis``.)"""
        if not has_cjk(text):
            return self(text)
        out: list[str] = []
        for word in words(text):
            for is_cjk, run in split_cjk(word) if not word.isascii() else ((False, word),):
                if is_cjk:
                    self._ngrams(run, out)
                elif len(run) > 1 and run not in _PLAIN_STOP:
                    out.append(run)
        return out

    def _token_terms(self, token: str) -> tuple[str, ...]:
        if has_cjk(token):
            return (token.lower(),)
        out: list[str] = []
        _plain_words(token, out)
        return tuple(out)

    def _word_ngrams(self, word: str) -> tuple[str, ...]:
        out: list[str] = []
        for is_cjk, run in split_cjk(word):
            if is_cjk:
                self._ngrams(run, out)
        return tuple(out)

    def _ngrams(self, run: str, out: list[str]) -> None:
        cjk_ngrams(run, out)

    def _tokens(self, text: str) -> Iterable[str]:
        raise NotImplementedError

    def load(self) -> None:
        """Load the segmenter now rather than on the first text in its script: its dictionary, and what the
        library sets up on its first text (Kiwi's model: over a second), with one word of that script."""
        raise NotImplementedError


@lru_cache(maxsize=1)
def _jieba() -> tuple[Callable[[str], Iterable[str]], frozenset[str]]:
    jieba = need("jieba", "chinese")
    jieba.setLogLevel(60)  # its dictionary-loading messages go to stderr otherwise
    tokenizer = jieba.Tokenizer()
    # Built from the packaged dictionary, never through jieba's cache file in the shared temp folder:
    # that file is read back unchecked (another user could plant one) and writing it is a write
    # outside the vault. Building it costs no more than loading the cache.
    with tokenizer.lock:
        tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
        tokenizer.initialized = True
    from vaulteval.index.langs.snowball import stopwords

    return tokenizer.cut_for_search, stopwords("zh")


class ChineseAnalyzer(_Segmented):
    what = "chinese"

    def load(self) -> None:
        list(_jieba()[0]("中文"))

    def _tokens(self, text: str) -> Iterable[str]:
        cut, stop = _jieba()
        return (t for t in cut(text) if t.strip() and t not in stop)


# UniDic parts of speech (pos1) that carry meaning.
_JA_CONTENT = frozenset({"名詞", "動詞", "形容詞", "形状詞", "副詞", "接頭辞", "接尾辞", "代名詞", "感動詞"})


@lru_cache(maxsize=1)
def _mecab():
    fugashi = need("fugashi", "japanese")
    need("unidic_lite", "japanese")
    return fugashi.Tagger()


class JapaneseAnalyzer(_Segmented):
    what = "japanese"

    def load(self) -> None:
        _mecab()("日本語")

    def _tokens(self, text: str) -> Iterable[str]:
        for word in _mecab()(text):
            feature = word.feature
            if getattr(feature, "pos1", None) not in _JA_CONTENT:
                if not has_cjk(word.surface):
                    yield word.surface  # Latin words and numbers: the shared split decides
                continue
            lemma = getattr(feature, "lemma", None) or word.surface
            # UniDic writes loanwords' lemmas as "ノート-note": keep the Japanese side.
            yield lemma.split("-", 1)[0] if lemma != "-" else word.surface


_KO_CONTENT = ("NNG", "NNP", "NR", "VV", "VA", "XR", "MAG", "SL", "SH", "SN")
_KO_KEEP: dict[str, bool] = {}  # Kiwi's tag -> whether its tokens are kept


@lru_cache(maxsize=2)
def _kiwi(workers: int | None = None):
    kiwipiepy = need("kiwipiepy", "korean")
    # Without the typo-correction and multi-word dictionaries: a third of the load time and memory,
    # and no token rewritten as a guessed correction. The worker threads change no token.
    options = {} if workers is None else {"num_workers": workers}
    return kiwipiepy.Kiwi(load_typo_dict=False, load_multi_dict=False, **options)


class KoreanAnalyzer(_Segmented):
    """``workers``: Kiwi's threads (None: one per core; a build's helper process, ``ahead``, takes one)."""

    what = "korean"

    def __init__(self, workers: int | None = None) -> None:
        super().__init__()
        self.workers = workers

    def _ngrams(self, run: str, out: list[str]) -> None:  # syllable bigrams (a lone syllable as itself)
        out.extend(run[i:i + 2] for i in range(len(run) - 1)) if len(run) > 1 else out.append(run)

    def many(self, texts: list[str]) -> list[list[str]]:
        """``[self(text) for text in texts]``, Kiwi given every Korean text in one call: it spreads them over
        its worker threads (one per core), the same tokens for each text as one call per text."""
        import unicodedata

        korean = [i for i, text in enumerate(texts) if has_cjk(text)]
        out = [self(text) if not has_cjk(text) else [] for text in texts]
        analyses = _kiwi(self.workers).tokenize([unicodedata.normalize("NFKC", texts[i]) for i in korean])
        for i, tokens in zip(korean, analyses):
            out[i] = self._terms(texts[i], self._kept(tokens))
        return out

    def load(self) -> None:
        _kiwi(self.workers).tokenize("한국어")

    def _tokens(self, text: str) -> Iterable[str]:
        return self._kept(_kiwi(self.workers).tokenize(text))

    def _kept(self, tokens: Iterable) -> Iterable[str]:
        keep = _KO_KEEP
        for token in tokens:
            tag = token.tag
            kept = keep.get(tag)
            if kept is None:  # irregular verbs are tagged VV-I, VA-R, ...
                kept = keep[tag] = str(tag).split("-", 1)[0] in _KO_CONTENT
            if kept:
                yield token.form
