"""Fuzz what vaulteval reads from disk: note frontmatter (provision), chunk records (index build,
retrieve) and the chunk catalog (provision). Only documented exit codes, one line, notes unchanged.

Usage: ``VAULTEVAL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/fuzz -q``
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from vaulteval.chunks.chunking import sha256_bytes, sha256_text
from vaulteval.vault.metadir import META_REL

from fuzzkit import Scratch, cli_ok, count, fuzz_settings
from pipeline_fixtures import put_payload, snapshot, write_note

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                    st.text(max_size=40), st.binary(max_size=10).map(lambda b: b.decode("latin-1")))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                           max_leaves=12)
FRONT_KEYS = ["title", "address", "aliases", "tags", "beir_id", "date", st.text(max_size=12)]
front_dicts = st.dictionaries(st.one_of(*[st.just(k) if isinstance(k, str) else k for k in FRONT_KEYS]),
                              json_values, max_size=5)


def _yaml(d: dict) -> str:
    return yaml.safe_dump(d, allow_unicode=True, sort_keys=False)


page_bytes = st.one_of(
    front_dicts.map(lambda d: ("---\n" + _yaml(d) + "---\n\nBody text about espresso.\n").encode("utf-8")),
    st.text(max_size=300).map(lambda t: ("---\n" + t + "\n---\nbody\n").encode("utf-8", "surrogatepass")),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=300),
    st.builds(lambda a, b: b"---\n" + a + b"\n...\n" + b, st.binary(max_size=100), st.binary(max_size=100)),
)


def _small_vault(root: Path) -> Path:
    write_note(root, "wiki/espresso.md", "# Espresso\n\nDescale the espresso machine every month.\n")
    write_note(root, "wiki/bread.md", "---\naddress: c-bread\n---\n# Bread\n\nA country loaf.\n")
    return root


@fuzz_settings()
@given(st.lists(page_bytes, min_size=1, max_size=3))
def test_frontmatter_through_provision(tmp_path: Path, pages: list[bytes]) -> None:
    with Scratch(tmp_path) as scratch:
        root = _small_vault(scratch / "v")
        for i, raw in enumerate(pages):
            (root / "wiki" / f"fuzz{i}.md").write_bytes(raw)
        count("frontmatter (pages)")
        notes = snapshot(root / "wiki")
        code, _, err = cli_ok("provision", "--vault", root, codes={0, 12})
        assert snapshot(root / "wiki") == notes
        if code == 0:
            cli_ok("retrieve", "--vault", root, "--no-rerank", "espresso", codes={0})
        else:
            assert "address" in err


def _record(raw: str, page_hash: str) -> dict:
    return {"schema_version": 1, "chunk_id": "fz:0", "page_path": "wiki/espresso.md", "page_address": "fz",
            "chunk_index": 0, "raw_text": raw, "contextualized_text": "Espresso.\n\n" + raw, "prefix": "Espresso.",
            "prefix_source": "synthetic", "char_count": len(raw), "body_hash": sha256_text(raw),
            "page_body_hash": page_hash, "created_at": "2026-01-01T00:00:00Z"}


FIELDS = list(_record("x", "y"))
record_bytes = st.one_of(
    # A valid record with some fields replaced by arbitrary JSON values (or removed).
    st.builds(lambda repl, drop: json.dumps({k: v for k, v in {**_record("fuzzword espresso", "?"), **repl}.items()
                                             if k not in drop}).encode(),
              st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=3),
              st.sets(st.sampled_from(FIELDS), max_size=2)),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
)


@fuzz_settings()
@given(st.lists(record_bytes, min_size=1, max_size=3))
def test_chunk_records_through_index_build_and_retrieve(tmp_path: Path, records: list[bytes]) -> None:
    with Scratch(tmp_path) as scratch:
        root = _small_vault(scratch / "v")
        cli_ok("provision", "--vault", root, codes={0})
        page_hash = sha256_bytes((root / "wiki/espresso.md").read_bytes())
        for i, raw in enumerate(records):
            put_payload(root, f"fz{i}", raw.replace(b'"?"', json.dumps(page_hash).encode(), 1)
                        .replace(b'"fz"', json.dumps(f"fz{i}").encode(), 1))
        count("chunk records")
        notes = snapshot(root / "wiki")
        cli_ok("index", "build", "--vault", root, codes={0})
        cli_ok("retrieve", "--vault", root, "--no-rerank", "fuzzword espresso", codes={0})
        cli_ok("doctor", "--vault", root, codes={0, 1})
        cli_ok("provision", "--vault", root, codes={0})
        assert snapshot(root / "wiki") == notes


# The binary catalog: any bytes, or the real file cut short, with a flipped bit or a byte overwritten.
catalog_damage = st.one_of(
    st.tuples(st.just("bytes"), st.binary(max_size=200)),
    st.tuples(st.just("cut"), st.integers(min_value=0, max_value=4000)),
    st.tuples(st.just("flip"), st.integers(min_value=0, max_value=4000), st.integers(min_value=0, max_value=7)),
    st.tuples(st.just("poke"), st.integers(min_value=0, max_value=4000), st.integers(min_value=0, max_value=255)),
)


def _damaged(data: bytes, damage: tuple) -> bytes:
    kind = damage[0]
    if kind == "bytes":
        return damage[1]
    if kind == "cut":
        return data[:damage[1] % (len(data) + 1)]
    at = damage[1] % len(data)
    byte = data[at] ^ (1 << damage[2]) if kind == "flip" else damage[2]
    return data[:at] + bytes([byte]) + data[at + 1:]


@fuzz_settings()
@given(catalog_damage)
def test_catalog_through_provision(tmp_path: Path, damage: tuple) -> None:
    with Scratch(tmp_path) as scratch:
        root = _small_vault(scratch / "v")
        cli_ok("provision", "--vault", root, codes={0})
        binary = root / META_REL / "chunk-catalog.vcc"
        binary.write_bytes(_damaged(binary.read_bytes(), damage))
        count("catalog")
        notes = snapshot(root / "wiki")
        _, _, err = cli_ok("provision", "--vault", root, codes={0})
        assert len([line for line in err.splitlines() if "chunk catalog" in line]) <= 1, err
        cli_ok("retrieve", "--vault", root, "--no-rerank", "descale espresso", codes={0})
        cli_ok("prefix", "--vault", root, "wiki/espresso.md", codes={0})
        assert snapshot(root / "wiki") == notes
