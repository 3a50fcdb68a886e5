"""ONNX embedding throughput and query latency on the CPU, built-in `minilm-l6` (SPEC §4, §10).

Measures, in one run, on the same chunks:

- passage embedding in chunks/s: `OnnxEmbedder.embed` as the default runs it (int8 compute,
  one text per call, shared over side-by-side single-core sessions), and the same in fp32
  compute (stores indexed before int8 compute, `onnx:DIR` models), against the earlier path
  as the baseline ("bucketed": fp32 compute, length-bucketed batches of BATCH padded to their
  longest member, one session on all cores) and naive padding (the texts' own order,
  consecutive batches of BATCH), after checking that bucketed and naive give the same vectors;
- the shipped model file (int8 weights, dequantised by Cast -> Mul in the graph) against an
  fp32 graph with those weights constant-folded, and against onnxruntime's dynamic int8
  quantisation of that fp32 graph (`quantize_dynamic`, QInt8, one scale per tensor and one per
  output channel): chunks/s and cosine agreement with the shipped model's vectors (needs
  `onnx`; a variant that cannot be built is reported, not fatal);
- `hashing-512` on the same chunks, as the baseline;
- query latency: `embed_query` on one ~10-word question at a time, warm, p50 / p95 (target
  p50 <= 10 ms).

Corpora: seeded synthetic English-like prose chunks of 20-256 tokens (mean ~180, as recall's
800-character chunks are), and the quickstart notes shipped in recall/quickstart/notes, chunked
and titled as `Memory.index` does.

Usage: python benches/embed_throughput.py [--chunks 600] [--runs 2] [--queries 200] [--quick]
       [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import tokenizers

# benches/ is on sys.path when a script runs.
from machine import cpu_model  # noqa: E402

import recall
from recall.chunking import chunk
from recall.errors import EmbedderError
from recall.frontmatter import parse
from recall.indexing import _embed_text, _title
from recall.models import (
    BUILTINS,
    OnnxEmbedder,
    builtin_dir,
    builtin_model_file,
    cores,
    open_session,
)

MODEL = "minilm-l6"
BASELINE = "hashing-512"
NOTES = Path(recall.__file__).resolve().parent / "quickstart" / "notes"
TARGET_QUERY_P50_MS = 10.0
# Naive and bucketed batching run the same arithmetic on differently padded batches.
SAME_VECTORS_TOL = 1e-4
#: Texts per call of the earlier path (bucketed and naive).
BATCH = 32
CHECK_CHUNKS = 4 * BATCH
QUERY_WARMUP = 10

# Running English is about half function words; the content words are a notes vocabulary.
_FUNCTION_TEXT = (
    "the the the the of of of and and and to to to a a in in is is that for it as was with be "
    "by on not this are or from at which but have an they we their has would when if so no will "
    "more can who all after before because until while into over under about than then also "
    "only each every most some any our its"
)
_CONTENT_TEXT = (
    "team service request latency budget retry backoff deploy release freeze rollback incident "
    "review owner decision memo database migration backup restore quota tenant region failover "
    "alert threshold runbook escalation schedule customer payment invoice refund ledger account "
    "report dashboard metric error timeout queue worker cluster node replica shard index query "
    "cache gateway limit policy approval change window weekend engineer manager support "
    "contract vendor price plan quarter goal launch feature flag experiment result test suite "
    "build pipeline branch version config secret token key certificate rotation audit log trace "
    "storage bucket file document note search ranking model vector question answer summary "
    "agreed decided moved raised lowered replaced removed added kept reviewed approved rejected "
    "measured doubled halved paused resumed shipped tested documented traced fixed broke slow "
    "fast stable flaky critical minor manual automatic weekly daily monthly internal external "
    "primary secondary new old current previous final temporary permanent shared"
)
FUNCTION_WORDS = _FUNCTION_TEXT.split()
CONTENT_WORDS = _CONTENT_TEXT.split()
QUESTION_STARTS = ("what", "how", "why", "when", "who", "which", "where", "does", "did", "should")


# Where the table goes: stdout, or stderr under --json.
LOG = sys.stdout


def log(*parts: Any) -> None:
    print(*parts, file=LOG, flush=True)


def machine() -> str:
    model = cpu_model()
    return (
        f"{platform.machine()}, {model}, {os.cpu_count()} cores "
        f"(onnxruntime intra-op threads {cores()}), Python {platform.python_version()}, "
        f"numpy {np.__version__}, onnxruntime {onnxruntime.__version__}, "
        f"tokenizers {tokenizers.__version__}"
    )


# -- corpora -------------------------------------------------------------------------------------


def _words(rng: random.Random, n: int) -> list[str]:
    # About half function words, as running English text has.
    return [
        rng.choice(FUNCTION_WORDS) if rng.random() < 0.45 else rng.choice(CONTENT_WORDS)
        for _ in range(n)
    ]


def _sentence(rng: random.Random) -> str:
    words = _words(rng, rng.randint(8, 22))
    if rng.random() < 0.3:
        words.insert(rng.randrange(1, len(words)), f"{rng.randint(2, 9999)}")
    if rng.random() < 0.4:
        words[rng.randrange(1, len(words) - 1)] += ","
    return " ".join(words).capitalize() + rng.choice(".....?!")


def synthetic_chunks(n: int, seed: int, tokenizer: Any) -> list[str]:
    """N chunks (title line + prose) whose token counts follow recall's chunker: three in four
    near the 800-character target (160-256 tokens), one in four a short section tail (20-150)."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(n):
        want = rng.randint(160, 256) if rng.random() < 0.75 else rng.randint(20, 150)
        title = " ".join(rng.choice(CONTENT_WORDS) for _ in range(rng.randint(2, 4))).title()
        heading = " ".join(rng.choice(CONTENT_WORDS) for _ in range(rng.randint(1, 3))).title()
        text = f"{title} / {heading}\n"
        while True:
            # Add a sentence, or only as many words of one as still fit.
            sentence = _sentence(rng)
            trial = text + " " + sentence
            if len(tokenizer.encode(trial).ids) <= want:
                text = trial
                continue
            words = sentence.split()
            while words and len(tokenizer.encode(text + " " + " ".join(words)).ids) > want:
                words.pop()
            if words:
                text = text + " " + " ".join(words)
            break
        out.append(text)
    return out


