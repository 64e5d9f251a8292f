"""doctor's findability audit and fix lines: every note with text and no servable chunk is listed with its
reason, and every fix line doctor prints works as printed (same notes folder, same embedder and model).

Usage: ``.venv/bin/python -m pytest tests/pipeline/test_doctor_findable.py -q``
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from vaulteval import Vault
from vaulteval.chunks.chunking import sha256_text
from vaulteval.pipeline import findable
from vaulteval.pipeline.embed import embed_command
from vaulteval.embeddings.store import open_store, store_path

from pipeline_fixtures import DESCALING_NOTE, put_record, records_for, retrieve_json, run_json, run_main

NOTES = {
    "content/Meshlets.md": ("# Meshlets\n\nMeshlets split a mesh into small clusters for culling.\n\n```cpp\n"
                            "struct Meshlet { int v[64]; };\n```\n\n![[../assets/meshlets.png|meshlets.png]]\n"
                            "## References\n").replace("\n", "\r\n"),
    "content/Concepts/Coffee nap.md": "# Coffee nap\n\nA short nap right after coffee; see [[./Adenosine|sleep pressure]].\n",
    "content/Concepts/Adenosine.md": "# Adenosine\n\nAdenosine builds up while awake and makes you sleepy.\n",
}


def _doctor(root: Path) -> tuple[int, dict]:
    code, out, err = run_main("doctor", "--json", "--vault", root)
    return code, json.loads(out)


def _run_fix(report: dict) -> None:
    """Run doctor's fix line exactly as printed (through the CLI's own argument parser)."""
    argv = shlex.split(report["rebuild"])
    assert argv[0] == "vaulteval"
    code, _out, err = run_main(*argv[1:])
    assert code == 0, f"{report['rebuild']!r} failed: {err}"


def _fix_until_verified(root: Path, report: dict) -> dict:
    _run_fix(report)
    code, after = _doctor(root)
    assert (code, after["state"], after["problems"], after["unfindable_notes"]) == (0, "verified", [], [])
    return after


@pytest.fixture(scope="module")
def st_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault of notes under content/ (no .obsidian/: the folder is named and recorded), embedded with
    sentence-transformers."""
    root = tmp_path_factory.mktemp("st") / "garden"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode())
    run_json("provision", "--vault", root, "--notes-dir", "content", "--embed", "--embedder", "st")
    return root


def test_a_note_like_meshlets_is_served_and_doctor_is_verified(st_vault: Path) -> None:
    result = retrieve_json(st_vault, "meshlets")
    assert result["candidates"][0]["page_path"] == "content/Meshlets.md"  # the vault's default (hybrid) ranks others after it
    assert result["explain"]["stale_candidates_skipped"] == 0
    code, report = _doctor(st_vault)
    assert (code, report["state"], report["unfindable_notes"], report["refused_chunks"]) == (0, "verified", [], 0)
    assert report["embeddings"]["state"] == "current"


def test_the_embed_fix_line_names_the_vaults_embedder_model_and_notes_folder(st_vault: Path) -> None:
    line = embed_command(Vault(st_vault))
    store = open_store(Vault(st_vault).meta_dir)
    assert store.backend == "sentence-transformers"
    assert line == (f"vaulteval provision --vault {shlex.quote(str(st_vault))} --notes-dir content --embed "
                    f"--embedder st --model {shlex.quote(store.model)}")


def test_every_fix_line_doctor_prints_works_on_an_st_vault(st_vault: Path, tmp_path: Path) -> None:
    import shutil

    root = Path(shutil.copytree(st_vault, tmp_path / "garden", symlinks=True))

    # 1. Damaged vectors: the fix re-embeds with sentence-transformers (Ollama is not there).
    path = store_path(Vault(root).meta_dir)
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    code, report = _doctor(root)
    assert code == 1 and report["embeddings"]["state"] == "unusable"
    assert "--embedder st --model" in report["rebuild"] and "--notes-dir content" in report["rebuild"]
    _fix_until_verified(root, report)
    assert open_store(Vault(root).meta_dir).backend == "sentence-transformers"

    # 2. A record whose text is not the note's (right checksums, indexed): listed, and --rebuild rewrites it.
    page = "content/Concepts/Adenosine.md"
    rec = records_for(root, page)[0]
    assert len(records_for(root, page)) == 1
    rec["raw_text"] = rec["raw_text"].replace("sleepy", "grumpy")
    rec["body_hash"] = sha256_text(rec["raw_text"])
    rec["contextualized_text"] = f"{rec['prefix']}\n\n{rec['raw_text']}"
    put_record(root, rec, key=page)
    run_json("index", "build", "--vault", root)
    code, report = _doctor(root)
    assert code == 1 and report["refused_chunks"] == 1
    assert report["unfindable_notes"] == [{"page_path": page, "reason": findable.REFUSED}]
    assert report["rebuild"].endswith(" --rebuild")
    served = [c["page_path"] for c in retrieve_json(root, "adenosine")["candidates"]]
    assert page not in served  # what doctor says: no query finds it
    _fix_until_verified(root, report)
    assert retrieve_json(root, "adenosine")["candidates"][0]["page_path"] == page

    # 3. A changed note and a new one: each listed with its reason; the fix keeps the st vectors current.
    with open(root / "content" / "Concepts" / "Coffee nap.md", "a") as fh:
        fh.write("\nTwenty minutes at most.\n")
    (root / "content" / "Caffeine.md").write_text("# Caffeine\n\nCaffeine blocks adenosine receptors.\n")
    code, report = _doctor(root)
    assert code == 1
    assert report["unfindable_notes"] == [{"page_path": "content/Caffeine.md", "reason": findable.NOT_INDEXED},
                                          {"page_path": "content/Concepts/Coffee nap.md", "reason": findable.CHANGED}]
    after = _fix_until_verified(root, report)
    assert after["embeddings"]["state"] == "current" and after["embeddings"]["backend"] == "sentence-transformers"


def test_doctor_text_lists_each_unfindable_note_with_its_reason(fresh_vault: Path) -> None:
    with open(fresh_vault / DESCALING_NOTE, "a") as fh:
        fh.write("\nOne more line.\n")
    code, out, _err = run_main("doctor", "--vault", fresh_vault)
    assert code == 1
    assert f"  unfindable: {DESCALING_NOTE}: {findable.CHANGED}" in out.splitlines()
    assert f"  fix: vaulteval provision --vault {shlex.quote(str(fresh_vault))}" in out.splitlines()


def test_an_empty_note_and_an_emptied_one_are_not_unfindable(fresh_vault: Path) -> None:
    (fresh_vault / "wiki" / "Empty.md").write_text("---\ntags: [x]\n---\n%% nothing shown %%\n")
    (fresh_vault / DESCALING_NOTE).write_text("")
    _code, report = _doctor(fresh_vault)
    assert report["unfindable_notes"] == []
    assert "wiki/Empty.md" in report["empty_pages"] and report["stale_pages"] == 1
