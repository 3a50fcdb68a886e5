"""`recall models`: what a model directory gives, measured (SPEC §8.2).

Owns: listing the built-in models with their files and licences, checking an embedder (load
time, dimension, passages/s, query latency), dynamic int8 quantisation of an export, and
comparing two embedders on the shipped evaluation set (the quickstart memos and their labelled
questions). Does not own: loading or running models (`models`) or the CLI's printing.
"""

from __future__ import annotations

import logging
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recall import models
from recall.calibration import auc, load_queries
from recall.chunking import chunk
from recall.embedders import Embedder, embed_queries, get_embedder
from recall.errors import EmbedderError, UsageError
from recall.frontmatter import parse

__all__ = ["check", "compare", "listing", "quantize"]

_EVAL_DIR = Path(__file__).resolve().parent / "quickstart"
#: A passage of about 180 word-piece tokens, like one of recall's 800-character chunks.
_PASSAGE = (
    "The on-call engineer acknowledges a page within fifteen minutes; otherwise the secondary "
    "is paged and the incident channel is opened. Releases are frozen during the holidays, and "
    "any change to the payment service needs a second reviewer, a rollback plan and a note in "
    "the change log. Database backups run nightly, are encrypted with the platform key and are "
    "restored once a quarter to prove they work. Rate limits apply per API key: one hundred "
    "requests per second for partners, twenty for everyone else, with bursts absorbed by a "
    "token bucket. Logs are kept for thirty days and audit records for a year."
)


def listing() -> list[dict[str, Any]]:
    """Every built-in model: where its files are (or why they are not), pins and licences."""
    rows = []
    for spec in models.BUILTINS.values():
        folder = models.builtin_dir(spec.name)
        try:
            model: str | None = str(models.builtin_model_file(spec))
            problem = None
        except EmbedderError as err:
            model, problem = None, str(err)
        rows.append(
            {
                "name": spec.name,
                "default": spec.name == "minilm-l6",
                "description": spec.description,
                "model": model,
                "model_package": spec.package,
                "model_sha256": spec.model_sha256,
                "tokenizer": str(folder / "tokenizer.json"),
                "tokenizer_sha256": spec.tokenizer_sha256,
                "licence": spec.licence,
                "problem": problem,
            }
        )
    return rows


def _spec(target: str) -> str:
    """A built-in name, `onnx:DIR`, `hashing-D`, or a bare directory (read as onnx:DIR)."""
    if target in models.BUILTINS or target.startswith("onnx:") or target.startswith("hashing-"):
        return target
    return f"onnx:{target}"


def _throughput(embedder: Embedder, passages: int) -> tuple[float, float, float]:
    """(passages/s, query p50 ms, query p95 ms), warm."""
    texts = [f"{i}. {_PASSAGE}" for i in range(passages)]
    embedder.embed(texts[:2])
    started = time.perf_counter()
    embedder.embed(texts)
    rate = passages / (time.perf_counter() - started)
    times = []
    for i in range(30):
        t = time.perf_counter()
        embed_queries(embedder, [f"how fast must the on-call engineer acknowledge page {i}?"])
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return rate, statistics.median(times), times[int(0.95 * (len(times) - 1))]


def check(target: str, passages: int = 64) -> dict[str, Any]:
    """Load an embedder, embed a probe, and measure it."""
    started = time.perf_counter()
    embedder = get_embedder(_spec(target))
    load_s = time.perf_counter() - started
    probe = embedder.embed(["recall checks this model"])
    if probe.shape != (1, embedder.dim) or not np.isfinite(probe).all():
        raise EmbedderError(
            f"recall models: {target} returned {probe.shape} for one probe (dimension "
            f"{embedder.dim}) or non-finite values"
        )
    rate, p50, p95 = _throughput(embedder, passages)
    return {
        "embedder": embedder.name,
        "dim": embedder.dim,
        "fingerprint": embedder.fingerprint,
        "pooling": getattr(embedder, "pooling", None),
        "load_seconds": round(load_s, 3),
        "norm": round(float(np.linalg.norm(probe[0])), 6),
        "passages_per_second": round(rate, 1),
        "query_ms_p50": round(p50, 3),
        "query_ms_p95": round(p95, 3),
    }


def _evaluation_set() -> tuple[list[str], list[tuple[str, bool]]]:
    notes = _EVAL_DIR / "notes"
    texts: list[str] = []
    for path in sorted(notes.rglob("*.md")):
        fm = parse(path.read_text(encoding="utf-8"))
        texts.extend(c.text for c in chunk(fm.body))
    return texts, load_queries(_EVAL_DIR / "queries.jsonl")