def notes_chunks() -> list[str]:
    """The quickstart notes, chunked and titled as `Memory.index` embeds them."""
    texts: list[str] = []
    for f in sorted(NOTES.rglob("*.md")):
        fm = parse(f.read_text(encoding="utf-8"))
        chunks = chunk(fm.body, base_byte=fm.body_offset, base_line=fm.body_line)
        title = _title(fm, chunks, f.name)
        texts.extend(_embed_text(title, c) for c in chunks)
    return texts


def questions(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join([rng.choice(QUESTION_STARTS), *_words(rng, rng.randint(7, 11))]) + "?"
        for _ in range(n)
    ]


# -- embedding paths -----------------------------------------------------------------------------


_WIDE: dict[int, Any] = {}


def _wide(emb: OnnxEmbedder) -> Any:
    """One fp32 session of `emb`'s model on every core: the earlier path's."""
    if id(emb) not in _WIDE:
        _WIDE[id(emb)] = open_session(emb.model_path, "embedder", EmbedderError)
    return _WIDE[id(emb)]


def batched_embed(emb: OnnxEmbedder, texts: Sequence[str], bucketed: bool) -> np.ndarray:
    """The earlier path: batches of BATCH padded to their longest member on one session on all
    cores, sorted by length (`bucketed`) or in the texts' own order (naive)."""
    ids = emb._encode(texts, emb.config.passage_prefix)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i])) if bucketed else range(len(ids))
    order = list(order)
    out = np.zeros((len(ids), emb.dim), dtype=np.float32)
    session = _wide(emb)
    for s in range(0, len(order), BATCH):
        rows = order[s : s + BATCH]
        out[rows] = emb._run([ids[i] for i in rows], session)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


def naive_embed(emb: OnnxEmbedder, texts: Sequence[str]) -> np.ndarray:
    return batched_embed(emb, texts, bucketed=False)


def padded_tokens(lengths: Sequence[int], order: Sequence[int]) -> int:
    """Token positions the model computes when batches follow `order`, padding included."""
    total = 0
    for s in range(0, len(order), BATCH):
        rows = order[s : s + BATCH]
        total += len(rows) * max(lengths[i] for i in rows)
    return total


def rowwise_cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


# -- model variants ------------------------------------------------------------------------------


