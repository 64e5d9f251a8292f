"""Korean analyzed ahead: a helper process runs Kiwi on a build's Hangul texts while the build does the rest.

Usage::

    ahead = KoreanAhead()
    ahead.offer(text)                     # as texts come (a provision: as the prefix stage writes records)
    ...                                   # chunk, identify and analyze the other languages here
    ready = ahead.terms()                 # text -> what ``code_analyzer("ko")`` gives it ({} without a helper)
    ahead.close()

Kiwi is most of what ``auto`` adds to a build (docs/benchmarks.md): its model takes seconds to load and its
analysis of Hangul is the slowest of the analyzers. A build cannot know which chunks are Korean before it has
identified them, but only a text with Hangul can be (``scripts.cjk_language``). So the texts with Hangul go to
a helper (``python -m vaulteval.index.langs.ahead``, a fresh interpreter) that loads Kiwi and analyzes them with
the Korean analyzer on the second core while this process chunks the notes, identifies every chunk and analyzes
the other languages. A text's Korean terms depend on that text alone, so the index is byte for byte the one a
build without the helper writes (tests/index/test_languages_ahead.py); a text the helper did not give back, for
any reason, is analyzed here. The helper starts once ``AHEAD_FROM`` characters of Hangul texts have been offered,
if they are at most ``MAX_SHARE`` of the other texts' characters so far, and takes batches while they stay so; the
texts past that share are analyzed here. It needs a second core; ``VAULTEVAL_BUILD_WORKERS=1`` keeps a build in
one process.
"""

from __future__ import annotations

import marshal
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from vaulteval.index.fieldtext import code_text, headings_text
from vaulteval.index.helpers import cores, helper_env, serial_only
from vaulteval.index.langs.scripts import SCRIPTS

AHEAD_FROM = 20_000  # characters of Hangul texts: a few notes (a stray Hangul word never starts a helper)
# Hangul texts' characters per character of the other texts, at most. The helper runs Kiwi on one thread and pays
# only while the build has other work to do meanwhile; where Korean is most of a vault, Kiwi on every core in the
# build's own process is faster (docs/benchmarks.md).
MAX_SHARE = 0.25
BATCH_CHARS = 50_000  # characters sent to the helper at a time (Kiwi spreads a batch over its threads)
_HANGUL = re.compile(f"[{SCRIPTS['hangul']}]")


class KoreanAhead:
    """Texts with Hangul, analyzed by a helper process as they are offered (see the module note)."""

    def __init__(self) -> None:
        self.enabled = not serial_only() and cores() >= 2
        self._seen: set[str] = set()
        self._pending: list[str] = []
        self._pending_chars = 0
        self._offered_chars = 0  # of the distinct texts with Hangul
        self._other_chars = 0  # of the distinct texts without
        self._sent: list[str] = []  # in the order the helper answers
        self._helper: subprocess.Popen | None = None
        self._writer: ThreadPoolExecutor | None = None  # sends batches without waiting on a busy helper
        self._ready: dict[str, list[str]] | None = None

    def offer(self, text: str) -> None:
        """Analyze ``text`` ahead when it holds Hangul (a text offered again is ignored); texts without Hangul are
        counted (the work the build does meanwhile)."""
        if not self.enabled or self._ready is not None or text in self._seen:
            return
        self._seen.add(text)
        if not _HANGUL.search(text):
            self._other_chars += len(text)
            return
        self._pending.append(text)
        self._pending_chars += len(text)
        self._offered_chars += len(text)
        # The helper starts as soon as it pays (Kiwi's model loads while the build goes on), then takes full batches
        # while Korean stays a small share: past it, the rest is left to Kiwi on every core here.
        if self._pays() and (self._helper is None or self._pending_chars >= BATCH_CHARS):
            self._send()

    def _pays(self) -> bool:
        return self._offered_chars >= AHEAD_FROM and self._offered_chars <= MAX_SHARE * self._other_chars

    def offer_record(self, record: dict) -> None:
        """A chunk record's texts a build analyzes: the indexed text, and its headings and code (the field index)."""
        raw = record.get("raw_text")
        if not self.enabled or not isinstance(raw, str):
            return
        text = record.get("contextualized_text")
        self.offer(text if isinstance(text, str) else raw)
        if _HANGUL.search(raw):
            self.offer(headings_text(raw))
            self.offer(code_text(raw))

    def terms(self) -> dict[str, list[str]]:
        """Each text the helper analyzed -> its Korean terms; the first call sends the rest and waits for it."""
        if self._ready is None:
            self._ready = {}
            if self._pays():
                self._send()
            helper = self._helper
            if helper is not None:
                self._writer.submit(_close, helper.stdin)
                try:
                    data = helper.stdout.read()
                    if helper.wait() == 0:
                        self._ready = _paired(self._sent, marshal.loads(data))
                except (OSError, ValueError, EOFError, TypeError):
                    pass
            self.close()
        return self._ready

    def close(self) -> None:
        """Stop the helper (if it still runs) and drop what is pending."""
        helper, self._helper = self._helper, None
        if helper is not None:
            if helper.poll() is None:
                helper.kill()
            helper.wait()
        if self._writer is not None:
            self._writer.shutdown(wait=True)  # a write to the killed helper fails at once
            self._writer = None
        if helper is not None:
            for stream in (helper.stdin, helper.stdout):
                try:
                    stream.close()
                except OSError:
                    pass  # bytes still buffered for the killed helper
        self._pending, self._seen = [], set()

    def _send(self) -> None:
        if not self._pending:
            return
        if self._helper is None and not self._start():
            self.enabled = False
            self._pending = []
            return
        batch, self._pending, self._pending_chars = self._pending, [], 0
        self._sent.extend(batch)
        frame = marshal.dumps(batch)
        self._writer.submit(_write_frame, self._helper.stdin, frame)

    def _start(self) -> bool:
        try:
            self._helper = subprocess.Popen([sys.executable, "-m", "vaulteval.index.langs.ahead"],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, env=helper_env())
        except OSError:
            return False
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="korean-ahead")
        return True


def _write_frame(stream, frame: bytes) -> None:
    try:
        stream.write(len(frame).to_bytes(8, "little") + frame)
        stream.flush()
    except (OSError, ValueError):
        pass  # the helper is gone: terms() finds it failed and the texts are analyzed here


def _close(stream) -> None:
    try:
        stream.close()  # the helper's end of input: it answers
    except OSError:
        pass


def _paired(texts: list[str], analyses: object) -> dict[str, list[str]]:
    """``texts`` with the helper's analyses, when they are one list of terms (strings) per text; else nothing."""
    if not isinstance(analyses, list) or len(analyses) != len(texts) or not all(
            type(a) is list and all(type(term) is str for term in a) for a in analyses):
        return {}
    return dict(zip(texts, analyses))


def _serve() -> None:
    """The helper: batches of texts in on stdin (8-byte length, marshal), the Korean analyzer's terms of every
    text out on stdout (marshal) once stdin ends."""
    from vaulteval.index.langs.segmenters import KoreanAnalyzer

    analyze = KoreanAnalyzer(workers=1)  # the build's process keeps the other core busy
    stdin, out = sys.stdin.buffer, []
    while head := stdin.read(8):
        out.extend(analyze.many(marshal.loads(stdin.read(int.from_bytes(head, "little")))))
    sys.stdout.buffer.write(marshal.dumps(out))


if __name__ == "__main__":
    _serve()
