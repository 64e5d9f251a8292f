"""Retrieval strategies: the parameters one evaluated run is made with.

Usage::

    s = Strategy.parse("bm25:analyzer=english,k1=1.2")
    s.name            # "bm25-english-k1=1.2"
    Strategy.from_dict(s.to_dict()) == s

Grammar of a strategy string (``--strategy`` on the command line)::

    KIND[:OPTION,KEY=VALUE,...]
    KIND     bm25 | rerank | dense | hybrid
    OPTION   rerank: the backend: ollama (default) | st | sentence-transformers
             hybrid: the fusion: rrf (default) | cc
             dense and hybrid: rerank=st|ollama reranks their candidates as rerank does BM25's
    KEY      name, analyzer (default|english), stemmer (snowball|porter|none) and
             stopwords (seed|lucene|none) with analyzer=english, k1, b, target, overlap,
             hard_max, prefix (provisioned|synthetic), bm25_top (also the dense depth), top,
             field weights w_title, w_aliases, w_headings, w_code (0) and w_body (1),
             hybrid: k (60), w_bm25, w_dense (1) for rrf, alpha (0.5) for cc,
             and for rerank: model, host, timeout, batch_size
             (a non-local host also needs --allow-remote-ollama on the command)

Examples: ``bm25``, ``bm25:analyzer=english,k1=1.2,b=0.6``, ``bm25:target=800,overlap=100``,
``rerank:st``, ``rerank:ollama,model=nomic-embed-text-v2-moe,bm25_top=20``, ``dense``,
``hybrid:rrf,analyzer=english``, ``hybrid:cc,alpha=0.3``, ``bm25:w_title=2,w_aliases=2``.
Dense and hybrid use the vault's stored embeddings (``provision --embed``) and
embed each query with the store's model.

Evaluation depth defaults to ``bm25_top=100, top=100`` so @10 and @100 measures
see a full list; ``bm25:bm25_top=20,top=5`` measures exactly what ``vaulteval
retrieve`` hands an agent by default. ``prefix=provisioned`` uses the chunks the
index was built from (synthetic ones when a variant is built in the cache);
``prefix=synthetic`` insists on synthetic prefixes.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from vaulteval.index import bm25
from vaulteval.chunks import chunking
from vaulteval.errors import UsageError
from vaulteval.index.params import check_bm25_params, check_chunk_params
from vaulteval.index.analyzers import english_analyzer_name
from vaulteval.index.tokenize import ANALYZERS

if TYPE_CHECKING:
    from vaulteval.chunks.store import ChunkParams
    from vaulteval.pipeline.firststage import FirstStage
    from vaulteval.rerank.stage import RerankConfig

PREFIXES = ("provisioned", "synthetic")
KINDS = ("bm25", "rerank", "dense", "hybrid")
FIRST_STAGES = ("bm25", "dense", "hybrid:rrf", "hybrid:cc")
_BACKENDS = {"st": "sentence-transformers", "sentence-transformers": "sentence-transformers", "ollama": "ollama"}
# No allow_remote key: a remote Ollama is allowed only by the --allow-remote-ollama flag.
_RERANK_KEYS = {"model": str, "host": str, "timeout": float, "batch_size": int}
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._=+-]+")


class StrategyError(UsageError):
    """A strategy string or field is not valid."""


@dataclass(frozen=True)
class Strategy:
    """Everything that decides a ranking; frozen and hashable (``key`` ignores the display name)."""

    name: str = ""
    analyzer: str = "default"
    k1: float = bm25.K1
    b: float = bm25.B
    target: int = chunking.TARGET_CHARS
    overlap: int = chunking.OVERLAP_CHARS
    hard_max: int = chunking.HARD_MAX_CHARS
    prefix: str = "provisioned"
    bm25_top: int = 100
    top: int = 100
    rerank: "RerankConfig | None" = None
    first: str = "bm25"  # bm25 | dense | hybrid:rrf | hybrid:cc (see vaulteval.pipeline.firststage)
    rrf_k: float = 60.0
    w_bm25: float = 1.0
    w_dense: float = 1.0
    alpha: float = 0.5
    w_title: float = 0.0
    w_aliases: float = 0.0
    w_headings: float = 0.0
    w_code: float = 0.0
    w_body: float = 1.0
    stemmer: str = "snowball"
    stopwords: str = "seed"

    def __post_init__(self) -> None:
        if self.analyzer not in ANALYZERS:
            raise StrategyError(f"analyzer must be one of {', '.join(ANALYZERS)}, got {self.analyzer!r}")
        if (self.stemmer, self.stopwords) != ("snowball", "seed") and self.analyzer != "english":
            raise StrategyError("stemmer= and stopwords= need analyzer=english")
        if self.first not in FIRST_STAGES:
            raise StrategyError(f"first stage must be one of {', '.join(FIRST_STAGES)}, got {self.first!r}")
        try:
            self.first_stage()
            if self.analyzer == "english":
                english_analyzer_name(self.stemmer, self.stopwords)
        except (UsageError, ValueError) as exc:
            raise StrategyError(str(exc)) from None
        if self.prefix not in PREFIXES:
            raise StrategyError(f"prefix must be one of {', '.join(PREFIXES)}, got {self.prefix!r}")
        try:
            check_bm25_params(self.k1, self.b)
            check_chunk_params(self.target, self.overlap, self.hard_max)
        except UsageError as exc:
            raise StrategyError(f"strategy: {exc}") from None
        for label, value in (("bm25_top", self.bm25_top), ("top", self.top)):
            if not 1 <= value <= 1000:
                raise StrategyError(f"{label} must be from 1 to 1000, got {value}")
        if not self.name:
            object.__setattr__(self, "name", self.default_name())
        if _SAFE_NAME.search(self.name):
            raise StrategyError(f"strategy name {self.name!r} may hold only letters, digits and . _ = + -")

    # -- identity -------------------------------------------------------------
    @property
    def key(self) -> tuple:
        """Usage: ``runs[s.key]``: the parameters, without the display name."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "name")

    @property
    def build_key(self) -> str:
        """What a chunk set + index depends on (k1/b are applied to an index without a rebuild)."""
        return f"{self.index_analyzer}-t{self.target}-o{self.overlap}-h{self.hard_max}-{self.prefix}"

    @property
    def index_analyzer(self) -> str:
        """The analyzer the index must be built with: ``english:stemmer=porter`` etc. for the english options."""
        if self.analyzer != "english":
            return self.analyzer
        return english_analyzer_name(self.stemmer, self.stopwords)

    def first_stage(self) -> "FirstStage":
        """The pipeline's first stage for this strategy (BM25, field-weighted BM25, dense or hybrid)."""
        from vaulteval.pipeline.firststage import FirstStage, field_weights

        kind, _, fusion = self.first.partition(":")
        weights = {"title": self.w_title, "aliases": self.w_aliases, "headings": self.w_headings,
                   "code": self.w_code, "body": self.w_body}
        return FirstStage(kind=kind, fusion=fusion or "rrf", rrf_k=self.rrf_k, w_bm25=self.w_bm25,
                          w_dense=self.w_dense, alpha=self.alpha, fields=field_weights(weights))

    @property
    def chunk_params(self) -> "ChunkParams":
        from vaulteval.chunks.store import ChunkParams

        return ChunkParams(self.target, self.overlap, self.hard_max)

    @property
    def kind(self) -> str:
        return "rerank" if self.rerank is not None else self.first.partition(":")[0]

    def default_name(self) -> str:
        parts = [self.first.replace(":", "-") if self.rerank is None else self.kind]
        if self.rerank is not None and self.first != "bm25":
            parts = [self.first.replace(":", "-"), "rerank"]
        if self.rerank is not None:
            parts.append("st" if self.rerank.backend == "sentence-transformers" else self.rerank.backend)
            if self.rerank.model:
                parts.append(_SAFE_NAME.sub("-", self.rerank.model.rsplit("/", 1)[-1]))
        for f in fields(self):
            if f.name in ("name", "rerank", "first") or getattr(self, f.name) == f.default:
                continue
            value = getattr(self, f.name)
            parts.append(str(value) if f.name in ("analyzer", "prefix") else f"{f.name}={_fmt(value)}")
        return "-".join(parts)

    # -- (de)serialisation ----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "rerank"}
        out["rerank"] = asdict(self.rerank) if self.rerank is not None else None
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Strategy":
        data = dict(data)
        rerank = data.pop("rerank", None)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise StrategyError(f"unknown strategy field(s) {', '.join(unknown)}")
        try:
            if rerank is not None:
                from vaulteval.rerank.stage import RerankConfig

                rerank = RerankConfig(**rerank)
            return cls(**data, rerank=rerank)
        except (TypeError, ValueError) as exc:
            raise StrategyError(f"strategy settings are malformed: {exc}") from None

    @classmethod
    def parse(cls, text: str) -> "Strategy":
        """Usage: ``Strategy.parse("rerank:st,bm25_top=20")``; see the module docstring for the grammar."""
        kind, _, rest = text.strip().partition(":")
        if kind not in KINDS:
            raise StrategyError(f"strategy {text!r} must start with {', '.join(KINDS)} (e.g. bm25:analyzer=english)")
        values: dict[str, Any] = {}
        if kind in ("dense", "hybrid"):
            values["first"] = "dense" if kind == "dense" else "hybrid:rrf"
        rerank: dict[str, Any] = {}
        for i, item in enumerate(p.strip() for p in rest.split(",") if p.strip()):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq:
                if kind == "rerank" and i == 0 and key in _BACKENDS:
                    rerank["backend"] = _BACKENDS[key]
                    continue
                if kind == "hybrid" and i == 0 and key in ("rrf", "cc"):
                    values["first"] = f"hybrid:{key}"
                    continue
                raise StrategyError(f"{text!r}: expected KEY=VALUE, got {item!r}")
            if kind in ("dense", "hybrid") and key == "rerank":
                if value.strip() not in _BACKENDS:
                    raise StrategyError(f"{text!r}: rerank={value.strip()!r}; use {', '.join(_BACKENDS)}")
                rerank["backend"] = _BACKENDS[value.strip()]
            elif kind in ("rerank", "dense", "hybrid") and key in _RERANK_KEYS:
                rerank[key] = _convert(text, key, value.strip(), _RERANK_KEYS[key])
            elif key in _FIELD_TYPES:
                values[_RENAMED.get(key, key)] = _convert(text, key, value.strip(), _FIELD_TYPES[key])
            else:
                raise StrategyError(f"{text!r}: unknown key {key!r}; see vaulteval eval run --help")
        if kind != "rerank" and rerank and "backend" not in rerank:
            raise StrategyError(f"{text!r}: {', '.join(rerank)} set the reranker; add rerank=st or rerank=ollama")
        if kind == "rerank" or rerank:
            from vaulteval.rerank.stage import RerankConfig

            values["rerank"] = RerankConfig(**rerank)
        return cls(**values)

    def retrieve_text(self) -> str:
        """Usage: ``s.retrieve_text()`` -> the ``retrieve --strategy`` string of this first stage."""
        items = []
        for key, value, default in (("k", self.rrf_k, 60.0), ("w_bm25", self.w_bm25, 1.0),
                                    ("w_dense", self.w_dense, 1.0), ("alpha", self.alpha, 0.5),
                                    ("w_title", self.w_title, 0.0), ("w_aliases", self.w_aliases, 0.0),
                                    ("w_headings", self.w_headings, 0.0), ("w_code", self.w_code, 0.0),
                                    ("w_body", self.w_body, 1.0)):
            if value != default:
                items.append(f"{key}={_fmt(value)}")
        if not items:
            return self.first
        return f"{self.first}{',' if ':' in self.first else ':'}{','.join(items)}"

    def index_settings(self) -> dict[str, Any]:
        """Usage: ``s.index_settings()`` -> what the vault's own index must be built with to rank as ``s``."""
        return {"analyzer": self.index_analyzer, "k1": self.k1, "b": self.b, "target": self.target,
                "overlap": self.overlap, "hard_max": self.hard_max}

    def with_name(self, name: str) -> "Strategy":
        return replace(self, name=name)

    def with_remote_ollama(self, allowed: bool) -> "Strategy":
        """The same strategy with the user's --allow-remote-ollama decision applied to its reranker."""
        if self.rerank is None or self.rerank.allow_remote == allowed:
            return self
        return replace(self, rerank=replace(self.rerank, allow_remote=allowed))


_FIELD_TYPES: dict[str, type] = {"name": str, "analyzer": str, "k1": float, "b": float, "target": int,
                                 "overlap": int, "hard_max": int, "prefix": str, "bm25_top": int, "top": int,
                                 "k": float, "w_bm25": float, "w_dense": float, "alpha": float,
                                 "w_title": float, "w_aliases": float, "w_headings": float, "w_code": float,
                                 "w_body": float, "stemmer": str, "stopwords": str}
_RENAMED = {"k": "rrf_k"}


def _convert(text: str, key: str, value: str, kind: type) -> Any:
    try:
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        return kind(value)
    except ValueError:
        raise StrategyError(f"{text!r}: {key}={value!r} is not a valid {kind.__name__}") from None


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
