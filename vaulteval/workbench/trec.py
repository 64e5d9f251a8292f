"""Read TREC run files (``qid Q0 doc rank score name``), distrusting every byte.

Usage: ``rows, name = read_trec(Path("bm25.trec"))`` -> (query_id, doc_id, score, rank) tuples and the run name.
Each problem is one UsageError naming the file, the line and what a line must look like.
"""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import unquote

from vaulteval.errors import UsageError

FORMAT = "'qid Q0 doc rank score name' (six fields separated by spaces)"
MAX_RUN_BYTES = 1 << 30  # a run of a million queries at depth 100 fits


def _text(path: Path) -> str:
    from vaulteval.vault.metadir import read_capped

    if not path.exists():
        raise UsageError(f"run file {path} does not exist")
    if not path.is_file():
        raise UsageError(f"run file {path} is not a regular file; pass a TREC run file")
    try:
        return read_capped(path, MAX_RUN_BYTES).decode("utf-8")  # regular only: a FIFO swapped in is not waited on
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start}); is it a TREC run file?") from None
    except OSError as exc:
        raise UsageError(f"cannot read run file {path}: {exc.strerror or exc}") from None


def read_trec(path: Path) -> tuple[list[tuple[str, str, float, int]], str | None]:
    """The run's (query_id, doc_id, score, rank) rows (doc ids percent-decoded) and the name in its last column.

    An empty file is an empty run (a strategy may return nothing), named by the caller.
    """
    rows: list[tuple[str, str, float, int]] = []
    seen: dict[tuple[str, str], int] = {}
    name = None
    for number, line in enumerate(_text(path).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        where = f"{path}:{number}"
        if len(parts) != 6:
            raise UsageError(f"{where}: {len(parts)} fields; a TREC run line is {FORMAT}")
        qid, _, doc, rank_text, score_text, tag = parts
        try:
            rank = int(rank_text)
        except ValueError:
            raise UsageError(f"{where}: rank {rank_text!r} is not a whole number; a TREC run line is {FORMAT}") \
                from None
        try:
            score = float(score_text)
        except ValueError:
            raise UsageError(f"{where}: score {score_text!r} is not a number; a TREC run line is {FORMAT}") from None
        if rank < 1 or not math.isfinite(score):
            raise UsageError(f"{where}: rank must be 1 or more and score finite, got rank {rank_text}, "
                             f"score {score_text}")
        doc_id = unquote(doc)
        if (qid, doc_id) in seen:
            raise UsageError(f"{where}: {doc_id} is listed twice for query {qid} (also at line {seen[(qid, doc_id)]}); "
                             "keep one line per page")
        seen[(qid, doc_id)] = number
        rows.append((qid, doc_id, score, rank))
        name = name or tag
    return rows, name
