"""The index settings of a pipeline and a strategy: analyzer, BM25 parameters, chunking and prefixes, with their schema.

Usage::

    settings = IndexSettings(analyzer="english", stemmer="porter", k1=1.2)
    settings.index_analyzer      # "english:stemmer=porter", the name the index is built with
    settings.build_key           # what a chunk set and index depend on (k1 and b need no rebuild)
    IndexSettings.from_settings(built_index_settings(vault))   # a built index's own settings

``INDEX_PARAMS`` are the strategy keys these settings are written with
(``vaulteval.workbench.strategy``); one validator (``vaulteval.index.params``)
checks BM25 and chunk sizes everywhere.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from vaulteval.chunks import chunking
from vaulteval.errors import UsageError
from vaulteval.index import analysis, bm25
from vaulteval.index.analyzers import STEMMERS, STOPLISTS
from vaulteval.index.params import MAX_K1, check_bm25_params, check_chunk_params, max_hard_max
from vaulteval.pipeline.stages.params import Param

if TYPE_CHECKING:
    from vaulteval.chunks.store import ChunkParams

PREFIXES = ("provisioned", "synthetic")
LANGUAGE_OPTION = ("default", "yes", "no")
_CHUNKS = f"`0 ≤ overlap < target ≤ hard_max`, `50 ≤ target`, `hard_max ≤ {max_hard_max()}`"
INDEX_PARAMS = (
    # No fixed choices: any head of the analyzer registry (analysis.NAMES, read when checked) is valid.
    Param("analyzer", str, "default", "[analyzer](index-format.md#analyzers)",
          note=f"the analyzer registry's names ({', '.join(f'`{a}`' for a in analysis.NAMES)} today)"),
    Param("stemmer", str, "snowball", "the English stemmer (both from PyStemmer)", choices=STEMMERS,
          note="only with `analyzer=english`"),
    Param("stopwords", str, "short", "the default analyzer's short list, or the English stop set of Apache "
          "Lucene's `EnglishAnalyzer` (33 words)", choices=STOPLISTS,
          note="only with `analyzer=english`; a Snowball language analyzer "
          "takes `none` (its list is the `stop-words` package's)"),
    Param("fold", str, "default", "accent folding (`default`: the language's own choice, on for Spanish, "
          "Portuguese, French, Italian, Catalan, Romanian)", choices=LANGUAGE_OPTION,
          note="only with a language analyzer (`spanish`, ...)"),
    Param("compounds", str, "default", "compound splitting (`default`: on)", choices=LANGUAGE_OPTION,
          note="only with `german`, `dutch`, `swedish`"),
    Param("k1", float, bm25.K1, "BM25 term-frequency saturation", low=0.0, high=MAX_K1),
    Param("b", float, bm25.B, "BM25 length normalisation", low=0.0, high=1.0),
    Param("target", int, chunking.TARGET_CHARS, "chunk size to aim for, in characters", note=_CHUNKS),
    Param("overlap", int, chunking.OVERLAP_CHARS, "characters repeated from the previous chunk", note="(same rule)"),
    Param("hard_max", int, chunking.HARD_MAX_CHARS, "longest chunk", note="(same rule)"),
    Param("prefix", str, "provisioned", "which contextual prefixes, see below", choices=PREFIXES),
)


class IndexSettingsError(UsageError):
    """An index setting is out of range, or two do not fit together."""


@dataclass(frozen=True)
class IndexSettings:
    """What the index a strategy runs on is built and scored with."""

    analyzer: str = "default"
    stemmer: str = "snowball"
    stopwords: str = "short"
    fold: str = "default"
    compounds: str = "default"
    k1: float = bm25.K1
    b: float = bm25.B
    target: int = chunking.TARGET_CHARS
    overlap: int = chunking.OVERLAP_CHARS
    hard_max: int = chunking.HARD_MAX_CHARS
    prefix: str = "provisioned"

    def __post_init__(self) -> None:
        try:
            check_bm25_params(self.k1, self.b)
            check_chunk_params(self.target, self.overlap, self.hard_max)
        except UsageError as exc:
            raise IndexSettingsError(f"strategy: {exc}") from None
        try:
            normal = {p.name: p.check(getattr(self, p.name)) for p in INDEX_PARAMS}
        except UsageError as exc:
            raise IndexSettingsError(str(exc)) from None
        for key, value in normal.items():
            object.__setattr__(self, key, value)  # normal types and names
        if self.analyzer not in analysis.NAMES:
            raise IndexSettingsError(f"analyzer must be one of {', '.join(analysis.NAMES)}, got {self.analyzer!r}")
        language = analysis.language_of_head(self.analyzer) is not None
        language_stopwords = self.stopwords == "none" and language
        if (self.stemmer, "short" if language_stopwords else self.stopwords) != ("snowball", "short") \
                and self.analyzer != "english":
            raise IndexSettingsError("stemmer= and stopwords= need analyzer=english (a language analyzer takes "
                                     "stopwords=none)")
        if (self.fold, self.compounds) != ("default", "default") or language_stopwords:
            from vaulteval.index.langs.registry import LanguageNameError, parse

            if not language:
                raise IndexSettingsError("fold= and compounds= need a language analyzer (german, spanish, ...)")
            try:
                parse(self.index_analyzer)
            except LanguageNameError as exc:
                raise IndexSettingsError(f"strategy: {exc}") from None

    @property
    def index_analyzer(self) -> str:
        """The analyzer the index must be built with: ``english:stemmer=porter`` etc. for the english options."""
        keys = analysis.option_keys(self.analyzer)
        return analysis.compose(self.analyzer, {k: getattr(self, k) for k in keys}) if keys else self.analyzer

    @property
    def build_key(self) -> str:
        """What a chunk set + index depends on (k1/b are applied to an index without a rebuild)."""
        return f"{self.index_analyzer}-t{self.target}-o{self.overlap}-h{self.hard_max}-{self.prefix}"

    @property
    def chunk_params(self) -> "ChunkParams":
        from vaulteval.chunks.store import ChunkParams

        return ChunkParams(self.target, self.overlap, self.hard_max)

    def settings(self) -> dict[str, Any]:
        """What the vault's own index must be built with to rank like this."""
        return {"analyzer": self.index_analyzer, "k1": self.k1, "b": self.b, "target": self.target,
                "overlap": self.overlap, "hard_max": self.hard_max}

    @classmethod
    def from_settings(cls, built: dict[str, Any]) -> "IndexSettings":
        """The settings of a built index (``analyzer`` is an index analyzer name such as ``english:stemmer=porter``)."""
        values = {k: built[k] for k in ("k1", "b", "target", "overlap", "hard_max")
                  if isinstance(built.get(k), (int, float))}
        analyzer = str(built.get("analyzer") or "default")
        if ":" in analyzer:  # a head with options: the registry reads them back as settings
            values.update(analysis.lookup(analyzer).settings())
            analyzer = analysis.head_of(analyzer)
        return cls(analyzer=analyzer, **values)


