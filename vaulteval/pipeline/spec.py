"""The pipeline value: the first stage, the reranker, the candidate depth and the index settings of one retrieval.

Usage::

    p = Pipeline.parse("hybrid:cc,alpha=0.7")     # or "rerank:st,bm25_top=20", "dense", "bm25:analyzer=english"
    p.text()                                        # "hybrid:cc,alpha=0.7": parse(text(p)) == p
    p.index                                         # the index settings it names: (("analyzer", "english"),)
    Pipeline.from_dict(p.to_dict()) == p            # the saved form (.vaulteval.json, run manifests)
    retriever.retrieve("query", top=5, pipeline=p)  # what retrieve, the MCP server, eval run and pooling run

One grammar, the strategy grammar's stage part (docs/strategies.md):
``KIND[:OPTION,KEY=VALUE,...]`` names a first stage or a reranker of the stage
registry; a reranker's string also takes the keys of the first stage it
reranks by default (``rerank:st,w_title=2``), and any other first stage it may
rerank takes it as the key ``rerank=`` (``hybrid:cc,rerank=st``); ``bm25_top=N``
is the depth; the index settings (``analyzer=``, ``k1=``, ``b=``, chunk sizes, ...:
``pipeline.indexsettings.INDEX_PARAMS``) name the index it runs on. Only the keys
named are kept (``index``): a pipeline that names none runs on the vault's own
index as it is, and the served path (``retrieve``, the MCP server) refuses one
that names a setting the vault's index was not built with (``check_served``),
never ranking on another analyzer. The workbench's strategy adds ``top`` and a
name, and builds an index of its settings in its cache.

A plain BM25 first stage is kept as ``None`` until asked for: a plain
``retrieve`` never imports the stage registry.

Which pipeline a vault runs when nobody names one (``vault_pipeline``): the
one ``tune --write`` stored, else ``default_pipeline``, built from what the
vault has. ``retrieve``, the MCP server and ``eval run``'s ``default`` strategy
all call it, so they run the same pipeline. The choice follows measurements on
every real and written question set (docs/strategies.md, "Pipelines and the
default"): with stored vectors a hybrid, without them BM25, on the index's own
analyzer (``provision`` builds ``DEFAULT_ANALYZER`` unless told otherwise). A
store that cannot be read, or a query its model cannot embed, makes the hybrid
keep BM25 order and say why in the result's label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaulteval.errors import UsageError

if TYPE_CHECKING:
    from typing import Any

    from vaulteval.vault.vault import Vault

# First-stage candidate chunks per query: one default for retrieve, the MCP server, eval run, tune and pooling.
DEFAULT_DEPTH = 100
MAX_DEPTH = 1000
DEPTH_KEY = "bm25_top"
INDEX_KEY = "index"  # the saved form's object of named index settings


def _registry():
    from vaulteval.pipeline.stages import registry

    return registry


def check_depth(depth: Any, name: str = DEPTH_KEY) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"{name} must be a whole number from 1 to {MAX_DEPTH}, got {depth!r}")
    return depth


class Pipeline:
    """First stage (``None``: plain BM25), reranker (``None``: none), depth and the index settings it names
    (``index``: ``(key, value)`` pairs in ``INDEX_PARAMS`` order, ``()`` for none); frozen, equal by its text."""

    __slots__ = ("_first", "reranker", "depth", "index")

    def __init__(self, first: Any = None, reranker: Any = None, depth: int = DEFAULT_DEPTH, index: Any = ()):
        if first is not None and reranker is None and first.plain and first.embed is None:
            first = None  # plain BM25 stays on the lean path
        if first is not None and getattr(first, "role", None) != "first":
            raise UsageError(f"the first stage must be a first stage of the registry, got {first!r}")
        if reranker is not None:
            over = (first.name if first is not None else "bm25")
            if getattr(reranker, "role", None) != "rerank" or over not in reranker.runs_over:
                raise UsageError(f"{getattr(reranker, 'name', reranker)} cannot rerank {over} candidates")
        object.__setattr__(self, "_first", first)
        object.__setattr__(self, "reranker", reranker)
        object.__setattr__(self, "depth", check_depth(depth))
        object.__setattr__(self, "index", _named_index(index))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Pipeline is frozen; use replace()")

    @property
    def first(self) -> Any:
        """The first stage (a plain BM25 stage is built on first use)."""
        return self._first if self._first is not None else _registry().stage("bm25")()

    @property
    def plain(self) -> bool:
        """True for BM25 alone on the index (the lean and batch paths)."""
        return self._first is None and self.reranker is None

    @property
    def semantic(self) -> bool:
        """True when a stage matches meaning with a model (dense, hybrid, a reranker), as the stages declare."""
        return (self._first is not None and self._first.semantic) or (self.reranker is not None
                                                                          and self.reranker.semantic)

    @property
    def needs(self) -> frozenset:
        """What the vault must have for every stage to run: ``bm25`` (index), ``dense`` (stored vectors), ..."""
        out = frozenset({"bm25"}) if self._first is None else frozenset(self._first.needs)
        return out | (self.reranker.needs if self.reranker is not None else frozenset())

    def replace(self, **changes: Any) -> "Pipeline":
        values = {"first": self._first, "reranker": self.reranker, "depth": self.depth, "index": self.index,
                  **changes}
        return Pipeline(**values)

    @property
    def embeds_query(self) -> bool:
        """True when the first stage embeds the query (it then takes the command's embedder settings)."""
        return self._first is not None and self._first.embeds_query

    def with_embedder(self, embedder: Any) -> "Pipeline":
        """The pipeline whose first stage embeds the query with a command's host, timeout, permission (``embedder``)."""
        if not self.embeds_query:
            return self
        return self.replace(first=self._first.with_embedder(embedder))

    @property
    def index_settings(self) -> Any:
        """The ``IndexSettings`` these keys name, the others at their defaults (``pipeline.indexsettings``)."""
        from vaulteval.pipeline.indexsettings import IndexSettings

        return IndexSettings(**dict(self.index))

    def check_served(self, vault: "Vault") -> None:
        """The served path (retrieve, the MCP server) runs on the vault's own index: a named index setting that
        index was not built with (its header says, ``tuned.built_index_settings``) is one UsageError."""
        if self.index:
            from vaulteval.pipeline.indexsettings import refuse_other_index
            from vaulteval.pipeline.tuned import built_index_settings

            refuse_other_index(self.index, built_index_settings(vault), self.text())

    # -- text and saved form -------------------------------------------------
    def text(self) -> str:
        first, index = self._first, self.index_items()
        head, items = ("bm25" if first is None else first.text()), index
        if self.reranker is not None:
            if (first.name if first is not None else "bm25") == self.reranker.over:
                head, items = self.reranker.text(), (first.items() if first is not None else []) + index
            else:
                items = index + self.reranker.as_key_items()  # hybrid:cc,analyzer=english,rerank=st
        if self.depth != DEFAULT_DEPTH:
            items = [*items, f"{DEPTH_KEY}={self.depth}"]
        return join(head, items)

    __str__ = text

    def index_items(self) -> list[str]:
        """The named index settings as ``key=value`` items."""
        if not self.index:
            return []  # nothing imported: the lean path
        from vaulteval.pipeline.indexsettings import items_of

        return items_of(self.index)

    @classmethod
    def parse(cls, text: str) -> "Pipeline":
        """Usage: ``Pipeline.parse("hybrid:cc,alpha=0.3,bm25_top=50")``; a key it does not know is one UsageError."""
        if not isinstance(text, str) or not text.strip():
            raise UsageError("a pipeline string is empty; e.g. bm25, dense, hybrid:cc,alpha=0.7 or rerank:st")
        first, reranker, left = parse_stages(text)
        depth = left.pop(DEPTH_KEY, None)
        index = _read_index(left, text) if left else ()
        value = DEFAULT_DEPTH if depth is None else _read_int(depth, text)
        return cls(first, reranker, value, index)

    def to_dict(self) -> dict[str, Any]:
        """``first``, ``rerank``, ``bm25_top``, and ``index`` (the named settings) when it names any."""
        out = {"first": self.first.to_dict(), "rerank": None if self.reranker is None else self.reranker.to_dict(),
               DEPTH_KEY: self.depth}
        if self.index:
            out[INDEX_KEY] = dict(self.index)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Pipeline":
        if not isinstance(data, dict) or set(data) - {"first", "rerank", DEPTH_KEY, INDEX_KEY}:
            raise UsageError(f"a pipeline must be an object with first, rerank, {DEPTH_KEY} and {INDEX_KEY}, "
                             f"got {data!r}")
        reranker = None if data.get("rerank") is None else stage_from_dict(data["rerank"])
        return cls(stage_from_dict(data.get("first")), reranker, data.get(DEPTH_KEY, DEFAULT_DEPTH),
                   data.get(INDEX_KEY) or ())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pipeline) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return (self._first, self.reranker, self.depth, self.index)

    def __repr__(self) -> str:
        return f"Pipeline({self.text()!r})"


