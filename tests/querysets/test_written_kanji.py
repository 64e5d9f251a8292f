"""Short questions in kanji alone (``暗号化``): Japanese in a vault whose CJK language is Japanese.

Han characters alone are identified as Chinese; a written question in a language the vault lacks is
refused, so without this rule a Japanese vault refused its own keywords.

Usage: ``.venv/bin/python -m pytest tests/querysets/test_written_kanji.py -q``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vaulteval.cli.main import main
from vaulteval.index.langs.auto import QueryAnalyzer
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import retrieve
from vaulteval.querysets.queryset import load_queryset
from vaulteval.querysets.written.checks import question_language, question_problem
from vaulteval.querysets.written.worksheet import make_worksheet
from vaulteval.vault.vault import Vault

from evalkit import snapshot

PROSE_JA = ("同期の設定を変更すると、すべてのデバイスでノートが暗号化されて保存されます。設定画面から暗号化の"
            "パスワードを選んでください。パスワードを忘れると、保存されたノートは元に戻せません。")
PROSE_ZH = "同步设置更改后，所有设备上的笔记都会被加密保存。请在设置页面选择加密密码。忘记密码后，笔记将无法恢复。"
KANJI = ["同期設定", "暗号化", "保存"]


def _vault(root: Path, pages: dict[str, str]) -> Vault:
    for rel, text in pages.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    return Vault(root)


@pytest.fixture
def ja_vault(tmp_path: Path) -> Vault:
    return _vault(tmp_path / "ja", {f"同期/ノート{i}.md": f"# ノート{i}\n\n{PROSE_JA * (2 + i % 3)}\n" for i in range(6)})


@pytest.mark.parametrize("question", KANJI)
def test_kanji_alone_is_japanese_where_the_vault_has_japanese_and_no_chinese(question: str) -> None:
    assert question_language(question, {"ja"}) == "ja"
    assert question_problem(question, {"ja", "en"}) is None
    assert question_language(question, {"zh", "ja"}) == "zh"  # both: as before, Chinese, which the vault has
    assert "language the vault lacks (zh" in question_problem(question, {"en", "de"})  # neither: still refused


def test_a_spaced_kanji_question_is_japanese_too() -> None:
    assert question_language("暗号化 同期 設定 変更 方法", {"ja", "en"}) == "ja"


def _add_written(vault: Vault, tmp_path: Path, questions: list[str], capsys) -> tuple[int, str]:
    make_worksheet(vault, tmp_path / "ws.yaml", n=3, seed=1)
    ws = yaml.safe_load((tmp_path / "ws.yaml").read_text(encoding="utf-8"))
    ws["notes"][0]["questions"], ws["writer"] = questions, "person"
    (tmp_path / "ws.yaml").write_text(yaml.safe_dump(ws, allow_unicode=True, sort_keys=False), encoding="utf-8")
    before = snapshot(vault.root)
    rc = main(["queryset", "add-written", str(tmp_path / "ws.yaml"), "--out", str(tmp_path / "set.yaml")])
    assert snapshot(vault.root) == before
    return rc, capsys.readouterr().err


def test_add_written_takes_kanji_questions_in_a_japanese_vault(ja_vault: Vault, tmp_path: Path, capsys) -> None:
    rc, err = _add_written(ja_vault, tmp_path, KANJI, capsys)
    assert rc == 0, err
    assert [q.text for q in load_queryset(tmp_path / "set.yaml").queries] == KANJI


def test_add_written_still_refuses_kanji_where_the_vault_has_no_cjk_language(tmp_path: Path, capsys) -> None:
    prose = "The kettle needs descaling every month when the water is hard. Citric acid works well. " * 3
    vault = _vault(tmp_path / "en", {f"Kettle {i}.md": f"# Kettle {i}\n\n{prose}\n" for i in range(4)})
    rc, err = _add_written(vault, tmp_path, ["暗号化"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "language the vault lacks (zh" in err
    assert not (tmp_path / "set.yaml").exists()


def test_add_written_in_a_chinese_and_japanese_vault_keeps_kanji_as_chinese(tmp_path: Path, capsys) -> None:
    pages = {f"ja/ノート{i}.md": f"# ノート{i}\n\n{PROSE_JA * 3}\n" for i in range(3)}
    pages.update({f"zh/笔记{i}.md": f"# 笔记{i}\n\n{PROSE_ZH * 3}\n" for i in range(3)})
    rc, err = _add_written(_vault(tmp_path / "zhja", pages), tmp_path, ["暗号化"], capsys)
    assert rc == 0, err


def test_retrieve_analyzes_kanji_as_japanese_in_a_japanese_vault(ja_vault: Vault) -> None:
    assert QueryAnalyzer({"ja": 6}).languages_for("暗号化") == (["ja"], False)
    codes, _plain = QueryAnalyzer({"ja": 6, "zh": 6}).languages_for("暗号化")
    assert sorted(codes) == ["ja", "zh"]  # both: as before
    provision(ja_vault, analyzer="auto")
    for question in KANJI:
        result = json.loads(retrieve(ja_vault, question, top=3).to_json())
        assert result["candidates"] and result["candidates"][0]["page_path"].startswith("同期/"), question