# -- The index settings a pipeline names (``pipeline.spec.Pipeline.index``) ------------------------------------
ANALYZER_KEYS = frozenset({"analyzer", "stemmer", "stopwords", "fold", "compounds"})  # together: the index analyzer
_SCHEMA = {p.name: p for p in INDEX_PARAMS}


def read_named(left: dict[str, str], context: str, others: str) -> dict[str, Any]:
    """The index settings among a pipeline string's leftover keys, read by their schema; any other key is refused
    (``others``: what else the string takes, for the message)."""
    unknown = [k for k in left if k not in _SCHEMA]
    if unknown:
        raise UsageError(f"{context}unknown key {unknown[0]!r} (a pipeline takes {others} the index settings "
                         f"{', '.join(_SCHEMA)})")
    return {k: _SCHEMA[k].read(v, context) for k, v in left.items()}


def named(index: Any) -> tuple[tuple[str, Any], ...]:
    """The named settings (a mapping, or ``(key, value)`` pairs) checked together (``IndexSettings``) and
    normalized, in ``INDEX_PARAMS`` order."""
    if isinstance(index, tuple):
        index = dict(index)
    if not isinstance(index, dict):
        raise UsageError(f"a pipeline's index must be an object of index settings, got {type(index).__name__}")
    unknown = sorted(set(index) - set(_SCHEMA))
    if unknown:
        raise UsageError(f"unknown index setting {unknown[0]!r}: one of {', '.join(_SCHEMA)}")
    try:
        settings = IndexSettings(**index)
    except TypeError as exc:
        raise UsageError(f"index settings are malformed: {exc}") from None
    return tuple((p.name, getattr(settings, p.name)) for p in INDEX_PARAMS if p.name in index)


def items_of(pairs: tuple[tuple[str, Any], ...]) -> list[str]:
    """``key=value`` items of named settings, as the strategy grammar writes them."""
    return [f"{key}={_SCHEMA[key].text(value)}" for key, value in pairs]


def refuse_other_index(pairs: tuple[tuple[str, Any], ...], built: dict[str, Any], text: str) -> None:
    """One UsageError when the named settings are not those the vault's index was built with (``built``: its
    header's, compared, never trusted); nothing to compare without an index (retrieval then says so itself)."""
    if not built.get("analyzer"):
        return
    names = dict(pairs)
    own = {"analyzer": built.get("analyzer"), "prefix": "provisioned",
           **{k: built.get(k) for k in ("k1", "b", "target", "overlap", "hard_max")}}
    wanted = [("analyzer", IndexSettings(**names).index_analyzer)] if names.keys() & ANALYZER_KEYS else []
    wanted += [(k, v) for k, v in pairs if k not in ANALYZER_KEYS]
    for key, value in wanted:
        if own[key] != value:
            fix = (f"or rebuild it with vaulteval provision --analyzer {value}" if key == "analyzer" else
                   "eval run compares such settings on indexes of their own")
            raise UsageError(f"pipeline {text!r} names {key}={value}, but the vault's index is built with "
                             f"{key}={own[key]}: drop {key}= to run on the vault's index ({fix})")
