"""Store a judge's weight matrices as int8, the way the default model's file stores its own.

Each float matrix a MatMul reads from the graph's initialisers becomes an int8 tensor with one
scale per output column (symmetric: the column's largest magnitude maps to 127) and a Cast →
Mul before the MatMul, so the file is about a quarter of the float one and onnxruntime still
computes in float (recall's int8 compute rewrites the same pattern). Embeddings that a Gather
reads are stored the same way, one scale per row. Prints the size and the largest change in
the judge's probability on a few pairs.

Usage: python training/judge/int8.py JUDGE_DIR OUT_DIR
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def quantised(model: onnx.ModelProto) -> onnx.ModelProto:
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    uses: dict[str, list[tuple[str, int]]] = {}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            uses.setdefault(name, []).append((node.op_type, slot))
    made: list[onnx.NodeProto] = []
    for name, init in list(inits.items()):
        array = numpy_helper.to_array(init)
        kinds = {op for op, _ in uses.get(name, [])}
        if array.dtype != np.float32 or array.ndim != 2 or array.size < 4096:
            continue
        if kinds == {"MatMul"}:
            axis = 0  # x @ W: one scale per output column
        elif kinds == {"Gather"}:
            axis = 1  # an embedding table: one scale per row
        else:
            continue
        top = np.abs(array).max(axis=axis, keepdims=True)
        scale = np.where(top > 0, top / 127.0, 1.0).astype(np.float32)
        q = np.clip(np.rint(array / scale), -127, 127).astype(np.int8)
        graph.initializer.remove(init)
        graph.initializer.extend(
            [
                numpy_helper.from_array(q, f"{name}_q"),
                numpy_helper.from_array(scale, f"{name}_scale"),
            ]
        )
        made += [
            helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [name]),
        ]
    # The dequantising nodes come first: every later node reads their outputs by the old names.
    nodes = made + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    return model


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    model = quantised(onnx.load(str(source / "model.onnx")))
    onnx.save(model, str(out / "model.onnx"))
    for name in ("tokenizer.json", "recall-judge.json", "training.json"):
        if (source / name).exists():
            shutil.copy2(source / name, out / name)
    import onnxruntime as ort
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(source / "tokenizer.json"))
    pairs = [
        ("What does shutil.copyfile do?", "Copy the contents of the file named src to dst."),
        ("What does shutil.copyfile do?", "Return disk usage statistics about the given path."),
        ("How do I stop a runaway loop?", "Press Control-C: the interpreter raises an error."),
    ]
    change = 0.0
    before, after = (ort.InferenceSession(str(d / "model.onnx")) for d in (source, out))
    for question, passage in pairs:
        enc = tok.encode(question, passage)
        feed = {
            "input_ids": np.array([enc.ids], np.int64),
            "attention_mask": np.ones((1, len(enc.ids)), np.int64),
            "token_type_ids": np.array([enc.type_ids], np.int64),
        }
        p = [1 / (1 + np.exp(-s.run(None, feed)[0].item())) for s in (before, after)]
        change = max(change, abs(p[0] - p[1]))
    size = (out / "model.onnx").stat().st_size / 1e6
    print(f"{out / 'model.onnx'}: {size:.1f} MB; largest change in probability {change:.4f}")


if __name__ == "__main__":
    main()
