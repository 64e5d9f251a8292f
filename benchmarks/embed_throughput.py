"""Provisioning's embedding: ONNX Runtime (fp32, and int8 as a candidate) against today's torch path.

Usage::

    .venv/bin/python benchmarks/embed_throughput.py --scifact "$DATA/scifact" --help-vault /tmp/vdata/help/en \\
        --queryset querysets/obsidian-help-en.yaml --work "$(mktemp -d)" --scifact-docs 600

Two corpora: the help vault's chunks (the vault is copied into ``--work`` and
provisioned with ``--embed --embedder st``, which writes the ONNX export this
benchmark then uses) and a SciFact subset of ``--scifact-docs`` documents: the test claims, in
order, whose judged documents fill at most half of it, and the corpus's first
documents judged for no kept claim. Each form
embeds every text once, in the batches it uses in provisioning:

- ``torch``: today's path before this change: sentence-transformers, batches of
  64 in chunk order, torch's own thread count;
- ``onnx-fp32``: the vault's export through onnxruntime, the texts sorted by
  length (longest first), the session on all the machine's cores;
- ``onnx-int8``: the same graph after ``onnxruntime.quantization.quantize_dynamic``.

The forms' batches run interleaved (one batch of each in turn), so they share
the machine's load; each form's time is the sum of its own batches. Then
nDCG@10 (ir_measures) of dense retrieval with each form's own vectors, for
documents and queries alike: the 300 SciFact test claims over the subset, and
the query set over the help vault (pages ranked by their best chunk).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BATCH = 64


def scifact(folder: Path, limit: int) -> tuple[list[str], list[str], dict, dict]:
    """(doc ids, doc texts, {claim id: text}, qrels) of the test claims over the subset."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, score = line.split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    # The claims, in order, whose judged documents fill at most half the subset; then unjudged documents.
    judged: set[str] = set()
    for qid in list(qrels):
        if len(judged | set(qrels[qid])) > limit // 2:
            del qrels[qid]
        else:
            judged |= set(qrels[qid])
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    picked = [d for d in docs if d["_id"] in judged]
    picked += [d for d in docs if d["_id"] not in judged and not any(d["_id"] in r for r in qrels.values())
               ][: max(0, limit - len(picked))]
    claims = {q["_id"]: q["text"] for q in map(json.loads, (folder / "queries.jsonl").read_text().splitlines())
              if q["_id"] in qrels}
    return [d["_id"] for d in picked], [f"{d.get('title', '')}\n{d['text']}" for d in picked], claims, qrels


def help_vault(source: Path, work: Path, queryset: Path) -> tuple[list[str], list[str], dict, dict, Path]:
    """(page of each chunk, chunk texts, {query id: text}, qrels, the vault's ONNX export folder)."""
    import yaml

    vault_dir = work / "help-en"
    if not vault_dir.is_dir():  # (a later run in the same --work reuses it)
        shutil.copytree(source, vault_dir)
    (vault_dir / ".obsidian").mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    subprocess.run([sys.executable, "-m", "vaulteval", "provision", "--embed", "--embedder", "st", "--quiet",
                    "--vault", str(vault_dir)], check=True, env=env, stdout=subprocess.DEVNULL)
    from vaulteval.index.reader import open_index
    from vaulteval.pipeline.embed import chunk_items
    from vaulteval.vault.vault import Vault

    vault = Vault(vault_dir)
    page_of = {doc.chunk_id: doc.page_path for doc in open_index(vault).all_docs()}
    items = chunk_items(vault)
    data = yaml.safe_load(queryset.read_text(encoding="utf-8"))
    queries = {q["id"]: q["query"] for q in data["queries"]}
    qrels = {q["id"]: {p: int(g) for p, g in q["relevant"].items()} for q in data["queries"]}
    return ([page_of[cid] for cid, _, _ in items], [text for _, _, text in items], queries, qrels,
            vault_dir / ".vault-meta" / "vaulteval" / "onnx")


