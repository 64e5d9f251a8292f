"""The ONNX query embedder against torch on SciFact: vector agreement and identical dense rankings.

Usage::

    .venv/bin/python benchmarks/onnx_vs_torch.py --scifact "$DATA/scifact" --work /tmp/onnx-scifact

The corpus (5,183 abstracts, title and text) is embedded once with MiniLM
through sentence-transformers, as ``provision --embed --embedder st`` would
store it (vectors cached in ``--work``). The 300 test claims are embedded twice:
with torch, and with the ONNX export ``provision`` makes
(``vaulteval.rerank.onnxexport``, the same probe check included) run by
onnxruntime + tokenizers. Prints the smallest cosine between the two vectors
of a claim, the largest difference of a document's cosine, and how many
claims get a different top-10 / top-100 order over the corpus.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def load(scifact: Path) -> tuple[list[str], list[str]]:
    with gzip.open(scifact / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    test_ids = {line.split("\t")[0] for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    queries = [json.loads(line) for line in (scifact / "queries.jsonl").read_text().splitlines()]
    claims = [q["text"] for q in queries if q["_id"] in test_ids]
    return [f"{d.get('title', '')}\n{d['text']}" for d in docs], claims


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scifact", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    import onnxruntime
    from tokenizers import Tokenizer

    from vaulteval.rerank.config import RerankConfig, resolve
    from vaulteval.rerank.embedders import load_st_model
    from vaulteval.rerank.onnxembed import OnnxEmbedder
    from vaulteval.rerank.onnxexport import _export

    model = str(resolve(RerankConfig(backend="sentence-transformers")).model)
    st = load_st_model(model)
    docs, claims = load(args.scifact)
    cached = args.work / "corpus-minilm.npy"
    if cached.is_file():
        corpus = np.load(cached)
    else:
        t0 = time.perf_counter()
        corpus = unit(st.encode(docs, batch_size=64, convert_to_numpy=True, show_progress_bar=False))
        np.save(cached, corpus)
        print(f"# corpus embedded with torch in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    files, info = _export(model)
    print(f"# export: probe min cosine {info['min_cosine']:.8f}", file=sys.stderr)
    tokenizer = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
    tokenizer.enable_truncation(max_length=info["max_seq_length"])
    tokenizer.enable_padding(pad_id=info["pad_id"], pad_token=info["pad_token"])
    session = onnxruntime.InferenceSession(files["model.onnx"], providers=["CPUExecutionProvider"])
    onnx = OnnxEmbedder(model, session, tokenizer, info["output"], lower=info["do_lower_case"])
    torch_q = unit(st.encode(claims, convert_to_numpy=True, show_progress_bar=False))
    onnx_q = unit(np.stack([onnx.embed([c])[0] for c in claims]))  # one query at a time, as retrieval does
    agree = (torch_q * onnx_q).sum(axis=1)
    s_torch, s_onnx = torch_q @ corpus.T, onnx_q @ corpus.T
    differ, gaps = {}, {}
    for k in (10, 20, 100):
        top_t = np.argsort(-s_torch, axis=1, kind="stable")[:, :k]
        top_o = np.argsort(-s_onnx, axis=1, kind="stable")[:, :k]
        rows = np.flatnonzero((top_t != top_o).any(axis=1))
        differ[k] = len(rows)
        # How close, in torch's own cosines, the documents that swapped places were: ties below float32's grain.
        gaps[k] = max((float(np.abs(np.diff(s_torch[r, top_t[r]])).min()) for r in rows), default=0.0)
    print(f"| claims | {len(claims)} |\n| corpus | {len(docs)} |")
    print(f"| smallest cosine(torch, onnx) of a claim's vector | {agree.min():.8f} (1 - {1 - agree.min():.1e}) |")
    print(f"| largest difference of a document's cosine | {np.abs(s_torch - s_onnx).max():.2e} |")
    for k in (10, 20, 100):
        print(f"| claims whose top-{k} order differs | {differ[k]} (smallest gap between neighbours in them: "
              f"{gaps[k]:.1e}) |")
    return 0 if agree.min() >= 1 - 1e-4 and differ[10] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
