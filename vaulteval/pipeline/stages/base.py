"""The stage protocols: ``Stage`` (a name, a parameter schema and values), ``FirstStage`` and ``Reranker``.

Usage::

    @register
    class Dense(FirstStage):
        name = "dense"
        needs = frozenset({"dense"})
        def run(self, retriever, query, depth, cache_path): ...

Each stage is one class in one module of this folder, listed in
``FIRST_STAGE_MODULES`` or ``RERANKER_MODULES`` (``vaulteval.pipeline.stages``); ``register``
adds it under its name. A stage names
itself (``name``), says what it needs (``needs``: ``"bm25"`` for the index,
``"dense"`` for the stored embeddings), proposes settings for ``tune``
(``tune_grid``), may take one bare leading item (``option``, e.g. hybrid's
fusion) and ``params``. A stage that ``refines`` another is written under the
other's name and chosen by its first parameter (``bm25:prf=10``), or, when it
has a ``selector``, by that bare leading item (``rerank:cross,model=PATH``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from vaulteval.errors import UsageError
from vaulteval.pipeline.results import Ranking  # noqa: F401  (what a first stage returns)
from vaulteval.pipeline.stages.params import Param

STAGES: dict[str, type] = {}  # name -> stage class, filled by register()


class Stage:
    """A registered stage with its parameter values (read-only); equal and hashable by (name, values)."""

    name = ""
    role = "first"  # "first" (a FirstStage) or "rerank" (a Reranker)
    summary = ""
    option: Param | None = None  # one bare leading item: hybrid's fusion, the reranker's backend
    params: tuple[Param, ...] = ()
    needs: frozenset[str] = frozenset()  # "bm25": the BM25 index; "dense": the stored embeddings (provision --embed)
    tune_grid: tuple[str, ...] = ()  # items of the settings `tune` tries by default ("" = the defaults)
    refines = ""  # the stage whose name this one is written under (bm25:prf=K, rerank:cross)
    selector = ""  # the bare leading item that selects it under ``refines`` (cross); "": its first param does
    # Capabilities callers read instead of matching stage names:
    semantic = False  # ranks by meaning with a model (dense, hybrid, an embedding or cross-encoder reranker)
    embeds_query = False  # embeds the query with the store's model (takes the command's embedder settings)
    ranked_by = ""  # the score component of its order (first stages): bm25, dense, fused, prf

    def __init__(self, **values: Any):
        schema = self.schema()
        self.values: dict[str, Any] = {p.name: p.default for p in schema.values()}
        for key, value in values.items():
            param = schema.get(key)
            if param is None:
                raise UsageError(f"{self.head()}: unknown key {key!r}")
            self.values[key] = param.check(value)

    @classmethod
    def schema(cls) -> dict[str, Param]:
        return {p.name: p for p in ((cls.option,) if cls.option else ()) + cls.params}

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def replace(self, **values: Any) -> "Stage":
        """A copy with other values; settings that are not parameters (``embed``, ``allow_remote``) carry over."""
        other = type(self)(**{**self.values, **values})
        other.__dict__.update((k, v) for k, v in self.__dict__.items() if k != "values")
        return other

    @classmethod
    def head(cls) -> str:
        return cls.refines or cls.name

    def items(self) -> list[str]:
        """``KEY=VALUE`` for every value that differs from its default (the first key of a stage it selects)."""
        out = []
        for i, p in enumerate(self.params):
            value = self.values[p.name]
            if value != p.default or (self.refines and not self.selector and i == 0):
                out.append(f"{p.name}={p.text(value)}")
        return out

    def text(self) -> str:
        """The stage as a strategy string: ``hybrid:rrf,k=20``, ``bm25:prf=10``, ``rerank:st``."""
        lead = [self.selector] if self.selector else [self.values[self.option.name]] if self.option else []
        items = lead + self.items()
        return f"{self.head()}:{','.join(items)}" if items else self.head()

    @property
    def label(self) -> str:
        """The stage as results name it (``hybrid:rrf``, ``bm25+prf``)."""
        if self.selector:
            return f"{self.head()}:{self.selector}"
        return self.head() if not self.option else f"{self.head()}:{self.values[self.option.name]}"

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.name, **self.values}

    def _key(self) -> tuple:
        return (self.name, tuple(sorted(self.values.items(), key=lambda kv: kv[0])))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stage) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text()!r})"


class FirstStage(Stage):
    """Protocol of a first stage: ``run(retriever, query, depth, cache_path)`` returns a ``Ranking`` of
    candidate documents for a query (a stage that had to keep BM25 order says so in its ``fallbacks``)."""

    role = "first"
    ranked_by = "bm25"
    embed: Any = None  # the query embedder's host and timeout (``EmbedderSettings``): a command's, not a parameter

    @property
    def plain(self) -> bool:
        """True when the index's own BM25 top-k is this stage's answer (the batch and lean paths)."""
        return False

    @property
    def fields(self) -> tuple[tuple[str, float], ...]:
        """Field weights in normal form; () for body-only BM25 or a stage without them."""
        return ()

    def without_fields(self) -> "FirstStage":
        """The same stage on the body only (when the field index is missing)."""
        return self

    def with_embedder(self, embedder: Any) -> "FirstStage":
        """The stage with the command's ``EmbedderSettings`` (``vaulteval.pipeline.stages.embedder``): a stage
        that embeds the query reaches the store's model with their host, timeout and remote permission."""
        other = self.replace()
        other.embed = embedder
        return other

    def run(self, retriever: Any, query: str, depth: int, cache_path: Any) -> Ranking:
        raise NotImplementedError