def _scores(
    embedder: Embedder, texts: list[str], queries: list[str]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    passages = embedder.embed(texts)
    return passages, embed_queries(embedder, queries) @ passages.T


def compare(baseline: str, candidate: str) -> dict[str, Any]:
    """Quality and speed of `candidate` against `baseline` on the shipped evaluation set:
    agreement of the passage vectors, the same top-1 passage per answerable question, the AUC
    that calibration certifies on, and passages/s."""
    texts, labelled = _evaluation_set()
    queries = [q for q, _ in labelled]
    answerable = np.array([a for _, a in labelled])
    out: dict[str, Any] = {"passages": len(texts), "questions": len(labelled)}
    vectors, tops = {}, {}
    for role, target in (("baseline", baseline), ("candidate", candidate)):
        embedder = get_embedder(_spec(target))
        passages, scores = _scores(embedder, texts, queries)
        top1 = scores.max(axis=1)
        vectors[role], tops[role] = passages, scores.argmax(axis=1)
        rate, p50, _ = _throughput(embedder, 64)
        out[role] = {
            "embedder": embedder.name,
            "auc": auc(list(top1[answerable]), list(top1[~answerable])),
            "passages_per_second": round(rate, 1),
            "query_ms_p50": round(p50, 3),
        }
    if vectors["baseline"].shape == vectors["candidate"].shape:
        cos = np.sum(vectors["baseline"] * vectors["candidate"], axis=1)
        out["cosine_mean"] = round(float(cos.mean()), 4)
        out["cosine_min"] = round(float(cos.min()), 4)
    same = tops["baseline"][answerable] == tops["candidate"][answerable]
    out["same_top1_answerable"] = round(float(same.mean()), 4)
    return out


#: A judge is compared on each labelled question of the evaluation set with this many passages.
JUDGE_PASSAGES = 4


def compare_judges(baseline: Path, candidate: Path) -> dict[str, Any]:
    """Two judges on the same (question, passage) pairs of the shipped evaluation set: how far
    the probabilities move, the share that cross 0.5 (a verdict that would change), and pairs a
    second."""
    from recall.judge import Judge

    texts, labelled = _evaluation_set()
    pairs = [
        (question, [texts[(JUDGE_PASSAGES * i + j) % len(texts)] for j in range(JUDGE_PASSAGES)])
        for i, (question, _) in enumerate(labelled)
    ]
    out: dict[str, Any] = {"judge": True, "pairs": len(pairs) * JUDGE_PASSAGES}
    probabilities = {}
    for role, folder in (("baseline", baseline), ("candidate", candidate)):
        judge = Judge(folder)
        started = time.perf_counter()
        probabilities[role] = np.concatenate([judge.score(q, ps) for q, ps in pairs])
        seconds = time.perf_counter() - started
        out[role] = {"judge": judge.name, "pairs_per_second": round(out["pairs"] / seconds, 1)}
    before, after = probabilities["baseline"], probabilities["candidate"]
    out["probability_change_mean"] = round(float(np.abs(after - before).mean()), 4)
    out["probability_change_max"] = round(float(np.abs(after - before).max()), 4)
    out["crossed_half"] = round(float(((before >= 0.5) != (after >= 0.5)).mean()), 4)
    return out


def quantize(source: str | Path, out: str | Path, *, judge: bool = False) -> dict[str, Any]:
    """Dynamic int8 quantisation of an `onnx:DIR` export into `out` (tokenizer and config
    copied), then its quality and speed change on the evaluation set: an embedder's agreement
    and AUC, or with `judge` a judge's probabilities on the set's (question, passage) pairs."""
    from recall.judge import JUDGE_CONFIG, Judge

    src, dst = Path(source).expanduser().resolve(), Path(out).expanduser().resolve()
    # A directory that does not load is refused before any work.
    Judge(src) if judge else models.OnnxEmbedder(src)
    if dst.exists() and any(dst.iterdir()):
        raise UsageError(f"recall models quantize: {dst} exists and is not empty; pick a new OUT")
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as err:
        raise UsageError(
            f"recall models quantize: needs the onnx package ({err}); run 'pip install onnx'"
        ) from err
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", models.EMBEDDER_CONFIG, JUDGE_CONFIG):
        if (src / name).exists():
            shutil.copy2(src / name, dst / name)
    logging.disable(logging.WARNING)  # its advice to pre-process is not actionable here
    try:
        # Per output channel: one scale per tensor costs far more accuracy for the same speed
        # (cosine to fp32 0.936 against 0.993 on all-MiniLM-L6-v2, benches/RESULTS.md).
        quantize_dynamic(
            str(src / "model.onnx"),
            str(dst / "model.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
    except Exception as err:
        shutil.rmtree(dst, ignore_errors=True)
        raise UsageError(f"recall models quantize: {src / 'model.onnx'} failed: {err}") from err
    finally:
        logging.disable(logging.NOTSET)
    report = compare_judges(src, dst) if judge else compare(f"onnx:{src}", f"onnx:{dst}")
    report["bytes_before"] = (src / "model.onnx").stat().st_size
    report["bytes_after"] = (dst / "model.onnx").stat().st_size
    report["out"] = str(dst)
    return report