def inspect_shipped(model: Path) -> dict[str, Any]:
    """How the shipped file stores its weights: int8 initializers, each dequantised in the graph
    by Cast -> Mul(scale)?"""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(model)).graph
    inits = {t.name: t for t in graph.initializer}
    int8 = {n for n, t in inits.items() if t.data_type == onnx.TensorProto.INT8}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    dequantised = 0
    for node in graph.node:
        if node.op_type != "Cast" or node.input[0] not in int8:
            continue
        after = consumers.get(node.output[0], [])
        if len(after) == 1 and after[0].op_type == "Mul":
            other = [i for i in after[0].input if i != node.output[0]]
            if other and other[0] in inits:
                dequantised += 1
    return {
        "int8_initializers": len(int8),
        "int8_mb": sum(numpy_helper.to_array(inits[n]).nbytes for n in int8) / 1e6,
        "cast_mul_dequantised": dequantised,
        "matmul_nodes": sum(n.op_type == "MatMul" for n in graph.node),
        "matmul_integer_nodes": sum(n.op_type == "MatMulInteger" for n in graph.node),
    }


def fold_fp32(model: Path, dest: Path) -> tuple[Path | None, str]:
    """The shipped graph with its Cast/Mul dequantisation constant-folded into fp32 initializers
    (onnxruntime's basic, provider-independent optimisations, written back out)."""
    import onnx

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(dest)
    options.log_severity_level = 3
    onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    graph = onnx.load(str(dest)).graph
    left = [t.name for t in graph.initializer if t.data_type == onnx.TensorProto.INT8]
    if left:
        return None, f"{len(left)} int8 initializers left after folding"
    fp32_mb = sum(
        np.prod(t.dims, dtype=np.int64) * 4
        for t in graph.initializer
        if t.data_type == onnx.TensorProto.FLOAT
    )
    return dest, f"{fp32_mb / 1e6:.1f} MB of fp32 initializers"