def _read_index(left: "dict[str, str]", text: str) -> "dict[str, Any]":
    from vaulteval.pipeline.indexsettings import read_named

    return read_named(left, f"pipeline {text!r}: ", f"its stages' keys, {DEPTH_KEY} and")


def _named_index(index: Any) -> "tuple[tuple[str, Any], ...]":
    """``()`` for none (nothing imported: the lean path), else ``indexsettings.named``."""
    if not index:
        return ()
    from vaulteval.pipeline.indexsettings import named

    return named(index)


def join(head: str, items: list[str]) -> str:
    """``head`` and ``items`` as one string: ``hybrid:cc,alpha=0.3``, ``bm25:w_title=2``."""
    if not items:
        return head
    return ",".join([head, *items]) if ":" in head else f"{head}:{','.join(items)}"


def _read_int(text: str, context: str) -> int:
    try:
        return check_depth(int(text.strip()))
    except ValueError:
        raise UsageError(f"{context!r}: {DEPTH_KEY} must be a whole number, got {text!r}") from None


def parse_stages(text: str) -> tuple[Any, Any, dict[str, str]]:
    """The grammar's stage part: ``(first stage, reranker or None, {key: text} the stages did not take)``."""
    registry = _registry()
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower()
    items, reranker = _rerank_key(registry, registry.split_items(rest), kind, text)
    stage, left = registry.build(kind, items, text)
    if stage.role == "first":
        return stage, reranker, left
    # A reranker's string: the keys it left belong to the first stage it reranks by default.
    first, left = registry.build(stage.over, [f"{k}={v}" for k, v in left.items()], text)
    own = {k: v for k, v in left.items() if k not in type(first).schema()}
    return first, stage, own


