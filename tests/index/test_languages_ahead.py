"""``auto``'s Korean analyzed ahead in a helper process (``vaulteval.index.langs.ahead``): the same index as a
build in one process, whatever the helper does."""

from __future__ import annotations

import stat
import sys

import pytest

pytest.importorskip("kiwipiepy")

from vaulteval import Vault  # noqa: E402
from vaulteval.index.langs import ahead as ahead_module  # noqa: E402
from vaulteval.index.langs.ahead import KoreanAhead  # noqa: E402
from vaulteval.index.langs.segmenters import KoreanAnalyzer  # noqa: E402
from vaulteval.pipeline.provision import provision  # noqa: E402

KOREAN = ["메모를 지웠다. 이전 버전은 얼마나 보관되나요?", "동기화는 모든 기기에서 메모를 같게 유지합니다.",
          "보관함 설정에서 플러그인을 켜고 끌 수 있습니다.", "`git log` 로 기록 보기"]


def _write(root, rel: str, text: str) -> None:
    path = root / "wiki" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _vault(tmp_path):
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    for n in range(12):
        _write(root, f"ko/메모 {n}.md", f"---\naliases: [별칭 {n}]\n---\n# 제목 {n}\n\n" + " ".join(KOREAN[n % 3:]) * 3
               + f"\n\n## 설정 {n}\n\n" + KOREAN[(n + 1) % 3] + "\n\n```\nobsidian --열기 {{파일}}\n```\n")
    _write(root, "mixed.md", "# Sync\n\n" + ("Sync keeps your notes the same on every device you use. " * 8)
           + "\n\n## 동기화\n\n" + " ".join(KOREAN) * 4)
    _write(root, "en.md", "# Vault\n\nThe vault keeps every note as a plain text file on your device.\n")
    _write(root, "de.md", "# Tresor\n\nDer Tresor speichert alle Notizen als einfache Textdateien.\n")
    _write(root, "zh.md", "# 同步\n\n如何恢复误删的笔记\n")
    return root


def _built(root) -> dict:
    """Every section of the index and the field file but the rows (their segment names and times differ)."""
    from vaulteval.index.fields import fields_path
    from vaulteval.index.file import read_sections
    from vaulteval.index.location import index_path

    meta = root / ".vault-meta" / "vaulteval"
    out = {}
    for path in (index_path(meta), fields_path(meta)):
        header, sections = read_sections(path)
        out[path.name] = ({k: v for k, v in header.items()
                           if k not in ("built_at", "blocks_crc32", "sections", "store", "index_identity")},
                          {name: bytes(sections.raw(name)) for name in sections if name not in ("docs", "doc_offsets")})
    return out


def _provisioned(root, monkeypatch: pytest.MonkeyPatch, *, serial: bool) -> dict:
    import shutil

    shutil.rmtree(root / ".vault-meta", ignore_errors=True)
    with monkeypatch.context() as patch:
        if serial:
            patch.setenv("VAULTEVAL_BUILD_WORKERS", "1")
        provision(Vault(root), analyzer="auto")
    return _built(root)


