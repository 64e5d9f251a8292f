"""The ONNX query embedder against torch on SciFact: vector agreement and identical dense rankings.

Usage::

    .venv/bin/python benchmarks/onnx_vs_torch.py --scifact "$DATA/scifact" --work /tmp/onnx-scifact
    .venv/bin/python benchmarks/onnx_vs_torch.py ... --open-runs 5    # and what opening the session costs

The corpus (5,183 abstracts, title and text) is embedded once with MiniLM
through sentence-transformers, as ``provision --embed --embedder st`` would
store it (vectors cached in ``--work``). The 300 test claims are embedded twice:
with torch, and with the ONNX export ``provision`` makes
(``vaulteval.embeddings.onnxexport``, the same probe check included, written to
``--work/export`` and opened by ``open_onnx`` as a query opens it) run by
onnxruntime + tokenizers. Prints the smallest cosine between the two vectors
of a claim, the largest difference of a document's cosine, and how many
claims get a different top-10 / top-100 order over the corpus.

With ``--open-runs N`` it also opens the session in N fresh processes per
layout and prints the median CPU and wall time of opening it and of one
claim's embedding, and whether each layout's claim vectors are bit-identical
to the chosen layout's: the graph with its weights inside and the basic
rewrites at open (the first export format), the chosen layout (rewritten at
provision, weights in their own mapped file), and the chosen layout without
weight prepacking.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
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
    ap.add_argument("--open-runs", type=int, default=0, help="fresh processes per layout for the open costs")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    from vaulteval.embeddings.config import RerankConfig, resolve
    from vaulteval.embeddings.embedders import load_st_model
    from vaulteval.embeddings.onnxembed import EXPORT_FILE, open_onnx
    from vaulteval.embeddings.onnxexport import _export

    config = resolve(RerankConfig(backend="sentence-transformers"))
    model = str(config.model)
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
    export = args.work / "export"
    export.mkdir(exist_ok=True)
    for name, data in files.items():
        (export / name).write_bytes(data)
    (export / EXPORT_FILE).write_text(json.dumps(info))  # no stat signatures: the files are checked by hash
    onnx = open_onnx(export, config)
    assert onnx is not None, "the export could not be opened"
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
    if args.open_runs:
        open_costs(export, claims, args.open_runs)
    return 0 if agree.min() >= 1 - 1e-4 and differ[10] == 0 else 1


# One fresh process: open the session as a query does (tokenizer, then session), embed the claims one at a time.
OPEN = """
import json, resource, sys, time
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
def rss_mb():  # this program's own peak (ru_maxrss of a child counts its parent's memory before exec)
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
folder, model, level, prepack, out = sys.argv[1:6]
info = json.load(open(folder + "/export.json"))
claims = json.load(open(out + ".claims"))
c0, t0 = cpu(), time.perf_counter()
tok = Tokenizer.from_file(folder + "/tokenizer.json")
tok.enable_truncation(max_length=info["max_seq_length"])
tok.enable_padding(pad_id=info["pad_id"], pad_token=info["pad_token"])
o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
o.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
if prepack == "0":
    o.add_session_config_entry("session.disable_prepacking", "1")
s = ort.InferenceSession(folder + "/" + model, o, providers=["CPUExecutionProvider"])
c1, t1 = cpu(), time.perf_counter()
vecs = []
for text in claims:
    e = tok.encode_batch([text])
    feed = {k: np.array([getattr(x, a) for x in e], dtype=np.int64) for k, a in
            (("input_ids", "ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "type_ids"))}
    vecs.append(s.run(["sentence_embedding"], feed)[0][0])
c2, t2 = cpu(), time.perf_counter()
np.save(out, np.stack(vecs))
print(json.dumps({"open_cpu": c1 - c0, "open_wall": t1 - t0, "query_cpu": (c2 - c1) / len(claims),
                  "query_wall": (t2 - t1) / len(claims), "rss_mb": rss_mb()}))
"""


def open_costs(export: Path, claims: list[str], runs: int) -> None:
    """Median open and per-claim costs of three layouts in fresh processes, interleaved so they share the load."""
    import onnx

    single = export.parent / "single"  # the first export format: weights inside the graph, rewritten at open
    single.mkdir(exist_ok=True)
    onnx.save_model(onnx.load(str(export / "model.onnx")), str(single / "model.onnx"))
    for name in ("tokenizer.json", "export.json"):
        (single / name).write_bytes((export / name).read_bytes())
    layouts = {"weights inside the graph, basic rewrites at open (first format)": (single, "ORT_ENABLE_BASIC", "1"),
               "rewritten at provision, weights mapped from model.data (chosen)": (export, "ORT_DISABLE_ALL", "1"),
               "the same without weight prepacking": (export, "ORT_DISABLE_ALL", "0")}
    sample = claims[:20]
    out = export.parent / "open-vectors"
    out.with_suffix(".claims").write_text(json.dumps(sample))
    seen: dict[str, list[dict]] = {name: [] for name in layouts}
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in layouts}
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    for _ in range(runs):
        for name, (folder, level, prepack) in layouts.items():
            proc = subprocess.run([sys.executable, "-c", OPEN, str(folder), "model.onnx", level, prepack, str(out)],
                                  capture_output=True, text=True, env=env, check=True)
            seen[name].append(json.loads(proc.stdout))
            vectors[name].append(np.load(str(out) + ".npy"))
    chosen = next(v[0] for name, v in vectors.items() if "(chosen)" in name)
    same = {name: all(np.array_equal(v, chosen) for v in vs) for name, vs in vectors.items()}
    print(f"\n{runs} fresh processes per layout, load average {os.getloadavg()[0]:.1f}; 20 claims each\n")
    print("| layout | open: CPU / wall (median) | one claim: CPU / wall | peak RSS | vectors bit-identical to chosen |")
    print("|---|---|---|---|---|")
    for name, rows in seen.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"| {name} | {med['open_cpu'] * 1000:.0f} / {med['open_wall'] * 1000:.0f} ms | "
              f"{med['query_cpu'] * 1000:.1f} / {med['query_wall'] * 1000:.1f} ms | {med['rss_mb']:.0f} MB | "
              f"{'yes' if same[name] else 'no'} |")


if __name__ == "__main__":
    raise SystemExit(main())
