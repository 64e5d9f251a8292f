"""Analyze many texts for a build: in this process, or split with one helper process on a second core.

Usage: ``for terms in analyze_all(lookup("default"), texts): ...`` (terms of each text, in order).

The output is the same list whichever way it runs: the texts are cut into
contiguous halves, a helper (``python -m`` the analyzer's module ``NAME``, a
fresh interpreter that inherits nothing of this process and never imports the
caller's script) analyzes the second half while this process analyzes the
first, and the halves are joined in order, so a build is byte for byte the one
a serial build writes (tests/index/test_postings.py). A helper that fails
for any reason is replaced by analyzing its half here. It pays only with a
second core that is idle (the load average leaves one free) and enough text
to outweigh starting it and sending the terms back, ``PARALLEL_FROM``
characters (docs/benchmarks.md has the measurements);
``VAULTEVAL_BUILD_WORKERS=1`` stays serial.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from vaulteval.index.helpers import cores, helper_env, serial_only

PARALLEL_FROM = 4_000_000  # characters of text; below this a helper process costs more than it saves


def _idle_cores() -> float:
    """Cores left over by the machine's other work (one-minute load average); a helper on a busy machine
    only competes with this process."""
    try:
        return cores() - os.getloadavg()[0]
    except OSError:
        return 0.0


def parallel_pays(texts: list[str]) -> bool:
    if serial_only() or cores() < 2:
        return False
    return sum(map(len, texts)) >= PARALLEL_FROM and _idle_cores() >= 1.0


def _analyze(analyzer, texts: list[str]) -> list[list[str]]:
    analyze = analyzer.terms
    return [analyze(t, bounded=False) for t in texts]


def analyze_all(analyzer, texts: list[str], *, parallel: bool | None = None) -> list[list[str]]:
    """Each text's terms, in order (``analyzer``: an ``analysis.Analyzer``); ``parallel`` None decides by
    ``parallel_pays``."""
    if len(texts) < 2 or not (parallel_pays(texts) if parallel is None else parallel):
        return _analyze(analyzer, texts)
    half = len(texts) // 2
    try:
        # The module that registers the analyzer serves it (``vaulteval.index.analysis``'s ``__main__``).
        helper = subprocess.Popen([sys.executable, "-m", type(analyzer).__module__, analyzer.name],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=helper_env())
    except OSError:
        return _analyze(analyzer, texts)
    second: list[list[str]] | None = None
    try:
        helper.stdin.write(marshal.dumps(texts[half:]))
        helper.stdin.close()
        first = _analyze(analyzer, texts[:half])
        data = helper.stdout.read()
        if helper.wait() == 0:
            second = marshal.loads(data)
    except (OSError, ValueError, EOFError, TypeError):
        first = _analyze(analyzer, texts[:half])
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()
    if not isinstance(second, list) or len(second) != len(texts) - half:
        second = _analyze(analyzer, texts[half:])
    return first + second


def serve(analyzer) -> None:
    """The helper: texts in on stdin, their terms out on stdout (marshal)."""
    sys.stdout.buffer.write(marshal.dumps(_analyze(analyzer, marshal.loads(sys.stdin.buffer.read()))))