@pytest.fixture
def helper_on(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A helper for any amount of Hangul, sent in small batches; returns the number of texts each helper gave back."""
    monkeypatch.delenv("VAULTEVAL_BUILD_WORKERS", raising=False)
    monkeypatch.setattr(ahead_module, "cores", lambda: 2)
    monkeypatch.setattr(ahead_module, "AHEAD_FROM", 0)
    monkeypatch.setattr(ahead_module, "MAX_SHARE", 1e18)  # the test vaults are mostly Korean (inf * 0 is nan)
    monkeypatch.setattr(ahead_module, "BATCH_CHARS", 200)
    answered: list[int] = []
    real = KoreanAhead.terms

    def terms(self) -> dict:
        first = self._ready is None
        ready = real(self)
        if first:
            answered.append(len(ready))
        return ready

    monkeypatch.setattr(KoreanAhead, "terms", terms)
    return answered


def test_a_provision_with_korean_analyzed_ahead_writes_what_one_process_writes(
        tmp_path, monkeypatch: pytest.MonkeyPatch, helper_on: list[int]) -> None:
    root = _vault(tmp_path)
    serial = _provisioned(root, monkeypatch, serial=True)
    analyzed_here: list[str] = []
    real_many, real_call = KoreanAnalyzer.many, KoreanAnalyzer.__call__
    monkeypatch.setattr(KoreanAnalyzer, "many", lambda self, texts: analyzed_here.extend(texts) or real_many(self, texts))
    monkeypatch.setattr(KoreanAnalyzer, "__call__", lambda self, text: analyzed_here.append(text) or real_call(self, text))
    assert _provisioned(root, monkeypatch, serial=False) == serial
    assert helper_on[0] == 0 and helper_on[1] > 20  # serial: none; then chunk texts, headings, code, titles, aliases
    # Everything Korean with Hangul came from the helper: Kiwi never ran in this process.
    assert not [text for text in analyzed_here if ahead_module._HANGUL.search(text)]
    # `index build` alone: the build starts the helper itself, and the field index takes its answers too.
    from vaulteval.index.location import index_path
    from vaulteval.pipeline.provision import build

    index_path(root / ".vault-meta" / "vaulteval").unlink()
    build(Vault(root), analyzer="auto")
    assert _built(root) == serial and helper_on[2] > 20
    assert not [text for text in analyzed_here if ahead_module._HANGUL.search(text)]
    index = _built(root)["index.vti"][1]
    assert b"ko\n" in index["doc_langs"] and "메모".encode() in index["terms"]


def _fake_helper(tmp_path, body: str) -> str:
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


# One answer per text received, of the wrong type: reads the frames as the helper does.
_NOT_STRINGS = ("import marshal, sys\nn, s = 0, sys.stdin.buffer\nwhile h := s.read(8):\n"
                "    n += len(marshal.loads(s.read(int.from_bytes(h, 'little'))))\n"
                "sys.stdout.buffer.write(marshal.dumps([[1]] * n))\n")


@pytest.mark.parametrize("helper", [
    "cat > /dev/null; exit 3",                                     # fails
    "cat > /dev/null; printf 'not marshal'",                       # garbage
    f"cat > /dev/null; exec {sys.executable} -c \"import marshal,sys; sys.stdout.buffer.write(marshal.dumps([['x']]))\"",
    f"exec {sys.executable} -c \"{_NOT_STRINGS}\"",             # a list per text, but not of strings
    "cat > /dev/null; kill -9 $$",                                 # killed
])
def test_a_helper_that_fails_or_answers_wrongly_leaves_the_texts_to_this_process(
        tmp_path, monkeypatch: pytest.MonkeyPatch, helper_on: list[int], helper: str) -> None:
    root = _vault(tmp_path)
    serial = _provisioned(root, monkeypatch, serial=True)
    monkeypatch.setattr(ahead_module.sys, "executable", _fake_helper(tmp_path, helper))
    assert _provisioned(root, monkeypatch, serial=False) == serial
    assert helper_on and set(helper_on) == {0}  # nothing taken from it


def test_offered_texts_get_the_korean_analyzers_terms(monkeypatch: pytest.MonkeyPatch, helper_on: list[int]) -> None:
    ahead = KoreanAhead()
    texts = [*KOREAN, "no Hangul here", KOREAN[0], "Obsidian 동기화 " * 40]
    for text in texts:
        ahead.offer(text)
    ready = ahead.terms()
    assert set(ready) == {text for text in texts if text != "no Hangul here"}
    assert all(ready[text] == KoreanAnalyzer()(text) for text in ready)
    assert ahead.terms() is ready  # once


def test_no_helper_without_a_second_core_enough_hangul_or_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[bool] = []
    monkeypatch.setattr(KoreanAhead, "_start", lambda self: started.append(True) or False)
    monkeypatch.setattr(ahead_module, "cores", lambda: 2)
    monkeypatch.delenv("VAULTEVAL_BUILD_WORKERS", raising=False)
    ahead = KoreanAhead()
    for text in KOREAN:
        ahead.offer(text)
    assert ahead.terms() == {} and started == []  # below AHEAD_FROM: Kiwi is loaded in the build's process
    for cores, workers in ((1, None), (2, "1")):
        monkeypatch.setattr(ahead_module, "cores", lambda: cores)
        if workers:
            monkeypatch.setenv("VAULTEVAL_BUILD_WORKERS", workers)
        ahead = KoreanAhead()
        ahead.offer("메모 " * ahead_module.AHEAD_FROM)
        assert ahead.terms() == {} and started == []


def test_a_helper_starts_only_while_korean_is_a_small_share_of_the_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[bool] = []
    monkeypatch.setattr(KoreanAhead, "_start", lambda self: started.append(True) or False)
    monkeypatch.setattr(ahead_module, "cores", lambda: 2)
    monkeypatch.delenv("VAULTEVAL_BUILD_WORKERS", raising=False)
    korean = [f"{n} 메모를 지웠다. 이전 버전은 얼마나 보관되나요? " * 40 for n in range(40)]
    english = [f"{n} The vault keeps every note as a plain text file on your device. " * 40 for n in range(400)]
    assert sum(map(len, korean)) > ahead_module.AHEAD_FROM
    mostly_korean = KoreanAhead()
    for text in english[:5] + korean:
        mostly_korean.offer(text)
    assert started == []  # Kiwi on every core here is faster: the build has little else to do meanwhile
    assert mostly_korean.terms() == {} and started == []
    korean_among_others = KoreanAhead()
    for text in english + korean:
        korean_among_others.offer(text)
    assert started == [True]


def test_texts_past_the_share_are_left_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ahead_module, "cores", lambda: 2)
    monkeypatch.setattr(ahead_module, "BATCH_CHARS", 1_000)
    monkeypatch.delenv("VAULTEVAL_BUILD_WORKERS", raising=False)
    ahead = KoreanAhead()
    ahead.offer("The vault keeps every note as a plain text file on your device. " * 1_600)  # about 100,000
    korean = [f"{n} 메모를 지웠다. 이전 버전은 얼마나 보관되나요? " * 20 for n in range(100)]  # about 58,000
    for text in korean:
        ahead.offer(text)
    ready = ahead.terms()
    sent = [text for text in korean if text in ready]
    assert sent == korean[:len(sent)] and 20_000 <= sum(map(len, sent)) <= 25_000 + 1_000
    assert all(ready[text] == KoreanAnalyzer()(text) for text in sent[:3])


def test_closing_before_the_answer_stops_the_helper(monkeypatch: pytest.MonkeyPatch, helper_on: list[int]) -> None:
    ahead = KoreanAhead()
    ahead.offer("The vault keeps every note as a plain text file. " * 100)  # the build's other work
    for n in range(200):
        ahead.offer(f"{n} " + " ".join(KOREAN))
    helper = ahead._helper
    assert helper is not None
    ahead.close()
    assert helper.poll() is not None and ahead.terms() == {}
