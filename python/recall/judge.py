"""The entailment judge (SPEC §6): a QNLI-style ONNX cross-encoder that reads (question,
passage) and gives the probability that the passage answers the question.

Owns: loading a judge directory (`model.onnx`, `tokenizer.json`, optional `recall-judge.json`),
scoring pairs, and the demotion rule: only `ok` hits are judged, those below 0.5 become
`not_entailed`. Does not own: retrieval or any other verdict (the Rust trust layer).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from recall.errors import JudgeError
from recall.models import input_types, make_feed, open_session, open_tokenizer, read_config
from recall.results import Hit

__all__ = ["ENTAILED", "EntailmentJudge", "Judge", "apply_judge", "available", "get_judge"]

#: SPEC §6: a judged `ok` hit below this probability becomes `not_entailed`.
ENTAILED = 0.5
JUDGE_CONFIG = "recall-judge.json"
ENV_JUDGE = "RECALL_JUDGE"
#: The judge made for recall (training/judge/README.md), run when no other is configured.
SHIPPED = Path(__file__).resolve().parent / "data" / "judge"


@runtime_checkable
class EntailmentJudge(Protocol):
    """Anything that scores (question, passage) pairs with P(passage answers question)."""

    @property
    def name(self) -> str: ...

    def score(self, question: str, passages: Sequence[str]) -> npt.NDArray[np.float64]: ...


class Judge:
    """An exported cross-encoder directory run by onnxruntime.

    `recall-judge.json` (optional): `output` (default: the first output), `label` (the index of
    the entailment class when the model outputs several logits; required then),
    `activation` (`sigmoid` for one logit, the default; `softmax` over several), `max_tokens`
    (default 512; the passage is truncated, never the question), `bias` (default 0: added to a
    single logit before the sigmoid, a margin fitted so that answers keep their `ok`).
    """

    _KEYS: dict[str, Any] = {
        "output": str,
        "label": int,
        "activation": str,
        "max_tokens": int,
        "bias": (int, float),
    }

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        root = Path(directory).expanduser()
        if not root.is_dir():
            raise JudgeError(
                f"recall judge: model directory {root} does not exist; pass a folder with "
                "model.onnx, tokenizer.json and optionally recall-judge.json"
            )
        self.directory = root.resolve()
        config = read_config(self.directory / JUDGE_CONFIG, self._KEYS, "judge", JudgeError)
        self._session = open_session(
            self.directory / "model.onnx", "judge", JudgeError, spinning="never"
        )
        self._tokenizer = open_tokenizer(
            self.directory / "tokenizer.json",
            int(config.get("max_tokens", 512)),
            "judge",
            JudgeError,
        )
        self._tokenizer.enable_truncation(
            max_length=int(config.get("max_tokens", 512)), strategy="only_second"
        )
        self._inputs = input_types(self._session)
        probe = np.zeros((1, 1), dtype=np.int64)
        make_feed(  # an input recall cannot feed is refused at load, not at the first search
            self._inputs,
            {"input_ids": probe, "attention_mask": probe, "token_type_ids": probe},
            self.directory / "model.onnx",
            "judge",
            JudgeError,
        )
        outputs = {o.name: o for o in self._session.get_outputs()}
        self._output = config.get("output") or next(iter(outputs))
        where = self.directory / JUDGE_CONFIG
        if self._output not in outputs:
            raise JudgeError(
                f"recall judge: {where} names output '{self._output}', but the model's outputs "
                f"are {', '.join(outputs)}"
            )
        width = outputs[self._output].shape[-1]
        self._label: int | None = config.get("label")
        self._bias = float(config.get("bias", 0.0))
        if not math.isfinite(self._bias):
            raise JudgeError(f"recall judge: {self.directory / JUDGE_CONFIG}: bias must be finite")
        self._activation = config.get("activation") or (
            "sigmoid" if width == 1 or self._label is None else "softmax"
        )
        if self._activation not in ("sigmoid", "softmax"):
            raise JudgeError(f"recall judge: {where}: activation must be sigmoid or softmax")
        if isinstance(width, int) and width > 1 and self._label is None:
            raise JudgeError(
                f"recall judge: {self.directory / 'model.onnx'} outputs {width} logits; name "
                f'the entailment class in {where}, e.g. {{"label": 0}}'
            )

    @property
    def name(self) -> str:
        return f"onnx:{self.directory}"

    def __repr__(self) -> str:
        return f"Judge({str(self.directory)!r})"

    def score(self, question: str, passages: Sequence[str]) -> npt.NDArray[np.float64]:
        if not passages:
            return np.zeros(0)
        encodings = self._tokenizer.encode_batch([(question, p) for p in passages])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, 1, e.type_ids
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = make_feed(self._inputs, given, self.directory / "model.onnx", "judge", JudgeError)
        try:
            (logits,) = self._session.run([self._output], feed)
        except Exception as err:
            raise JudgeError(f"recall judge: {self.directory} failed to run: {err}") from err
        logits = np.asarray(logits, dtype=np.float64).reshape(len(encodings), -1)
        if self._activation == "softmax":
            z = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs = z / z.sum(axis=1, keepdims=True)
        else:
            probs = 1.0 / (1.0 + np.exp(-np.clip(logits + self._bias, -60, 60)))
        column = self._label if self._label is not None else 0
        if column >= probs.shape[1]:
            raise JudgeError(
                f"recall judge: label {column} is out of range for {probs.shape[1]} outputs"
            )
        return np.asarray(probs[:, column], dtype=np.float64)


def available(spec: str | os.PathLike[str] | EntailmentJudge | None) -> bool:
    """Whether `get_judge(spec)` has a judge to load: one named, or recall's own installed."""
    named = spec is not None or bool(os.environ.get(ENV_JUDGE, "").strip())
    return named or (SHIPPED / "model.onnx").is_file()


def get_judge(spec: str | os.PathLike[str] | EntailmentJudge | None) -> EntailmentJudge:
    """A judge from a directory (or `onnx:DIR`), an object, or None: $RECALL_JUDGE, else the
    judge shipped with recall."""
    if spec is not None and not isinstance(spec, (str, os.PathLike)):
        return spec
    chosen = os.fspath(spec) if spec is not None else os.environ.get(ENV_JUDGE, "").strip()
    if not chosen:
        if not available(None):
            raise JudgeError(
                f"recall judge: this install has no judge of its own ({SHIPPED} is missing); "
                f"pass --judge DIR (judge= in the API) or set {ENV_JUDGE} to a judge folder"
            )
        return Judge(SHIPPED)
    return Judge(chosen[5:] if chosen.startswith("onnx:") else chosen)


def apply_judge(judge: EntailmentJudge, question: str, hits: list[Hit]) -> tuple[list[Hit], int]:
    """SPEC §6: judge the `ok` hits only (one pass each); demote those below 0.5.

    Demoted hits lead the hits that are not `ok`: every other rule trusted them, so they are
    the nearest misses, and the abstention reason names the best of them. Returns the hits and
    the number of pairs judged.
    """
    ok = [i for i, h in enumerate(hits) if h.ok]
    if not ok:
        return hits, 0
    probs = judge.score(question, [hits[i].text for i in ok])
    judged = dict(zip(ok, (float(p) for p in probs)))
    kept, demoted, rest = [], [], []
    for i, h in enumerate(hits):
        if i in judged:
            p = judged[i]
            if p >= ENTAILED:
                kept.append(replace(h, entailment=p))
            else:
                demoted.append(replace(h, verdict="not_entailed", entailment=p))
        else:
            rest.append(h)
    return kept + demoted + rest, len(ok)