def _rerank_key(registry: Any, items: list[str], kind: str, text: str) -> tuple[list[str], Any]:
    """``KIND:...,rerank=st,model=M``: the reranker the ``rerank=`` key names (with its keys), and the other items."""
    pairs = [i.partition("=") for i in items]
    if not any(k.strip() == "rerank" and eq for k, eq, _ in pairs):
        return items, None
    backend = next(v.strip() for k, eq, v in pairs if k.strip() == "rerank" and eq)
    base = next(c for c in registry.rerankers() if not c.refines)
    cls = registry.selected(base.name, backend.lower()) or base  # rerank=cross selects the cross-encoder
    target = registry.stage(kind) if kind in registry.kinds() else None
    if target is None or target.role != "first" or target.name == cls.over or target.name not in cls.runs_over:
        takes = sorted(n for n in cls.runs_over if n != cls.over)
        raise UsageError(f"{text!r}: rerank= reranks {' or '.join(takes)} candidates; write "
                         f"{registry.written(cls) if cls.selector else cls.name + ':st'} for {cls.over}'s")
    schema = cls.schema()
    values: dict[str, Any] = {}
    rest = []
    for item, (key, eq, value) in zip(items, pairs):
        key = key.strip()
        if eq and key == "rerank":
            continue
        if eq and key in cls.key_params:
            values[key] = schema[key].read(value.strip(), f"{text!r}: ")
        else:
            rest.append(item)
    if cls.selector:
        return rest, cls(**values)
    try:
        values[cls.option.name] = cls.option.check(backend)
    except UsageError as exc:
        raise UsageError(f"{text!r}: rerank={backend!r}: {exc}") from None
    return rest, cls(**values)


def stage_from_dict(data: Any) -> Any:
    """A registered stage from ``stage.to_dict()``: ``{"stage": NAME, KEY: VALUE, ...}``."""
    if not isinstance(data, dict) or not isinstance(data.get("stage"), str):
        raise UsageError(f"a stage must be an object with a \"stage\" name, got {data!r}")
    values = {k: v for k, v in data.items() if k != "stage"}
    allow_remote = values.pop("allow_remote", None)
    stage = _registry().stage(data["stage"])(**values)
    if allow_remote is not None:
        stage = stage.with_allow_remote(bool(allow_remote))
    return stage


# What provision builds the index with when neither --analyzer nor a tuned setting names one (each chunk in its
# own language), when the languages extra is installed; else the seed's analyzer.
DEFAULT_ANALYZER = "auto"
SEED_ANALYZER = "default"
# The default first stage over stored vectors (docs/strategies.md has the table that chose it).
WITH_VECTORS = "hybrid:cc"  # convex combination, alpha 0.5
# vaulteval.pipeline.tuned.CONFIG_NAME, spelled out: a vault without one never loads its reader.
CONFIG_NAME = ".vaulteval.json"
# vaulteval.embeddings.store.store_path, spelled out: that module loads numpy, which a vault without a store never needs.
STORE_PARTS = ("embeddings", "vectors.vtv")