class Reranker(Stage):
    """Protocol of a reranker: ``rerank`` scores the first stage's candidate texts for a query.

    ``rerank(query, texts, cache_path, store=None, onnx_dir=None)``
    returns an outcome with ``scores`` in input order, ``source`` and
    ``model`` (what ranked), or ``scores=None`` and ``fallback_reason`` (the
    caller keeps the first stage's order). The evaluation workbench reaches a
    reranker only through this protocol: ``warm`` before sharded runs,
    ``describe`` for a run's manifest, ``with_default_host`` for a worker,
    ``with_embedder`` for the command's embedder settings,
    ``retrieve_flags`` and ``settings`` for what ``retrieve`` and
    ``.vaulteval.json`` say of it.
    """

    role = "rerank"
    over = "bm25"  # the first stage ``rerank:...`` strings rerank
    runs_over = frozenset({"bm25"})  # every first stage whose candidates it may rerank
    key_params: tuple[str, ...] = ()  # its keys a first stage's string may carry beside ``rerank=``
    warms = False  # True when ``warm`` fills a cache that every shard of an evaluation then reads

    def checked(self) -> "Reranker":
        """The reranker with its settings checked before any work (a bad setting is one UsageError)."""
        return self

    @property
    def model_name(self) -> Any:
        """The model it reranks with, as results name it (None when it has none)."""
        return self.values.get("model")

    def as_key_items(self) -> list[str]:
        """The reranker as items of another first stage's string: ``rerank=OPTION``, then its keys."""
        option = self.text().partition(":")[2].split(",")[0]
        return [f"rerank={option}", *self.items()]

    def warm(self, query: str, texts: list[str], cache_path: Any, store: Any = None) -> None:
        """Compute once what reranking ``texts`` reuses (an embedding cache), so shards never race to fill it."""

    def describe(self) -> dict[str, Any]:
        """What a run's manifest records of it: ``backend``, ``model``, ``host``, ``digest`` (of the model's
        files or as its server reports it), ``input_scheme``, ``reachable`` and ``error``; looks, never ranks."""
        return {"backend": self.label, "model": self.model_name, "host": None, "digest": None,
                "input_scheme": None, "reachable": None, "error": None}

    def with_default_host(self, host: str | None) -> "Reranker":
        """The reranker with ``host`` where it would read its server from the environment (a worker's own
        environment must not pick it); itself when it has no server."""
        return self

    def with_embedder(self, embedder: Any) -> "Reranker":
        """The reranker with the command's ``EmbedderSettings`` (``vaulteval.pipeline.stages.embedder``): their
        timeout and remote permission where it embeds with a server; itself when it does not."""
        return self

    def retrieve_flags(self) -> list[str] | None:
        """``retrieve``'s own flags that select it (``--embedder st``); None: ``--strategy`` writes it."""
        return None

    def settings(self) -> dict[str, Any]:
        """What ``tune --write`` keeps of it in ``.vaulteval.json`` (read back by ``vaulteval.pipeline.spec``)."""
        return self.to_dict()

    def rerank(self, query: str, texts: list[str], cache_path: Any, store: Any = None,
               onnx_dir: Any = None) -> Any:
        raise NotImplementedError


_DIGESTS: dict[str, str] = {}  # folder -> digest, once per process


def folder_digest(path: Any) -> str:
    """sha256 over every file's relative path and bytes in a model folder (computed once per process)."""
    import hashlib
    from pathlib import Path

    if str(path) in _DIGESTS:
        return _DIGESTS[str(path)]
    root = Path(path)
    h = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(file.relative_to(root).as_posix().encode("utf-8") + b"\0")
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    _DIGESTS[str(path)] = "sha256:" + h.hexdigest()
    return _DIGESTS[str(path)]


def ms_since(started: float) -> float:
    """Milliseconds since ``time.perf_counter()`` read ``started`` (a stage's own timing)."""
    return round((time.perf_counter() - started) * 1000.0, 3)


def register(cls: type) -> type:
    """Class decorator: add a stage to the registry under ``cls.name``."""
    if not cls.name or cls.name in STAGES and STAGES[cls.name] is not cls:
        raise ValueError(f"stage name {cls.name!r} is empty or taken")
    if cls.selector and (not cls.refines or cls.option is not None):
        raise ValueError(f"stage {cls.name!r}: a selector picks a stage that refines another and has no option")
    STAGES[cls.name] = cls
    return cls


