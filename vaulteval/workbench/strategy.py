"""Retrieval strategies: the first stage, the reranker, the index settings and the depth of one evaluated run.

Usage::

    s = Strategy.parse("hybrid:cc,alpha=0.3,analyzer=english")
    s.first, s.reranker, s.index     # Hybrid('hybrid:cc,alpha=0.3'), None, IndexSettings(analyzer='english', ...)
    s.name                           # "hybrid-cc-english-alpha=0.3"
    Strategy.parse(s.text()) == s and Strategy.from_dict(s.to_dict()) == s

A strategy string is ``KIND[:ITEM,...]``: KIND names a first stage or a
reranker of the stage registry (``vaulteval.pipeline.stages``); the items are
that stage's option and keys, and the strategy's own keys (``STRATEGY_PARAMS``:
name, index settings, depth). A reranker's string also takes the keys of the
first stage it reranks; ``dense`` and ``hybrid`` take the reranker as the key
``rerank=st`` (``hybrid:cc,rerank=st``), the form tune.json and .vaulteval.json
keep. docs/strategies.md and ``eval run --help`` are made
from the same schemas (``vaulteval.workbench.strategydoc``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from vaulteval.errors import UsageError
from vaulteval.pipeline.stages import registry
from vaulteval.pipeline.stages.params import Param
from vaulteval.pipeline.indexsettings import INDEX_PARAMS, PREFIXES, IndexSettings  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from vaulteval.chunks.store import ChunkParams
    from vaulteval.pipeline.spec import Pipeline
    from vaulteval.pipeline.stages.registry import FirstStage, Reranker

FORMAT = 2  # of to_dict(); format 1 (vaulteval 0.1) was one flat record of 23 fields, still read
DEPTH_PARAMS = (
    Param("bm25_top", int, 100, "first-stage candidate chunks per query (also the dense depth)", low=1, high=1000),
    Param("top", int, 100, "pages kept per query after dedupe (the depth of the run)", low=1, high=1000),
)
NAME_PARAM = Param("name", str, "", "label of the run in every table, and its TREC file name `<name>.trec`",
                   default_text="generated, see [Names](#names)", note="letters, digits, `. _ = + -`")
STRATEGY_PARAMS = (NAME_PARAM, *INDEX_PARAMS, *DEPTH_PARAMS)
_SCHEMA = {p.name: p for p in STRATEGY_PARAMS}
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._=+-]+")


class StrategyError(UsageError):
    """A strategy string or field is not valid."""


def _checked(params: tuple[Param, ...], values: dict[str, Any]) -> dict[str, Any]:
    try:
        return {p.name: p.check(values[p.name]) for p in params}
    except UsageError as exc:
        raise StrategyError(str(exc)) from None


def _default_first() -> "FirstStage":
    return registry.stage("bm25")()


@dataclass(frozen=True)
class Strategy:
    """Everything that decides a ranking; frozen and hashable (``key`` ignores the display name)."""

    first: "FirstStage" = field(default_factory=_default_first)
    reranker: "Reranker | None" = None
    index: IndexSettings = IndexSettings()
    bm25_top: int = 100
    top: int = 100
    name: str = ""

    def __post_init__(self) -> None:
        if getattr(self.first, "role", None) != "first":
            raise StrategyError(f"the first stage must be one of {', '.join(registry.kinds())}, got {self.first!r}")
        if self.reranker is not None and (self.reranker.role != "rerank" or self.first.name not in self.reranker.runs_over):
            raise StrategyError(f"{self.reranker.name} runs over {self.reranker.over} candidates; it cannot be "
                                f"combined with {self.first.text()}")
        depth = _checked(DEPTH_PARAMS, {"bm25_top": self.bm25_top, "top": self.top})
        object.__setattr__(self, "bm25_top", depth["bm25_top"])
        object.__setattr__(self, "top", depth["top"])
        if not self.name:
            object.__setattr__(self, "name", self.default_name())
        if not isinstance(self.name, str) or _SAFE_NAME.search(self.name):
            raise StrategyError(f"strategy name {self.name!r} may hold only letters, digits and . _ = + -")

    # -- identity -------------------------------------------------------------
    @property
    def key(self) -> tuple:
        """Usage: ``runs[s.key]``: the parameters, without the display name."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "name")

    @property
    def kind(self) -> str:
        return self.reranker.head() if self.reranker is not None else self.first.head()

    @property
    def index_analyzer(self) -> str:
        return self.index.index_analyzer

    @property
    def build_key(self) -> str:
        return self.index.build_key

    @property
    def chunk_params(self) -> "ChunkParams":
        return self.index.chunk_params

    def first_stage(self) -> "FirstStage":
        return self.first

    @property
    def pipeline(self) -> "Pipeline":
        """The pipeline this strategy runs (first stage, reranker, depth, and the index settings off their
        defaults, which the workbench builds its index with), as retrieve and the MCP server take it."""
        from vaulteval.pipeline.spec import Pipeline

        index = tuple((p.name, getattr(self.index, p.name)) for p in INDEX_PARAMS
                      if getattr(self.index, p.name) != p.default)
        return Pipeline(self.first, self.reranker, self.bm25_top, index)

    @property
    def semantic(self) -> bool:
        """True when a stage matches meaning with a model (as the stages declare it)."""
        return self.first.semantic or (self.reranker is not None and self.reranker.semantic)

    def retrieve_text(self) -> str:
        """Usage: ``s.retrieve_text()`` -> the ``retrieve --strategy`` string of this first stage."""
        return self.first.text()

    def index_settings(self) -> dict[str, Any]:
        """Usage: ``s.index_settings()`` -> what the vault's own index must be built with to rank as ``s``."""
        return self.index.settings()

    def default_name(self) -> str:
        """``kind[-option][-model]``, then every key off its default (stemmer and stopwords last)."""
        if self.reranker is not None:
            parts = [self.reranker.head(), self.reranker.text().partition(":")[2].split(",")[0]]
            if self.first.name != self.reranker.over:
                parts[:1] = [self.first.label.split("+")[0].replace(":", "-"), self.reranker.head()]
            if self.reranker.values.get("model"):
                parts.append(_SAFE_NAME.sub("-", self.reranker["model"].rsplit("/", 1)[-1]))
        else:
            parts = [self.first.label.split("+")[0].replace(":", "-")]
        last = []
        for p in INDEX_PARAMS:
            value = getattr(self.index, p.name)
            if value != p.default:
                text = p.text(value) if p.name in ("analyzer", "prefix") else f"{p.name}={p.text(value)}"
                (last if p.name in ("stemmer", "stopwords") else parts).append(text)
        parts += [f"{p.name}={getattr(self, p.name)}" for p in DEPTH_PARAMS if getattr(self, p.name) != p.default]
        return "-".join(parts + self.first.items() + last)

    def value(self, key: str) -> Any:
        """Usage: ``s.value("k1")``: any key of the strategy string (index, depth, name or first-stage key)."""
        if key in _SCHEMA:
            return getattr(self.index, key) if hasattr(self.index, key) else getattr(self, key)
        return self.first[key]

    @classmethod
    def of(cls, kind: str = "bm25", **keys: Any) -> "Strategy":
        """Usage: ``Strategy.of(analyzer="english", k1=1.2, w_title=2)``: a first stage's strategy from values."""
        own = {k: v for k, v in keys.items() if k in _SCHEMA}
        try:
            first = registry.stage(kind)(**{k: v for k, v in keys.items() if k not in _SCHEMA})
            index = IndexSettings(**{p.name: own[p.name] for p in INDEX_PARAMS if p.name in own})
        except UsageError as exc:
            raise StrategyError(str(exc)) from None
        return cls(first=first, index=index, **{k: v for k, v in own.items() if not hasattr(IndexSettings, k)})

    # -- text and (de)serialisation -------------------------------------------
    def text(self) -> str:
        """The strategy string that parses back to this strategy."""
        reranks_default = self.reranker is not None and self.first.name == self.reranker.over
        head = self.reranker.text() if reranks_default else self.first.text()
        items = self.first.items() if reranks_default else []
        items += [f"{p.name}={p.text(getattr(self.index, p.name))}" for p in INDEX_PARAMS
                  if getattr(self.index, p.name) != p.default]
        if self.reranker is not None and not reranks_default:
            items += self.reranker.as_key_items()  # hybrid:cc,analyzer=english,rerank=st (as tune.json keeps it)
        items += [f"{p.name}={getattr(self, p.name)}" for p in DEPTH_PARAMS if getattr(self, p.name) != p.default]
        if self.name != self.default_name():
            items.append(f"name={self.name}")
        return ",".join([head, *items]) if ":" in head or not items else f"{head}:{','.join(items)}"

    @classmethod
    def parse(cls, text: str) -> "Strategy":
        """Usage: ``Strategy.parse("rerank:st,bm25_top=20")``; the grammar is in docs/strategies.md."""
        from vaulteval.pipeline.spec import parse_stages

        try:
            first, reranker, left = parse_stages(text)
            unknown = [k for k in left if k not in _SCHEMA]
            if unknown:
                raise StrategyError(f"{text!r}: unknown key {unknown[0]!r}; see vaulteval eval run --help")
            own = {k: _SCHEMA[k].read(v, f"{text!r}: ") for k, v in left.items()}
            index = IndexSettings(**{p.name: own[p.name] for p in INDEX_PARAMS if p.name in own})
        except StrategyError:
            raise
        except UsageError as exc:
            raise StrategyError(str(exc)) from None
        return cls(first=first, reranker=reranker, index=index, name=own.get("name", ""),
                   **{p.name: own[p.name] for p in DEPTH_PARAMS if p.name in own})

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "name": self.name, "first": self.first.to_dict(),
                "rerank": self.reranker.to_dict() if self.reranker is not None else None,
                "index": asdict(self.index), "bm25_top": self.bm25_top, "top": self.top}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Strategy":
        """A strategy from ``to_dict()`` (this format only; a record of another one is refused)."""
        if not isinstance(data, dict):
            raise StrategyError(f"a strategy must be a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise StrategyError(f"strategy format {str(data.get('format'))[:40]} is not one this vaulteval reads "
                                f"(format {FORMAT} only): run `vaulteval eval run` again")
        unknown = sorted(set(data) - {"format", "name", "first", "rerank", "index", "bm25_top", "top"})
        if unknown:
            raise StrategyError(f"unknown strategy field(s) {', '.join(unknown)}")
        try:
            reranker = None if data.get("rerank") is None else _stage(data["rerank"])
            return cls(first=_stage(data.get("first")), reranker=reranker,
                       index=IndexSettings(**data.get("index", {})), bm25_top=data.get("bm25_top", 100),
                       top=data.get("top", 100), name=data.get("name", ""))
        except StrategyError:
            raise
        except (UsageError, TypeError, ValueError, AttributeError) as exc:
            raise StrategyError(f"strategy settings are malformed: {exc}") from None

    def with_name(self, name: str) -> "Strategy":
        return replace(self, name=name)

    def with_remote_ollama(self, allowed: bool) -> "Strategy":
        """The same strategy with the user's --allow-remote-ollama decision applied to its reranker."""
        if self.reranker is None or getattr(self.reranker, "allow_remote", allowed) == allowed:
            return self
        return replace(self, reranker=self.reranker.with_allow_remote(allowed))

    def with_rerank_host(self, host: str) -> "Strategy":
        """The same strategy with its reranker's host filled in where it has none (a Dask worker's own environment
        must not pick it)."""
        reranker = self.reranker.with_default_host(host)
        return self if reranker is self.reranker else replace(self, reranker=reranker)


