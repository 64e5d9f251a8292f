"""The cross-encoder reranker (``rerank:cross,model=PATH``) on a tiny model this module builds itself.

The model is a two-layer BERT with one output label, random weights and a small WordPiece vocabulary, saved
with ``save_pretrained`` (the sentence-transformers form) and exported with ``torch.onnx.export`` (the ONNX
form: ``model.onnx`` and ``tokenizer.json``). Its own scores, computed here with transformers, are the truth
the reranked order is checked against. Nothing is downloaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from evalkit import QUERYSET
from pipeline_fixtures import cli_env, run_json, run_main
from vaulteval import Vault
from vaulteval.cli.sample import copy_sample
from vaulteval.pipeline.provision import provision
from vaulteval.pipeline.retrieve import retrieve
from vaulteval.pipeline.spec import Pipeline
from vaulteval.pipeline.stages import registry
from vaulteval.workbench.strategy import Strategy

QUERY = "how do I descale the espresso machine"
WORDS = ("coffee machine espresso descale steam wand milk bread dough starter flour water warm kitchen basket "
         "the a and of is to in how do i weak flow smells sour").split()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    """``(folders by form, score(query, texts))``: the saved model in both forms, and its logits from torch."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    root = tmp_path_factory.mktemp("cross")
    st_dir, onnx_dir = root / "st", root / "onnx"
    st_dir.mkdir()
    onnx_dir.mkdir()
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *letters, *(f"##{c}" for c in letters)]
    (st_dir / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(st_dir / "vocab.txt"))
    torch.manual_seed(7)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=32, num_labels=1,
                                     initializer_range=0.5, attn_implementation="eager")
    net = transformers.BertForSequenceClassification(config).eval()
    net.save_pretrained(st_dir)
    tokenizer.save_pretrained(st_dir)
    tokenizer.backend_tokenizer.save(str(onnx_dir / "tokenizer.json"))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tokenizer(["a query", "q"], ["a longer passage of text", "p"], padding=True, return_tensors="pt")
    with warnings.catch_warnings():  # the tracer's notes on the legacy exporter
        warnings.simplefilter("ignore")
        torch.onnx.export(net, tuple(sample[n] for n in names), str(onnx_dir / "model.onnx"), dynamo=False,
                          input_names=names, output_names=["logits"], opset_version=17,
                          dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "logits": {0: "batch"}})

    def score(query: str, texts: list[str]) -> list[float]:
        encoded = tokenizer([query] * len(texts), texts, padding=True, truncation=True, max_length=512,
                            return_tensors="pt")
        with torch.no_grad():
            return net(**encoded).logits[:, 0].tolist()

    return {"onnx": onnx_dir, "sentence-transformers": st_dir}, score


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_sample(tmp_path_factory.mktemp("cross-vault") / "vault")
    provision(Vault(root))  # the default analyzer: eval run's strategies rank on this very index
    return root


@pytest.mark.parametrize("form", ["onnx", "sentence-transformers"])
def test_the_reranked_order_is_the_order_of_the_models_own_scores(model, vault: Path, form: str) -> None:
    folders, score = model
    pipeline = Pipeline.parse(f"rerank:cross,model={folders[form]}")
    result = retrieve(Vault(vault), QUERY, top=10, pipeline=pipeline)
    pool = result.pool
    assert len(pool) > 3 and result.label.reranker == f"cross-encoder:{form}"
    direct = score(QUERY, [c.context for c in pool])
    assert [c.rerank_score for c in pool] == pytest.approx(direct, abs=1e-4)
    assert max(direct) - min(direct) > 1e-2  # the scores differ, so the order below says something
    assert all(a >= b - 1e-4 for a, b in zip(direct, direct[1:]))  # best first by the model's own score


def test_the_onnx_form_runs_without_torch_from_the_cli(model, vault: Path) -> None:
    folders, _ = model
    code = ("import sys; from vaulteval.cli.main import main; "
            f"code = main(['retrieve', '--vault', {str(vault)!r}, {QUERY!r}, '--strategy', "
            f"'rerank:cross,model={folders['onnx']}']); "
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr); sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "NO-TORCH"
    assert json.loads(proc.stdout)["label"]["reranker"] == "cross-encoder:onnx"


