"""Shared helpers and fixtures for the retrieval-pipeline behaviour tests (tests/pipeline/, tests/cli/, tests/vault/ ...).

Usage (in a test module): ``from pipeline_fixtures import run_cli, snapshot``; the
fixtures (``provisioned_sample``, ``embedded_sample``, ``fresh_vault``, ``unprovisioned_vault``) come
from tests/conftest.py.
Nothing here mocks the package: vaults are real folders, the CLI is a real subprocess.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vaulteval import Vault
from vaulteval.cli.sample import copy_sample
from vaulteval.pipeline.provision import provision as provision_vault
from vaulteval.vault.metadir import META_REL

# Environment variables that could select a vault or a model behind a test's back.
_SCRUB = ("VAULTEVAL_VAULT", "CLAUDE_OBSIDIAN_VAULT", "OLLAMA_HOST", "OLLAMA_URL")

LONG_NOTE = "wiki/homelab/Home server build log.md"
CRLF_NOTE = "wiki/howto/Router reset.md"
EMPTY_NOTE = "wiki/inbox/Untitled.md"
CHINESE_NOTE = "wiki/tea/普洱茶.md"
JAPANESE_NOTE = "wiki/travel/京都の紅葉.md"
DESCALING_NOTE = "wiki/howto/Descaling.md"  # address c-000103, one chunk
SEED_FIELDS = (
    "page_path", "page_address", "chunk_index", "raw_text", "contextualized_text", "prefix",
    "prefix_source", "char_count", "body_hash", "page_body_hash",
)


def cli_env(**extra: str) -> dict[str, str]:
    """os.environ without vault/Ollama selection variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(extra)
    return env