def _stage(data: Any) -> Any:
    from vaulteval.pipeline.spec import stage_from_dict

    try:
        return stage_from_dict(data)
    except UsageError as exc:
        raise StrategyError(str(exc)) from None


DEFAULT_WORD = "default"


def default_strategy(vault: Any, *, tuned: bool = True) -> Strategy:
    """The strategy named ``default``: the pipeline ``retrieve`` runs on ``vault`` with no ``--strategy`` (the tuned
    one when ``tuned`` and ``.vaulteval.json`` holds one), on the vault's own index settings.

    Untuned (``tuned=False``): the vault's default pipeline, on the index settings provision builds with nothing
    tuned when the tuned entry chose the index's (a forced pick's analyzer is no baseline either)."""
    from vaulteval.pipeline.spec import default_analyzer, default_pipeline, vault_pipeline
    from vaulteval.pipeline.tuned import built_index_settings, tuned_index

    pipeline = vault_pipeline(vault)[0] if tuned else default_pipeline(vault)
    untuned_index = not tuned and tuned_index(vault) is not None
    index = IndexSettings(analyzer=default_analyzer()) if untuned_index else \
        IndexSettings.from_settings(built_index_settings(vault))
    return Strategy(first=pipeline.first, reranker=pipeline.reranker, bm25_top=pipeline.depth, index=index,
                    name=DEFAULT_WORD)