def default_analyzer() -> str:
    """``DEFAULT_ANALYZER`` when every library of the ``languages`` extra is installed, else ``SEED_ANALYZER``."""
    from vaulteval.index.langs.libraries import LIBRARIES, versions

    installed = all(v is not None for v in versions(set(LIBRARIES)).values())
    return DEFAULT_ANALYZER if installed else SEED_ANALYZER


def has_vectors(vault: "Vault") -> bool:
    """True when provisioning stored chunk vectors (``provision --embed``); their state is checked when used."""
    return vault.meta_dir.joinpath(*STORE_PARTS).is_file()


def default_pipeline(vault: "Vault") -> Pipeline:
    """The untuned default, built from what the vault has (``default_choice``)."""
    return default_choice(vault)[0]


def default_choice(vault: "Vault") -> "tuple[Pipeline, str | None]":
    """``(pipeline, warning)``: ``WITH_VECTORS`` when the vault has stored vectors whose model reads the vault's
    main language, else plain BM25; depth ``DEFAULT_DEPTH``. ``warning`` says why stored vectors were not used
    when they cannot be read (the default is then BM25, never a failed query)."""
    plain = Pipeline(None, None, DEFAULT_DEPTH)
    if not has_vectors(vault):
        return plain, None
    from vaulteval.embeddings.store import StoreError, open_store

    try:
        store = open_store(vault.meta_dir)
    except (StoreError, OSError) as exc:
        return plain, fallback_warning(vault, str(exc))
    from vaulteval.hosts import RerankConfigError
    from vaulteval.pipeline.stages.embedder import EmbedderSettings

    try:
        model = str(EmbedderSettings.of_store(store).checked().model)
    except RerankConfigError as exc:
        return plain, fallback_warning(vault, f"they name a model that cannot be used here: {exc}")
    if not model_reads_vault(vault, model):
        return plain, None  # an English model over a German vault ranks below BM25 (docs/strategies.md)
    return Pipeline.parse(WITH_VECTORS), None


def model_reads_vault(vault: "Vault", model: str) -> bool:
    """True unless the index knows the vault's main language (an ``auto`` index counts its chunks per language)
    and ``model`` (the store's, resolved) declares languages that do not include it (``vaulteval.embeddings.languages``)."""
    from vaulteval.index.location import peek_header
    from vaulteval.embeddings.languages import model_coverage

    languages = (peek_header(vault.meta_dir) or {}).get("languages")
    counted = {k: v for k, v in languages.items() if isinstance(k, str) and isinstance(v, int) and k != "und"} \
        if isinstance(languages, dict) else {}
    if not counted:
        return True
    covered = model_coverage(model).languages
    return "multilingual" in covered or "unknown" in covered or max(counted, key=counted.get) in covered


def fallback_warning(vault: "Vault", problem: str) -> str:
    return (f"vaulteval: warning: the default pipeline runs bm25: the stored embeddings cannot be used ({problem}); "
            f"fix: vaulteval provision --vault {vault.root} --embed")


def tuned_pipeline(entry: "dict[str, Any]") -> Pipeline:
    """The pipeline of a ``.vaulteval.json`` entry that ``tuned_strategy`` read and checked."""
    from vaulteval.pipeline.stages.registry import parse_first_stage

    reranker = None
    rerank = entry.get("rerank")
    if isinstance(rerank, dict) and "stage" in rerank:
        reranker = stage_from_dict(rerank)
    elif isinstance(rerank, dict):
        from vaulteval.pipeline.stages.embedding_rerank import EmbeddingRerank

        reranker = EmbeddingRerank(backend=rerank["backend"], **({"model": rerank["model"]} if rerank.get("model") else {}))
    depth = entry.get("bm25_top")
    return Pipeline(parse_first_stage(entry["strategy"]), reranker, depth if isinstance(depth, int) else DEFAULT_DEPTH)


def vault_pipeline(vault: "Vault") -> "tuple[Pipeline, str, dict[str, Any] | None, str | None]":
    """``(pipeline, source, tuned entry, warning)``: the one ``tune --write`` stored (source ``tuned``), else the
    default (``default_choice``, whose warning comes along)."""
    entry = None
    if vault.root.joinpath(CONFIG_NAME).exists():  # else the reader (and what it imports) is not needed
        from vaulteval.pipeline.tuned import tuned_strategy

        entry = tuned_strategy(vault)
    if entry is not None:
        return tuned_pipeline(entry), "tuned", entry, None
    pipeline, warning = default_choice(vault)
    return pipeline, "default", None, warning