def run_cli(*args: Any, env: dict[str, str] | None = None, cwd: Path | str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``python -m vaulteval ARGS`` in a subprocess; text output, never raises on exit code."""
    return subprocess.run(
        [sys.executable, "-m", "vaulteval", *map(str, args)],
        capture_output=True, text=True, env=env if env is not None else cli_env(),
        cwd=str(cwd) if cwd is not None else None, timeout=timeout,
    )


def run_cli_json(*args: Any, **kw: Any) -> Any:
    """Run the CLI in a subprocess, require exit 0 and return the parsed JSON on stdout."""
    proc = run_cli(*args, **kw)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}"
    return json.loads(proc.stdout)


def run_main(*args: Any) -> tuple[int, str, str]:
    """``vaulteval.cli.main.main(ARGS)`` in this process: (exit code, stdout, stderr). Fast; for functional tests."""
    from vaulteval.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def run_json(*args: Any) -> Any:
    """Run the CLI in-process (``main``), require exit 0 and return the parsed JSON on stdout."""
    code, out, err = run_main(*args)
    assert code == 0, f"exit {code}: {err}"
    return json.loads(out)


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int) -> str:
    """The exit code is ``code`` and stderr is exactly one non-empty line, no traceback."""
    assert proc.returncode == code, f"expected exit {code}, got {proc.returncode}; stderr={proc.stderr!r}"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), f"stderr is not one line: {proc.stderr!r}"
    return lines[0]


def make_vault(dest: Path, *, provision: bool = True) -> Path:
    """Copy the bundled sample vault to ``dest`` (and provision it in-process)."""
    root = copy_sample(dest)
    if provision:
        provision_vault(Vault(root))
    return root


def sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()


def snapshot(root: Path, *, mtimes: bool = True) -> dict[str, tuple]:
    """Every entry under ``root`` (dirs, files with content hash [+ mtime], symlinks with target)."""
    out: dict[str, tuple] = {}
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            st = os.lstat(full)
            if full.is_symlink():
                out[rel] = ("link", os.readlink(full))
            elif full.is_dir():
                out[rel] = ("dir",)
            else:
                digest = hashlib.sha256(full.read_bytes()).hexdigest()
                out[rel] = ("file", digest, st.st_mtime_ns) if mtimes else ("file", digest)
    return out


def chunk_locations(root: Path) -> list[tuple[str, int, int, str]]:
    """(location, frame size, CRC, chunk id) of every record the catalog names, in (address, index) order."""
    from vaulteval.chunks.catalog import catalog_listing
    from vaulteval.vault.metadir import MetaDir

    with MetaDir.open(Vault(root)) as meta:
        return catalog_listing(meta) or []


def chunk_records(root: Path) -> list[dict]:
    """Every chunk record of ``<root>/.vault-meta/vaulteval/store`` that the catalog names (by address, index)."""
    from vaulteval.chunks.segments import StoreReader

    reader = StoreReader(Path(root) / META_REL)
    try:
        return [reader.record(where, size, crc) for where, size, crc, _ in chunk_locations(root)]
    finally:
        reader.close()


def record_frame(root: Path, chunk_id: str) -> tuple[Path, int, int]:
    """(segment file, offset, byte length) of the compressed block that holds a chunk's record, to damage it."""
    from vaulteval.chunks.blocks import ENTRY, HEAD
    from vaulteval.chunks.segments import parse_location

    where, _size, _crc, _ = next(loc for loc in chunk_locations(root) if loc[3] == chunk_id)
    name, (offset, _number) = parse_location(where)
    path = Path(root) / META_REL / "store" / name
    n, c, _u, _ = HEAD.unpack_from(path.read_bytes(), offset)
    return path, offset, HEAD.size + n * ENTRY + c


def replace_record(root: Path, chunk_id: str, payload: bytes) -> str:
    """Point the catalog's entry for ``chunk_id`` at a new frame holding ``payload`` (any bytes, right CRC),
    as a damaged or hand-edited store would. Returns the new location."""
    import zlib

    from vaulteval.chunks.catalog import read_entries, write_entries
    from vaulteval.chunks.segments import SegmentWriter
    from vaulteval.vault.metadir import MetaDir

    address, _, idx = chunk_id.partition(":")
    with MetaDir.open(Vault(root)) as meta:
        with SegmentWriter(meta) as seg:
            where = seg.append_payload(payload, zlib.crc32(payload))
        settings, pages = read_entries(meta)
        info = next(i for i in pages.values() if i["address"] == address)
        info["records"][int(idx)] = list(where)
        write_entries(meta, settings, pages)
    return where[0]


def put_record(root: Path, rec: dict, key: str | None = None) -> str:
    """Add ``rec`` to the packed store as another tool could: a new segment, and a catalog entry naming it
    (``index build`` then indexes it like any record). Returns its location."""
    from vaulteval.chunks.segments import encode

    return put_payload(root, rec["page_address"], encode(rec), rec.get("page_body_hash"), key)


def put_payload(root: Path, address: str, payload: bytes, page_hash: str | None = None, key: str | None = None) -> str:
    """Any bytes as one record of the packed store (right CRC), named by a catalog entry for ``address``."""
    import zlib

    from vaulteval.chunks.catalog import read_entries, write_entries
    from vaulteval.chunks.segments import SegmentWriter
    from vaulteval.vault.metadir import MetaDir

    with MetaDir.open(Vault(root), create=True) as meta:
        with SegmentWriter(meta) as seg:
            where = seg.append_payload(payload, zlib.crc32(payload))
        settings, pages = read_entries(meta)
        pages[key or f"{address}.md"] = {"hash": page_hash if isinstance(page_hash, str) else "sha256:",
                                         "address": address, "chunks": 1, "stat": None, "records": [list(where)]}
        write_entries(meta, settings, pages)
    return where[0]


def forge_record(root: Path, chunk_id: str, edit) -> dict:
    """Rewrite a chunk's record in place with ``edit(record)`` applied and right CRCs (record and block; the
    record must keep its byte length, and the block its length, its stream padded with zeros when shorter)."""
    import zlib

    from vaulteval.chunks.blocks import ENTRY, HEAD, block_payloads
    from vaulteval.chunks.segments import decode_payload, encode, parse_location

    where, _size, _crc, _ = next(loc for loc in chunk_locations(root) if loc[3] == chunk_id)
    _name, (offset, number) = parse_location(where)
    path, offset, length = record_frame(root, chunk_id)
    data = bytearray(path.read_bytes())
    payloads = block_payloads(data, offset)
    rec = decode_payload(payloads[number])
    edit(rec)
    payload = encode(rec)
    assert len(payload) == len(payloads[number]), "the forged record must keep its length"
    payloads[number] = payload
    n = len(payloads)
    for level in range(9, -1, -1):
        comp = zlib.compressobj(level, zlib.DEFLATED, -15)
        stream = comp.compress(b"".join(payloads)) + comp.flush()
        if HEAD.size + n * ENTRY + len(stream) <= length:
            break
    stream += b"\x00" * (length - HEAD.size - n * ENTRY - len(stream))
    table = b"".join(len(p).to_bytes(4, "little") + zlib.crc32(p).to_bytes(4, "little") for p in payloads)
    head = HEAD.pack(n, len(stream), sum(map(len, payloads)), zlib.crc32(table + stream))
    data[offset:offset + length] = head + table + stream
    path.write_bytes(bytes(data))
    return rec


def records_for(root: Path, page_rel: str) -> list[dict]:
    return sorted((r for r in chunk_records(root) if r["page_path"] == page_rel), key=lambda r: r["chunk_index"])


def index_file(root: Path) -> Path:
    return Path(root) / META_REL / "bm25" / "index.vti"


def append_text(root: Path, page_rel: str, text: str) -> None:
    """Append ``text`` (bytes-exact, keeps the file's own newlines) to a note."""
    path = Path(root) / page_rel
    with open(path, "ab") as fh:
        fh.write(text.encode("utf-8"))


def write_note(root: Path, page_rel: str, text: str) -> Path:
    path = Path(root) / page_rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def retrieve_json(root: Path, query: str, *extra: Any) -> dict:
    """``vaulteval retrieve --vault ROOT QUERY --no-rerank --explain EXTRA`` -> parsed JSON."""
    return run_json("retrieve", "--vault", root, query, "--no-rerank", "--explain", *extra)


@pytest.fixture(scope="module")
def provisioned_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A provisioned copy of the sample vault shared by one test module; tests must not mutate it."""
    return make_vault(tmp_path_factory.mktemp("shared") / "vault")


@pytest.fixture(scope="module")
def embedded_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample vault provisioned with stored MiniLM vectors, shared by one test module; tests must
    not mutate it (copy it first)."""
    from vaulteval.pipeline.stages.embedder import EmbedderSettings

    root = copy_sample(tmp_path_factory.mktemp("embedded") / "vault")
    provision_vault(Vault(root), embed=EmbedderSettings("sentence-transformers"))
    return root


@pytest.fixture
def fresh_vault(tmp_path: Path) -> Path:
    """A provisioned copy of the sample vault of the test's own (free to mutate)."""
    return make_vault(tmp_path / "vault")


@pytest.fixture
def unprovisioned_vault(tmp_path: Path) -> Path:
    """A copy of the sample vault with no .vault-meta."""
    return make_vault(tmp_path / "bare-vault", provision=False)