def test_retrieve_the_cli_and_eval_run_rank_alike(model, vault: Path, tmp_path: Path) -> None:
    from vaulteval.querysets.queryset import load_queryset
    from vaulteval.workbench.evaluate import evaluate
    from vaulteval.workbench.runs import encode_doc_id
    from vaulteval.workbench.verify import verify_run

    folders, _ = model
    text = f"rerank:cross,model={folders['onnx']}"
    api = retrieve(Vault(vault), QUERY, top=10, pipeline=Pipeline.parse(text))
    cli = run_json("retrieve", "--vault", vault, QUERY, "--top", 10, "--strategy", text)
    assert [c["chunk_id"] for c in cli["candidates"]] == [c.chunk_id for c in api.candidates]
    assert cli["pipeline"] == {"text": text, "source": "strategy"}
    queryset = load_queryset(QUERYSET, Vault(vault))
    first = next(q for q in queryset if not q.is_negative)
    ev = evaluate(Vault(vault), queryset, [text], measures=["nDCG@10"])
    ranking = ev.runs[0].ranking(first.query_id)
    served = retrieve(Vault(vault), first.text, top=100, pipeline=Pipeline.parse(text))
    assert ranking == [c.page_path for c in served.candidates]
    manifest = json.loads((ev.save(tmp_path / "api", run_id="x") / "manifest.json").read_text(encoding="utf-8"))
    recorded = manifest["strategies"][0]["rerank"]
    assert recorded["backend"] == "cross-encoder:onnx" and recorded["model"] == str(folders["onnx"].resolve())
    assert recorded["digest"].startswith("sha256:") and recorded["fallback"] is None
    assert verify_run(tmp_path / "api" / "x").ok
    code, _, err = run_main("eval", "run", "--vault", vault, "--queryset", QUERYSET, "--strategy",
                            f"{text},name=cross", "--out", tmp_path / "runs")
    assert code == 0, err
    trec = next((tmp_path / "runs").glob("*/cross.trec")).read_text(encoding="utf-8").splitlines()
    assert [line.split()[2] for line in trec if line.split()[0] == first.query_id] == list(map(encode_doc_id, ranking))


@pytest.mark.parametrize("model_text, why", [
    ("/nonexistent/cross-encoder", "is not a folder"),
    ("", "needs model=PATH"),
])
def test_a_missing_model_folder_is_one_line_and_exit_2(vault: Path, model_text: str, why: str) -> None:
    strategy = "rerank:cross" + (f",model={model_text}" if model_text else "")
    code, out, err = run_main("retrieve", "--vault", vault, QUERY, "--strategy", strategy)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and why in err
    code, _, err = run_main("eval", "run", "--vault", vault, "--queryset", QUERYSET, "--strategy", strategy)
    assert code == 2 and len(err.strip().splitlines()) == 1 and why in err


def test_a_folder_without_a_model_is_one_line(vault: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run_main("retrieve", "--vault", vault, QUERY, "--strategy", f"rerank:cross,model={tmp_path / 'empty'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "neither model.onnx nor a config.json" in err


@pytest.mark.parametrize("text", ["rerank:cross,model=/m", "rerank:cross,model=/m,batch_size=8,w_title=2,bm25_top=20",
                                  "dense:rerank=cross,model=/m", "hybrid:cc,rerank=cross,model=/m,max_length=128"])
def test_the_pipeline_text_round_trips(text: str) -> None:
    pipeline = Pipeline.parse(text)
    assert pipeline.reranker.name == "cross" and pipeline.reranker["model"] == "/m"
    assert Pipeline.parse(pipeline.text()) == pipeline and pipeline.text() == text
    assert Pipeline.from_dict(json.loads(json.dumps(pipeline.to_dict()))) == pipeline
    strategy = Strategy.parse(text)
    assert Strategy.parse(strategy.text()) == strategy and strategy.pipeline == pipeline
    assert strategy.semantic and registry.written(type(pipeline.reranker)) == "rerank:cross"


def test_tune_keeps_the_reranker_and_the_vault_reads_it_back(model) -> None:
    from vaulteval.errors import UsageError
    from vaulteval.pipeline.spec import tuned_pipeline
    from vaulteval.pipeline.tuned import check_pipeline
    from vaulteval.workbench.tune import pipeline_settings

    folders, _ = model
    pipeline = Pipeline.parse(f"rerank:cross,model={folders['onnx']},max_length=128,bm25_top=20")
    settings = pipeline_settings(Strategy.parse(pipeline.text()))
    assert settings["rerank"] == {"stage": "cross", "model": str(folders["onnx"]), "batch_size": 32, "max_length": 128}
    check_pipeline(settings["rerank"], settings["bm25_top"])
    assert tuned_pipeline(settings) == pipeline
    with pytest.raises(UsageError, match="is not a folder"):
        check_pipeline({**settings["rerank"], "model": "/nonexistent/cross-encoder"}, 20)