def quantise_dynamic(fp32: Path, dest: Path, per_channel: bool) -> tuple[Path | None, str]:
    """onnxruntime's dynamic quantisation of the fp32 graph: int8 weights (one scale per tensor,
    or per output channel), activations quantised per call; MatMuls become MatMulInteger."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic warns that pre-processing (shape inference) is recommended; it changes
    # nothing for MatMul weights.
    logging.getLogger().setLevel(logging.ERROR)
    quantize_dynamic(str(fp32), str(dest), weight_type=QuantType.QInt8, per_channel=per_channel)
    graph = onnx.load(str(dest)).graph
    n_int = sum(n.op_type == "MatMulInteger" for n in graph.node)
    n_fp = sum(n.op_type == "MatMul" for n in graph.node)
    if not n_int:
        return None, "quantize_dynamic left no MatMulInteger nodes"
    return dest, (
        f"QInt8 {'per channel' if per_channel else 'per tensor'}: {n_int} MatMulInteger + "
        f"{n_fp} fp32 MatMul (attention scores) nodes"
    )


#: Variants of the shipped graph: fp32 (weights folded), and dynamic int8 quantisations of it.
VARIANTS = ("fp32", "int8-dyn", "int8-dyn-pc")


def build_variants(shipped: Path, workdir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """{label: OnnxEmbedder} for the variants that could be built, and a note for each."""
    built: dict[str, Any] = {}
    notes: dict[str, Any] = {}
    try:
        import onnx  # noqa: F401
    except ImportError:
        reason = "not built: the onnx package is not installed (pip install onnx)"
        return built, {label: {"built": False, "note": reason} for label in VARIANTS}
    notes["shipped"] = inspect_shipped(shipped)
    # OnnxEmbedder reads DIR/model.onnx beside the tokenizer: one folder per variant.
    paths = {label: workdir / label / "model.onnx" for label in VARIANTS}
    for path in paths.values():
        path.parent.mkdir()
    steps: dict[str, Callable[[], tuple[Path | None, str]]] = {
        "fp32": lambda: fold_fp32(shipped, paths["fp32"]),
        "int8-dyn": lambda: quantise_dynamic(paths["fp32"], paths["int8-dyn"], False),
        "int8-dyn-pc": lambda: quantise_dynamic(paths["fp32"], paths["int8-dyn-pc"], True),
    }
    for label, make in steps.items():
        if label != "fp32" and "fp32" not in built:
            notes[label] = {"built": False, "note": "not built: needs the fp32 graph"}
            continue
        t0 = time.perf_counter()
        try:
            path, note = make()
        except Exception as err:  # onnx / onnxruntime raise their own untyped errors
            path, note = None, f"{type(err).__name__}: {str(err).strip().splitlines()[0]}"
        build_s = time.perf_counter() - t0
        if path is None:
            notes[label] = {"built": False, "note": f"not built: {note}"}
            continue
        built[label] = OnnxEmbedder(builtin_dir(MODEL), name=f"{MODEL}-{label}", model_file=path)
        notes[label] = {
            "built": True,
            "note": note,
            "file_mb": path.stat().st_size / 1e6,
            "build_s": build_s,
        }
    return built, notes


# -- timing --------------------------------------------------------------------------------------


def time_passes(methods: dict[str, Callable[[], np.ndarray]], runs: int) -> dict[str, list[float]]:
    """Seconds per full pass, methods interleaved and rotated each run so drift on a noisy
    machine hits them alike."""
    names = list(methods)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            methods[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def bench_corpus(
    label: str,
    texts: list[str],
    shipped: OnnxEmbedder,
    default: OnnxEmbedder,
    variants: dict[str, OnnxEmbedder],
    runs: int,
) -> dict[str, Any]:
    lengths = [len(ids) for ids in shipped._encode(texts, shipped.config.passage_prefix)]
    n = len(texts)
    bucketed_order = sorted(range(n), key=lambda i: lengths[i])
    res: dict[str, Any] = {
        "chunks": n,
        "mean_tokens": statistics.fmean(lengths),
        "min_tokens": min(lengths),
        "max_tokens": max(lengths),
        "mean_chars": statistics.fmean(len(t) for t in texts),
        "padded_tokens_bucketed": padded_tokens(lengths, bucketed_order),
        "padded_tokens_naive": padded_tokens(lengths, range(n)),
        "runs": runs,
    }
    log(
        f"\n== {label}: {n} chunks, {res['mean_tokens']:.0f} tokens per chunk on average "
        f"({res['min_tokens']}-{res['max_tokens']}), {res['mean_chars']:.0f} characters =="
    )
    log(
        f"  positions computed incl. padding: bucketed {res['padded_tokens_bucketed']:,}, "
        f"naive {res['padded_tokens_naive']:,} "
        f"({res['padded_tokens_naive'] / res['padded_tokens_bucketed']:.2f}x); "
        f"real tokens {sum(lengths):,}"
    )

    # Check before timing: naive batching must give the bucketed path's vectors.
    sample = texts[:CHECK_CHUNKS]
    cos = rowwise_cos(batched_embed(shipped, sample, True), naive_embed(shipped, sample))
    worst = float(1.0 - cos.min())
    ok = worst <= SAME_VECTORS_TOL
    log(
        f"  check ({len(sample)} chunks): naive vs bucketed vectors, max (1 - cosine) "
        f"{worst:.1e} (tol {SAME_VECTORS_TOL:g}) -> {'OK' if ok else 'FAILED'}"
    )
    if not ok:
        raise SystemExit("naive and bucketed batching disagree; not timing")
    res["check_max_1_minus_cos"] = worst
    # Warm-up: each variant's first calls allocate its buffers.
    for emb in variants.values():
        emb.embed(sample[:BATCH])

    hashing = recall.get_embedder(BASELINE)
    outputs: dict[str, np.ndarray] = {}

    def keep(name: str, fn: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            out = fn()
            outputs.setdefault(name, out)
            return out

        return run

    methods: dict[str, Callable[[], np.ndarray]] = {
        f"{MODEL} bucketed": keep("bucketed", lambda: batched_embed(shipped, texts, True)),
        f"{MODEL} naive": keep("naive", lambda: naive_embed(shipped, texts)),
        f"{MODEL} default": keep("default", lambda: default.embed(texts)),
        f"{MODEL} fp32 per text": keep("fp32 per text", lambda: shipped.embed(texts)),
    }
    for name, emb in variants.items():
        methods[f"{MODEL} {name}"] = keep(name, lambda emb=emb: emb.embed(texts))
    methods[BASELINE] = lambda: hashing.embed(texts)
    times = time_passes(methods, runs)
    # hashing-512 takes milliseconds: time it over more passes.
    times[BASELINE] = time_passes({BASELINE: methods[BASELINE]}, max(runs, 20))[BASELINE]

    # After timing: agreement over the whole corpus, against the shipped model's vectors.
    ref = outputs["bucketed"]
    agreement: dict[str, dict[str, float]] = {}
    for name in ["naive", "default", "fp32 per text", *variants]:
        c = rowwise_cos(ref, outputs[name])
        agreement[name] = {"cos_mean": float(c.mean()), "cos_min": float(c.min())}
    if 1.0 - agreement["naive"]["cos_min"] > SAME_VECTORS_TOL:
        raise SystemExit("naive and bucketed batching disagree on the full corpus")

    res["methods"] = {}
    bucketed_s = statistics.median(times[f"{MODEL} bucketed"])
    log(f"  {runs} timed passes each ({max(runs, 20)} for {BASELINE}), interleaved:")
    log(
        f"  {'':24} {'chunks/s':>9} {'median s':>9} {'p95 s':>8} {'vs bucketed':>11} "
        f"{'cos mean':>9} {'cos min':>8}"
    )
    for name, ts in times.items():
        med = statistics.median(ts)
        key = name.removeprefix(f"{MODEL} ")
        row = {
            "chunks_per_s": n / med,
            "median_s": med,
            "p95_s": pct(ts, 95),
            "speed_vs_bucketed": bucketed_s / med,
            **agreement.get(key, {}),
        }
        res["methods"][name] = row
        cos_cols = (
            f"{row['cos_mean']:>9.6f} {row['cos_min']:>8.6f}"
            if "cos_mean" in row
            else f"{'(ref)' if key == 'bucketed' else '-':>9} {'':>8}"
        )
        log(
            f"  {name:24} {row['chunks_per_s']:>9,.1f} {med:>9.3f} {row['p95_s']:>8.3f} "
            f"{row['speed_vs_bucketed']:>10.2f}x {cos_cols}"
        )
    return res


def bench_queries(
    embedders: dict[str, Any], n: int, seed: int
) -> tuple[dict[str, dict[str, Any]], float]:
    """Latency of one query per call. Each embedder runs its queries as a block, after a
    warm-up: onnxruntime's worker threads spin for a while after a call, and alternating two
    sessions call by call on 2 cores measured 2.5 ms -> 6.8 ms at p50. Two rounds, the second
    in reverse order, each with half the queries."""
    qs = questions(n, seed)
    warm = questions(QUERY_WARMUP, seed + 1)
    times: dict[str, list[float]] = {name: [] for name in embedders}
    halves = [qs[: n // 2], qs[n // 2 :]]
    for round_, order in enumerate([list(embedders), list(embedders)[::-1]]):
        for name in order:
            emb = embedders[name]
            embed = getattr(emb, "embed_query", emb.embed)
            for q in warm:
                embed([q])
            for q in halves[round_]:
                t0 = time.perf_counter()
                v = embed([q])
                times[name].append((time.perf_counter() - t0) * 1e3)
                if v.shape != (1, emb.dim):
                    raise SystemExit(f"{name} returned shape {v.shape} for one query")
    # The cost of that spinning: the shipped model alternating call by call with a second
    # session (as the embedder and the entailment judge would in one process).
    other = next((e for k, e in embedders.items() if k != MODEL and hasattr(e, "_session")), None)
    if other is not None:
        shipped = embedders[MODEL]
        label = f"{MODEL} alternating"
        times[label] = []
        for q in warm:
            shipped.embed_query([q])
            other.embed_query([q])
        for q in qs:
            t0 = time.perf_counter()
            shipped.embed_query([q])
            times[label].append((time.perf_counter() - t0) * 1e3)
            other.embed_query([q])
    words = statistics.fmean(len(q.split()) for q in qs)
    stats: dict[str, dict[str, Any]] = {
        name: {"p50_ms": pct(ts, 50), "p95_ms": pct(ts, 95), "mean_ms": statistics.fmean(ts)}
        for name, ts in times.items()
    }
    if other is not None:
        stats[f"{MODEL} alternating"]["alternating_with"] = other.name
    return stats, words


def main() -> None:
    global LOG
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=600, help="synthetic chunks (default 600)")
    ap.add_argument("--runs", type=int, default=2, help="timed passes per method (default 2)")
    ap.add_argument("--notes-runs", type=int, default=10, help="passes over the notes corpus")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--quick", action="store_true", help="200 chunks, 1 pass, 3 notes passes, 50 queries"
    )
    ap.add_argument("--json", action="store_true", help="JSON on stdout; the table on stderr")
    args = ap.parse_args()
    if args.quick:
        args.chunks, args.runs, args.notes_runs, args.queries = 200, 1, 3, 50
    if args.json:
        LOG = sys.stderr

    started = time.perf_counter()
    log(f"machine: {machine()}")
    log(f"load average at the start: {os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    default = recall.get_embedder(MODEL)
    load_ms = (time.perf_counter() - t0) * 1e3
    assert isinstance(default, OnnxEmbedder) and default.int8
    model_file = builtin_model_file(BUILTINS[MODEL])
    # The shipped file computed in fp32: the reference vectors, and the earlier path's model.
    shipped = OnnxEmbedder(builtin_dir(MODEL), name=f"{MODEL}-fp32", model_file=model_file)
    log(
        f"{MODEL}: {model_file} ({model_file.stat().st_size / 1e6:.1f} MB), loaded in "
        f"{load_ms:.0f} ms; the earlier path's batches of {BATCH}, max "
        f"{shipped.config.max_tokens} tokens"
    )

    with tempfile.TemporaryDirectory(prefix="recall-embed-bench-") as tmp:
        variants, variant_notes = build_variants(model_file, Path(tmp))
        info = variant_notes.get("shipped")
        if info:
            log(
                f"  shipped file: {info['int8_initializers']} int8 initializers "
                f"({info['int8_mb']:.1f} MB), {info['cast_mul_dequantised']} of them dequantised "
                f"in the graph by Cast -> Mul(scale); {info['matmul_nodes']} fp32 MatMul, "
                f"{info['matmul_integer_nodes']} MatMulInteger nodes"
            )
        for label in VARIANTS:
            v = variant_notes[label]
            extra = (
                f", {v['file_mb']:.1f} MB file, built in {v['build_s']:.1f} s" if v["built"] else ""
            )
            log(f"  variant {label}: {v['note']}{extra}")

        # The model's tokenizer without truncation, to count every token of a draft chunk.
        tokenizer = tokenizers.Tokenizer.from_file(str(shipped.tokenizer_path))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        corpora = {
            "synthetic": (synthetic_chunks(args.chunks, args.seed, tokenizer), args.runs),
            "quickstart notes": (notes_chunks(), args.notes_runs),
        }
        results = {
            label: bench_corpus(label, texts, shipped, default, variants, runs)
            for label, (texts, runs) in corpora.items()
        }

        embedders: dict[str, Any] = {MODEL: default, f"{MODEL} fp32": shipped}
        embedders.update({f"{MODEL} {k}": v for k, v in variants.items()})
        embedders[BASELINE] = recall.get_embedder(BASELINE)
        query, words = bench_queries(embedders, args.queries, args.seed + 1)

    log(
        f"\n== query embedding: {args.queries} questions of ~{words:.0f} words, one per call, "
        "warm =="
    )
    log(f"  {'':24} {'p50 ms':>8} {'p95 ms':>8}")
    for name, q in query.items():
        log(f"  {name:24} {q['p50_ms']:>8.3f} {q['p95_ms']:>8.3f}")
        if "alternating_with" in q:
            log(
                f"  {'':24} (each call right after one on a second session, "
                f"{q['alternating_with']})"
            )
    p50 = query[MODEL]["p50_ms"]
    met = p50 <= TARGET_QUERY_P50_MS
    log(
        f"  target: {MODEL} p50 {p50:.2f} ms <= {TARGET_QUERY_P50_MS:g} ms: "
        f"{'MET' if met else 'NOT MET'}"
    )

    log("\n== summary: passage chunks/s ==")
    names = list(results["synthetic"]["methods"])
    log(f"  {'':24}" + "".join(f" {label:>17}" for label in results))
    log(
        f"  {'mean tokens per chunk':24}"
        + "".join(f" {r['mean_tokens']:>17.0f}" for r in results.values())
    )
    for name in names:
        log(
            f"  {name:24}"
            + "".join(f" {r['methods'][name]['chunks_per_s']:>17,.1f}" for r in results.values())
        )
    elapsed = time.perf_counter() - started
    log(f"\nload average at the end: {os.getloadavg()[0]:.2f}; total {elapsed:.0f} s")

    if args.json:
        print(
            json.dumps(
                {
                    "machine": machine(),
                    "model": MODEL,
                    "model_file_mb": model_file.stat().st_size / 1e6,
                    "load_ms": load_ms,
                    "batch_size": BATCH,
                    "args": vars(args),
                    "variants": variant_notes,
                    "corpora": results,
                    "queries": {"n": args.queries, "mean_words": words, "latency": query},
                    "query_target_p50_ms": TARGET_QUERY_P50_MS,
                    "query_target_met": met,
                    "elapsed_s": elapsed,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
