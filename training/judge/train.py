"""Train recall's judge: the default model read as a cross-encoder, (question, passage) in one
pass, with one logit over the first token's state, fine-tuned on `pairs.py`'s pairs.

Seeded (the pages held out, the order of the pairs, the head's start), and the data's SHA-256
is recorded: the same pairs, seed and torch give the same model. Pages, not pairs, are held
out, so no page's wording is both learned and tested; the held-out AUC and the near misses'
share above 0.5 are printed. The folder written is a judge recall loads (`--judge DIR`):
`model.onnx` (float32; `recall models quantize DIR OUT --judge` makes the int8 one),
`tokenizer.json`, `recall-judge.json`, and `training.json` with what made it.

Usage: python training/judge/train.py PAIRS.jsonl OUT_DIR [--seed 0] [--epochs 1]
       [--max-tokens 192] [--batch 16] [--lr 3e-5] [--held-out 0.2] [--limit N]
       (torch is this script's dependency, never the package's)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from minilm import TOKENIZER, WIDTH, MiniLM, load
from torch import nn


class Judge(nn.Module):
    """P(passage answers question) as a logit, from the first token's state of the pair."""

    def __init__(self, encoder: MiniLM) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(WIDTH, 1)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        states = self.encoder(input_ids, attention_mask, token_type_ids)
        return self.head(states[:, 0])


def batches(
    rows: list[dict[str, Any]], tok: Any, size: int
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    out = []
    for i in range(0, len(rows), size):
        chunk = rows[i : i + size]
        encs = [tok.encode(r["question"], r["passage"]) for r in chunk]
        width = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), width), np.int64)
        mask, types = np.zeros_like(ids), np.zeros_like(ids)
        for j, e in enumerate(encs):
            ids[j, : len(e.ids)] = e.ids
            mask[j, : len(e.ids)] = 1
            types[j, : len(e.ids)] = e.type_ids
        labels = torch.tensor([float(r["label"]) for r in chunk])
        out.append((torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types), labels))
    return out


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--held-out", type=float, default=0.2)
    parser.add_argument("--limit", type=int, default=None, help="train on this many pairs")
    args = parser.parse_args()
    import tokenizers

    data = args.pairs.read_bytes()
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    pages = sorted({r["group"] for r in rows})
    rng.shuffle(pages)
    held = set(pages[: int(len(pages) * args.held_out)])
    train = [r for r in rows if r["group"] not in held]
    test = [r for r in rows if r["group"] in held]
    rng.shuffle(train)
    if args.limit:
        train = train[: args.limit]
    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    tok.no_padding()
    tok.enable_truncation(args.max_tokens, strategy="only_second")

    model = Judge(load())
    steps = args.epochs * ((len(train) + args.batch - 1) // args.batch)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / (steps - warm)))
    )
    negatives = sum(1 for r in train if r["label"] == 0)
    weight = torch.tensor(negatives / max(1, len(train) - negatives))
    loss_of = nn.BCEWithLogitsLoss(pos_weight=weight)
    print(f"{len(train)} training pairs, {len(test)} held out ({len(held)} pages); {steps} steps")
    started = time.perf_counter()
    step = 0
    model.train()
    for epoch in range(args.epochs):
        order = list(train)
        random.Random(args.seed + epoch).shuffle(order)
        for ids, mask, types, labels in batches(order, tok, args.batch):
            loss = loss_of(model(ids, mask, types).squeeze(1), labels)
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            step += 1
            if step % 50 == 0 or step == steps:
                minutes = (time.perf_counter() - started) / 60
                print(f"step {step}/{steps} loss {loss.item():.4f} {minutes:.1f} min", flush=True)
    trained = time.perf_counter() - started

    model.eval()
    scores: list[float] = []
    with torch.no_grad():
        for ids, mask, types, _ in batches(test, tok, 64):
            scores.extend(torch.sigmoid(model(ids, mask, types).squeeze(1)).tolist())
    s, y = np.array(scores), np.array([r["label"] for r in test])
    kinds = np.array([r["negative"] or "answer" for r in test])
    report = {
        "held_out_auc": round(auc(s, y), 4),
        "answers_above_half": round(float((s[y == 1] >= 0.5).mean()), 4),
        "near_misses_above_half": {
            k: round(float((s[kinds == k] >= 0.5).mean()), 4) for k in ("sibling", "lookalike")
        },
    }
    print(json.dumps(report))

    args.out.mkdir(parents=True, exist_ok=True)
    ids, mask, types, _ = batches(test[:2], tok, 2)[0]
    torch.onnx.export(
        model,
        (ids, mask, types),
        str(args.out / "model.onnx"),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes={
            n: {0: "batch", 1: "sequence"}
            for n in ("input_ids", "attention_mask", "token_type_ids")
        }
        | {"logits": {0: "batch"}},
        opset_version=17,
    )
    shutil.copy(TOKENIZER, args.out / "tokenizer.json")
    (args.out / "recall-judge.json").write_text(
        json.dumps({"output": "logits", "activation": "sigmoid", "max_tokens": args.max_tokens})
        + "\n",
        encoding="utf-8",
    )
    made = {
        "pairs_sha256": hashlib.sha256(data).hexdigest(),
        "pairs": len(rows),
        "trained_on": len(train),
        "held_out_pairs": len(test),
        "seconds": round(trained, 1),
        "torch": torch.__version__,
        **{k: v for k, v in vars(args).items() if k not in ("pairs", "out")},
        **report,
    }
    (args.out / "training.json").write_text(json.dumps(made, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