def quantized(export: Path, work: Path) -> Path:
    """A copy of the export whose graph has int8 weights (dynamic quantisation of MatMul/Gemm)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = work / "int8"
    out.mkdir(exist_ok=True)
    quantize_dynamic(str(export / "model.onnx"), str(out / "model.onnx"), weight_type=QuantType.QInt8)
    shutil.copy(export / "tokenizer.json", out / "tokenizer.json")
    return out


class Form:
    """One way of embedding: its batches in the order provisioning runs them, and the time they took."""

    def __init__(self, name: str, embedder, texts: list[str], sort: bool):
        self.name, self.embedder, self.seconds = name, embedder, 0.0
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i])) if sort else list(range(len(texts)))
        self.batches = [order[i : i + BATCH] for i in range(0, len(order), BATCH)]
        self.vectors = np.zeros((len(texts), 0), np.float32)
        self.texts = texts

    def run(self, b: int) -> None:
        rows = self.batches[b]
        t0 = time.perf_counter()
        got = np.stack(self.embedder.embed([self.texts[i] for i in rows]))
        self.seconds += time.perf_counter() - t0
        if self.vectors.shape[1] == 0:
            self.vectors = np.zeros((len(self.texts), got.shape[1]), np.float32)
        self.vectors[rows] = got


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def ndcg10(doc_vecs: np.ndarray, doc_ids: list[str], query_vecs: np.ndarray, qids: list[str], qrels: dict) -> float:
    """nDCG@10 of dense retrieval; a document id met twice (a page's chunks) keeps its best score."""
    import ir_measures
    from ir_measures import nDCG

    scores = unit(query_vecs) @ unit(doc_vecs).T
    run: dict[str, dict[str, float]] = {}
    for qi, qid in enumerate(qids):
        best: dict[str, float] = {}
        for di in np.argsort(-scores[qi], kind="stable")[:200]:
            best.setdefault(doc_ids[di], float(scores[qi, di]))
        run[qid] = best
    return float(ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10])


def measure(label: str, texts: list[str], forms: dict[str, tuple], doc_ids: list[str], queries: dict,
            qrels: dict) -> list[str]:
    made = {name: Form(name, emb, texts, sort) for name, (emb, sort) in forms.items()}
    for b in range(len(next(iter(made.values())).batches)):
        for form in (made.values() if b % 2 == 0 else reversed(list(made.values()))):
            form.run(b)
    qids = list(queries)
    base = made["torch"]
    rows = []
    for name, form in made.items():
        q = np.stack(forms[name][0].embed([queries[i] for i in qids]))
        score = ndcg10(form.vectors, doc_ids, q, qids, qrels)
        cos = (unit(form.vectors) * unit(base.vectors)).sum(axis=1).min()
        rows.append(f"| {label} | {name} | {len(texts)} | {form.seconds:.1f} s | {len(texts) / form.seconds:.1f} | "
                    f"{base.seconds / form.seconds:.2f}x | {score:.4f} | {cos:.6f} |")
        if name == "torch":
            torch_ndcg = score
            rows[-1] += " |"
        else:
            rows[-1] += f" {score - torch_ndcg:+.4f} |"
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scifact", required=True, type=Path)
    ap.add_argument("--help-vault", required=True, type=Path)
    ap.add_argument("--queryset", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--scifact-docs", type=int, default=600, help="subset size (the judged documents come first)")
    ap.add_argument("--no-int8", action="store_true")
    ap.add_argument("--corpora", default="help,scifact", help="which to measure (comma-separated)")
    args = ap.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    from vaulteval.embeddings.config import RerankConfig, resolve
    from vaulteval.embeddings.embedders import SentenceTransformerEmbedder
    from vaulteval.embeddings.onnxembed import OnnxEmbedder, machine_threads, open_bulk_onnx

    config = resolve(RerankConfig(backend="sentence-transformers"))
    pages, chunks, help_q, help_qrels, export = help_vault(args.help_vault, args.work, args.queryset)
    onnx = open_bulk_onnx(export, config)
    assert onnx is not None and onnx.form == "onnx-fp32", "the vault's export could not be opened"
    forms: dict[str, tuple] = {"torch": (SentenceTransformerEmbedder.load(config), False), "onnx-fp32": (onnx, True)}
    if not args.no_int8:
        # basic rewrites at open (the quantised graph was not rewritten when it was saved)
        int8 = OnnxEmbedder(str(config.model), quantized(export, args.work), {**onnx.info, "optimized": None})
        forms["onnx-int8"] = (int8, True)
    for emb, _ in forms.values():
        emb.embed(["warm up the model once before timing"])
    doc_ids, docs, claims, sf_qrels = scifact(args.scifact, args.scifact_docs)
    print(f"machine threads {machine_threads()}, load average {os.getloadavg()[0]:.1f}\n")
    print("| corpus | form | texts | embedding time | texts/s | vs torch | nDCG@10 | min cosine vs torch | "
          "nDCG@10 change |")
    print("|---|---|---|---|---|---|---|---|---|")
    if "help" in args.corpora:
        for row in measure("help vault en (chunks)", chunks, forms, pages, help_q, help_qrels):
            print(row, flush=True)
    if "scifact" in args.corpora:
        label = f"SciFact subset ({len(docs)} docs, {len(claims)} test claims)"
        for row in measure(label, docs, forms, doc_ids, claims, sf_qrels):
            print(row, flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
