"""Tiny ONNX models the tests build themselves with the `onnx` package and run for real with
onnxruntime: a sentence embedder and a QNLI-style cross-encoder, each with a word-level
tokenizer.json written by `tokenizers`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def write_tokenizer(path: Path, words: Sequence[str]) -> dict[str, int]:
    """A lower-casing word-level tokenizer; pairs are encoded `[CLS] a [SEP] b [SEP]`."""
    vocab = {w: i for i, w in enumerate([*SPECIALS, *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.save(str(path))
    return vocab


def _ids_inputs(
    names: Sequence[str] = ("input_ids", "attention_mask", "token_type_ids"),
    dtype: int = TensorProto.INT64,
) -> list[onnx.ValueInfoProto]:
    return [helper.make_tensor_value_info(name, dtype, ["batch", "tokens"]) for name in names]


def _save(graph: onnx.GraphProto, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def build_embedder(
    directory: Path,
    words: Sequence[str],
    dim: int = 8,
    seed: int = 0,
    pooled: bool = False,
    matmul: bool = False,
    int32: bool = False,
    extra_input: str | None = None,
) -> np.ndarray:
    """model.onnx + tokenizer.json in `directory`; returns the embedding table.

    Each token's hidden state is its embedding plus the masked mean of the sequence's
    embeddings, so the output depends on the attention mask the caller feeds (padding that
    leaked into it would change the vectors). `pooled` adds the graph's own masked mean as a
    [batch, dim] output named `pooled` (listed first) instead of the token states. `matmul`
    projects the token states through a [dim, 64] weight (something to quantise). `int32`
    declares the token inputs as int32; `extra_input` declares one more (unused) input.
    """
    directory.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(directory / "tokenizer.json", words)
    table = np.random.default_rng(seed).normal(size=(len(vocab), dim)).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["emb"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["emb", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["total"], keepdims=1),
        helper.make_node("ReduceSum", ["mask3", "axis1"], ["count"], keepdims=1),
        helper.make_node("Div", ["total", "count"], ["mean"]),
        helper.make_node("Add", ["emb", "mean"], ["hidden"]),
    ]
    extra = []
    if matmul:
        nodes[-1].output[0] = "states"
        nodes.append(helper.make_node("MatMul", ["states", "proj"], ["hidden"]))
        proj = np.random.default_rng(seed + 1).normal(size=(dim, 64)).astype(np.float32)
        extra.append(numpy_helper.from_array(proj, "proj"))
    width = 64 if matmul else dim
    outputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["b", "t", width])]
    if pooled:
        nodes.append(helper.make_node("Squeeze", ["mean", "axis1"], ["pooled"]))
        outputs.insert(0, helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["b", dim]))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    graph = helper.make_graph(
        nodes,
        "tiny-embedder",
        _ids_inputs(
            [*names, extra_input] if extra_input else names,
            TensorProto.INT32 if int32 else TensorProto.INT64,
        ),
        outputs,
        initializer=[
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
            *extra,
        ],
    )
    _save(graph, directory / "model.onnx")
    return table


def reference_embedding(table: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """What the tiny embedder gives for one unpadded sequence after mean pooling and L2."""
    emb = table[list(ids)]
    hidden = emb + emb.mean(axis=0)
    v = hidden.mean(axis=0)
    return v / np.linalg.norm(v)


def build_judge(
    directory: Path,
    words: Sequence[str],
    entailing: Sequence[str],
    two_labels: bool = False,
    config: dict[str, object] | None = None,
) -> None:
    """A cross-encoder whose logit is +4 when the pair contains any `entailing` word, else -4.

    With `two_labels` it outputs [not_entailment, entailment] logits (softmax, label 1).
    """
    directory.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(directory / "tokenizer.json", words)
    weights = np.full((len(vocab), 1), -4.0, dtype=np.float32)
    for w in entailing:
        weights[vocab[w]] = 4.0
    nodes = [
        helper.make_node("Gather", ["weights", "input_ids"], ["per_token"]),
        helper.make_node("ReduceMax", ["per_token"], ["logit"], axes=[1], keepdims=0),
    ]
    out_dim = 1
    if two_labels:
        nodes.append(helper.make_node("Neg", ["logit"], ["neg"]))
        nodes.append(helper.make_node("Concat", ["neg", "logit"], ["logits"], axis=1))
        out_dim = 2
    else:
        nodes.append(helper.make_node("Identity", ["logit"], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "tiny-judge",
        _ids_inputs(),
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", out_dim])],
        initializer=[numpy_helper.from_array(weights, "weights")],
    )
    _save(graph, directory / "model.onnx")
    if config is not None:
        (directory / "recall-judge.json").write_text(json.dumps(config), encoding="utf-8")
