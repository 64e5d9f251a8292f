"""Inputs and environment of the bundled notebooks: ``"sample"`` means the data shipped in the package.

Usage (the cell after a notebook's ``parameters`` cell)::

    from vaulteval.notebooks.support import prepare, resolve_inputs
    prepare(cache)                              # offline models, no progress bars, cache outside the vault
    v, qs = resolve_inputs(vault, queryset)     # a Vault and a validated QuerySet

Notebook parameters are plain strings so that papermill can inject them.
``vault="sample"`` is the bundled sample vault (read-only: its indexes are
built in the evaluation cache) and ``queryset="sample"`` the bundled query set
that judges it; both resolve inside the installed package, so the defaults
work from a clean clone and from a pip install alike. Any other value is a
path (``~`` expanded, relative paths against the working directory). A query
set of another vault needs that vault too: ``-p vault V -p queryset Q``.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from vaulteval.errors import UsageError
from vaulteval.vault.paths import home_path
from vaulteval.vault.vault import BUNDLED_SAMPLE, PACKAGE_DIR

if TYPE_CHECKING:
    from vaulteval.querysets.queryset import QuerySet
    from vaulteval.vault.vault import Vault

SAMPLE = "sample"
SAMPLE_QUERYSET = PACKAGE_DIR / "data" / "querysets" / "sample-vault.yaml"
QUIET_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


def prepare(cache: str | os.PathLike[str] | None = None) -> None:
    """Usage: ``prepare(cache)``: models offline and quiet; ``cache`` (if given) becomes $VAULTEVAL_CACHE.

    Progress bars, library warnings and per-query log lines would otherwise
    land in stored outputs (nbval compares them); pandas shows whole tables.
    The evaluation cache is where every index the notebook needs is built,
    never the vault.
    """
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
    if cache:
        os.environ["VAULTEVAL_CACHE"] = str(home_path(cache).resolve())
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm.auto without ipywidgets
    # Rerank fallbacks are reported by the notebooks themselves (nbviews.rerank_status), once,
    # instead of one log line per query through logging's last-resort handler.
    log = logging.getLogger("vaulteval")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    one_line_errors()
    try:
        import pandas as pd
    except ImportError:
        return
    pd.set_option("display.max_rows", 2000)
    pd.set_option("display.max_columns", 50)
    pd.set_option("display.max_colwidth", 220)
    pd.set_option("display.width", 200)


def vault_path(vault: str | os.PathLike[str]) -> Path:
    """Usage: ``vault_path("sample")`` -> the bundled sample vault; any other value is a folder path."""
    if not isinstance(vault, (str, os.PathLike)) or not str(vault).strip():
        raise UsageError(f"vault must be a folder path or {SAMPLE!r}, got {vault!r}")
    return BUNDLED_SAMPLE if str(vault) == SAMPLE else home_path(vault).resolve()


def queryset_path(queryset: str | os.PathLike[str]) -> Path:
    """Usage: ``queryset_path("sample")`` -> the bundled sample query set; any other value is a path."""
    if not isinstance(queryset, (str, os.PathLike)) or not str(queryset).strip():
        raise UsageError(f"queryset must be a path or {SAMPLE!r}, got {queryset!r}")
    return SAMPLE_QUERYSET if str(queryset) == SAMPLE else home_path(queryset).resolve()


def resolve_inputs(vault: str | os.PathLike[str], queryset: str | os.PathLike[str], *,
                   qrels: str | None = None, split: str = "test") -> "tuple[Vault, QuerySet]":
    """Usage: ``v, qs = resolve_inputs("sample", "sample")``; the query set's keys are resolved in ``vault``."""
    from vaulteval.querysets.queryset import QuerySetInvalid, open_queryset
    from vaulteval.vault.vault import Vault

    v = Vault(vault_path(vault))
    try:
        return open_queryset(queryset_path(queryset), v, qrels=qrels, split=split)
    except QuerySetInvalid as exc:
        if str(vault) == SAMPLE and str(queryset) != SAMPLE:
            raise UsageError(f"{exc}; this query set judges another vault: pass it too (-p vault PATH)") from None
        raise


def describe_inputs(v: "Vault", qs: "QuerySet") -> str:
    """Usage: ``print(describe_inputs(v, qs))``: one line, no absolute paths (stored outputs stay portable)."""
    s = qs.summary()
    where = "the bundled sample vault" if v.is_bundled else f"vault {v.root.name}"
    pages = sum(1 for _ in v.iter_pages())
    return (f"query set {s['name']}: {s['queries']} queries ({s['positive']} with relevant pages, "
            f"{s['negative']} negative), {s['judgments']} judgments; {where}: {pages} pages")


def error_line(exc: BaseException) -> str:
    """The line the CLI prints for a user error (``vaulteval: error: ...``), for the notebook's error output."""
    return f"vaulteval: error: {exc}"


def one_line_errors() -> None:
    """In IPython, a vaulteval user error (bad vault, query set, strategy...) shows as the CLI's one line.

    The cell still fails (papermill and ``eval run`` see the error, with its name and message); only
    the traceback, which is about vaulteval's code and not the user's input, is left out.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from vaulteval.errors import VaultevalError

    def handler(self, etype, value, tb, tb_offset=None):  # noqa: ANN001 - IPython's signature
        line = error_line(value)
        self._showtraceback(etype, value, [line])  # the error output: name, message, and this one line
        return [line]

    shell.set_custom_exc((VaultevalError,), handler)
