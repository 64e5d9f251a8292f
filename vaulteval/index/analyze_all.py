"""Analyze many texts for a build: in this process, or split with one helper process on a second core.

Usage: ``for terms in analyze_all("default", texts): ...`` (terms of each text, in order).

The output is the same list whichever way it runs: the texts are cut into
contiguous halves, a helper (``python -m vaulteval.index.analyze_all``, a
fresh interpreter that inherits nothing of this process and never imports the
caller's script) analyzes the second half while this process analyzes the
first, and the halves are joined in order, so a build is byte for byte the one
a serial build writes (tests/index/test_postings.py). A helper that fails
for any reason is replaced by analyzing its half here. It pays only with a
second core that is idle (the load average leaves one free) and enough text
to outweigh starting it and sending the terms back, ``PARALLEL_FROM``
characters (docs/benchmarks.md has the measurements);
``VAULTEVAL_BUILD_WORKERS=1`` stays serial.

``auto`` (``analyze_documents_all``) splits by language instead of by halves: Korean takes
Kiwi most of a build's time (docs/benchmarks.md), so the notes with Hangul are analyzed here
(Kiwi on its own threads) while the helper identifies and analyzes the other notes. A note's
chunks stay together on one side (they are identified together) and each text's terms depend
on that text alone, so the joined list is the one ``analyze_documents`` gives in one process.
"""

from __future__ import annotations

import marshal
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from vaulteval.index.tokenize import get_analyzer

PARALLEL_FROM = 4_000_000  # characters of text; below this a helper process costs more than it saves
HANGUL_FROM = 500_000  # characters of notes with Hangul (auto): below this Kiwi is no longer the long pole
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")  # jamo and syllables
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _idle_cores() -> float:
    """Cores left over by the machine's other work (one-minute load average); a helper on a busy machine
    only competes with this process."""
    try:
        return _cores() - os.getloadavg()[0]
    except OSError:
        return 0.0


def parallel_pays(texts: list[str]) -> bool:
    if os.environ.get("VAULTEVAL_BUILD_WORKERS", "").strip() == "1" or _cores() < 2:
        return False
    return sum(map(len, texts)) >= PARALLEL_FROM and _idle_cores() >= 1.0


def _analyze(analyzer: str, texts: list[str]) -> list[list[str]]:
    analyze = get_analyzer(analyzer)
    return [analyze(t, bounded=False) for t in texts]


def analyze_all(analyzer: str, texts: list[str], *, parallel: bool | None = None) -> list[list[str]]:
    """Each text's terms, in order; ``parallel`` None decides by ``parallel_pays``."""
    if len(texts) < 2 or not (parallel_pays(texts) if parallel is None else parallel):
        return _analyze(analyzer, texts)
    half = len(texts) // 2
    return _with_helper(analyzer, texts[half:], lambda: _analyze(analyzer, texts[:half]),
                        lambda: _analyze(analyzer, texts[half:]))


def analyze_documents_all(items: list[tuple[str, str]], *, parallel: bool | None = None) -> list[tuple[str, list[str]]]:
    """``auto``'s (code, terms) of (page, text) items, in order: the notes with Hangul here, the others in a
    helper when ``parallel`` (None: ``parallel_pays`` and at least ``HANGUL_FROM`` characters of such notes)."""
    from vaulteval.index.langs.auto import analyze_documents

    if parallel is False or (parallel is None and not parallel_pays([text for _, text in items])):
        return analyze_documents(items)
    hangul_pages = {page for page, text in items if _HANGUL.search(text)}
    here = [i for i, (page, _) in enumerate(items) if page in hangul_pages]
    if not 0 < len(here) < len(items) or (parallel is None and sum(len(items[i][1]) for i in here) < HANGUL_FROM):
        return analyze_documents(items)
    chosen = set(here)
    there = [i for i in range(len(items)) if i not in chosen]
    others = [items[i] for i in there]
    results = _with_helper("auto", others, lambda: analyze_documents([items[i] for i in here]),
                           lambda: analyze_documents(others))
    out: list = [None] * len(items)
    for i, result in zip(here + there, results):
        out[i] = result
    return out


def _with_helper(analyzer: str, theirs: list, mine: Callable[[], list], instead: Callable[[], list]) -> list:
    """``mine()`` (this process's part) + the helper's analysis of ``theirs``; ``instead()`` here if the helper fails."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
    try:
        helper = subprocess.Popen([sys.executable, "-m", "vaulteval.index.analyze_all", analyzer],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    except OSError:
        return mine() + instead()
    second: list | None = None
    try:
        try:
            helper.stdin.write(marshal.dumps(theirs))
            helper.stdin.close()
        except (OSError, ValueError):  # the helper is gone: its part is analyzed here
            pass
        first = mine()
        try:
            data = helper.stdout.read()
            if helper.wait() == 0:
                second = marshal.loads(data)
        except (OSError, ValueError, EOFError, TypeError):
            pass
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()
    if not isinstance(second, list) or len(second) != len(theirs):
        second = instead()
    return first + second


def _helper_main(analyzer: str, payload: list) -> list:
    if analyzer == "auto":  # (page, text) pairs -> (code, terms) pairs
        from vaulteval.index.langs.auto import analyze_documents

        return analyze_documents([(page, text) for page, text in payload])
    return _analyze(analyzer, payload)


if __name__ == "__main__":  # the helper: texts in on stdin, their terms out on stdout (marshal)
    sys.stdout.buffer.write(marshal.dumps(_helper_main(sys.argv[1], marshal.loads(sys.stdin.buffer.read()))))
