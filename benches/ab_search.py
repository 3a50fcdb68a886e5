"""`Memory.search` of this build against another build of recall, on one store, interleaved.

A change that should not move search speed (a refactor) is checked here: both builds time the
same queries on the same store. The store is made by the baseline build, so that both can read
it (a build refuses a store of a newer schema, and migrates an older one when it opens it): about
N chunks of 80–160 Zipf words (`benches/zipf_corpus.py`), `hashing-512`, calibrated on 40 + 40
labelled questions (certified, so strict search answers). Each build opens a byte-for-byte copy
of it.

With `--set PATH` the store is an evaluation set's instead (a folder laid out like
`python/recall/evalset`: `notes/` and `questions.jsonl`): `PATH/notes` indexed with a real
embedder (`--embedder`, default `hashing-512`) and self-calibrated (`Memory.calibrate_self`,
certified), timed on the set's questions' `query` strings in file order.

One child process per build opens the store and warms up, then waits for blocks of queries on
its stdin. The parent hands each block to both builds, one child at a time (A then B, then B
then A, …), and each child times `Memory.search(query, k)` in strict mode, end to end, per query.
Drift on the machine (seconds to minutes) then falls on both builds within a block, and the
ratio of the two builds' medians, taken block by block, cancels it.

Prints every block's medians and ratio; per build, the median and p95 over all timed queries,
where the time goes (the query's embedding, the core's load check, legs, fusion and trust as
`Memory.search` times them, the rest of `Memory.search`, and the call around it); the median of
the block ratios, this build's over the baseline's, with a 95 % bootstrap interval over blocks.
`--self-check` runs a second copy of this build as the baseline (A/A): its interval shows the
machine's noise floor. `--gap MS` pauses before each search, untimed, as an agent does between
two: back to back, the cores a search wakes are still awake and its data still in the caches,
which flatters work split across threads. `--sweep MB` reads through MB megabytes before each
search, untimed, as other work between two searches does (an agent's model, a scan of other
data): the search then finds its data and code out of the caches, as `search_latency.py`'s
interleaving with numpy and `vec0` leaves them. On a host whose last-level cache is large (a
Xeon's 480 MiB), a read leaves more of the search's data there than that interleaving does;
`--sweep-copy MB` copies MB megabytes from one buffer into another instead (each byte read and
written: after a 320 MB copy the dense leg at 100k `dense-384` rows takes what it takes in
`search_latency.py`).

With `--embedder dense-384` the Zipf notes are embedded by a 384-d ONNX word embedder built
here (`zipf_corpus.embedder_for`): every dimension of every vector set, the shape of the
default model's vectors. With `--corpus public-docs` the store is about `--chunks` chunks of
Debian's documentation pages (`public_docs.py`, kept in `--cache`) embedded by the default
model, `minilm-l6`, asked their own section titles; its notes make no labelled questions, so
both builds search in development mode (the same path as strict).

Usage: python benches/ab_search.py (--baseline PYTHON | --self-check)
       [--chunks 100000 | --set PATH] [--embedder hashing-512|dense-384|NAME] [--k 5]
       [--corpus zipf|public-docs] [--cache DIR]
       [--blocks 60] [--block 25] [--queries 200] [--gap MS] [--sweep MB] [--sweep-copy MB]
       (PYTHON: an interpreter with the other build installed; --queries defaults to the set's
       number of questions with --set)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import public_docs
from machine import cpu_model
from search_latency import DEFAULT, EMBEDDER, LABELLED, WARMUP, negatives
from zipf_corpus import DENSE, ZipfCorpus, embedder_for

import recall

#: The parts of a search each child reports, beside its wall time: those `Memory.search` times
#: (the query's embedding, the core's load check, legs, fusion and trust), `search`, the rest of
#: `Memory.search`'s own time (the Python around the core: records, policy, hits, result), and
#: `call`, the wall time outside it.
TIMED = ("embed", "load", "lexical", "dense", "fuse", "trust")
PARTS = (*TIMED, "search", "call")

#: `Memory.search`'s default number of hits, and what `--k` defaults to.
SEARCH_K = 5

#: Bootstrap resamples of the blocks, and their seed (fixed, so a run's interval is repeatable).
RESAMPLES = 2_000
SEED = 20_261_201

#: What each child runs: open, warm up, say ready, then for every JSON line of query indices
#: on stdin, time those queries and answer with one JSON line.
CHILD = """
import json, sys, time
import recall
db, queries, warmup = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
timed_parts, k, gap = sys.argv[4].split(","), int(sys.argv[5]), float(sys.argv[6])
mode, sweep = sys.argv[7], bytes(int(sys.argv[8]) << 20)
source, copy = bytearray(int(sys.argv[9]) << 20), bytearray(int(sys.argv[9]) << 20)
timed = queries[warmup:]
with recall.open(db) as mem:
    for q in queries[:warmup]:
        mem.search(q, k, mode=mode)
    print(json.dumps({"where": recall.__file__}), flush=True)
    for line in sys.stdin:
        ms, parts = [], {name: [] for name in [*timed_parts, "search", "call"]}
        for i in json.loads(line):
            if gap:
                time.sleep(gap)  # an agent's pause between two searches, not timed
            sweep.find(1)  # other work between two searches, not timed: every byte read
            copy[:] = source  # the same, every byte read and written
            t0 = time.perf_counter()
            result = mem.search(timed[i], k, mode=mode)
            ms.append((time.perf_counter() - t0) * 1e3)
            took = result.timings_ms
            for name in timed_parts:
                parts[name].append(took[name])
            inside = sum(took[name] for name in timed_parts) + took.get("judge", 0.0)
            parts["search"].append(took["total"] - inside)
            parts["call"].append(ms[-1] - took["total"])
        print(json.dumps({"ms": ms, "parts": parts}), flush=True)
"""


def build(chunks: int, queries: int, workdir: Path, embedder: str) -> tuple[Path, Path]:
    """The store and a file of timed queries (warm-up ones first)."""
    corpus = ZipfCorpus(ZipfCorpus(1000).notes_for(chunks))
    root, db = workdir / "notes", workdir / "store.db"
    corpus.write(root)
    # Notes written before the run, as a user's are: the run records their times, and a search
    # checks each hit's file by its size and time (`recall.sources`).
    written = time.time() - 3600
    for note in root.rglob("*.md"):
        os.utime(note, (written, written))
    with recall.open(db, embedder=embedder_for(embedder, workdir)) as mem:
        report = mem.index(root, calibrate=False)
        pairs = corpus.queries(LABELLED + queries + WARMUP, seed=chunks)
        labelled = [(q, True) for q, _ in pairs[:LABELLED]]
        labelled += [(q, False) for q in negatives(LABELLED, seed=chunks)]
        _, fit = mem.calibrate(labelled)
    if not fit.certified:
        raise SystemExit("the calibration is not certified: strict search would refuse")
    asked = workdir / "queries.json"
    asked.write_text(json.dumps([q for q, _ in pairs[LABELLED:]]))
    print(f"store: {report.chunks:,} chunks of {corpus.n:,} notes, {embedder}, certified")
    return db, asked


def build_public(chunks: int, queries: int, workdir: Path, cache: Path) -> tuple[Path, Path]:
    """A `minilm-l6` store of about `chunks` chunks of public documentation pages, and their
    section titles to time (warm-up ones first)."""
    root, db = public_docs.notes(cache, chunks), workdir / "store.db"
    with recall.open(db, embedder=DEFAULT) as mem:
        report = mem.index(root, calibrate=False)
    asked = workdir / "queries.json"
    asked.write_text(json.dumps(public_docs.titles(root, queries + WARMUP, seed=chunks)))
    print(f"store: {report.chunks:,} chunks of public documentation pages, {DEFAULT}")
    return db, asked


def questions(root: Path) -> list[str]:
    """The evaluation set's questions' `query` strings, in file order."""
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()]


def build_set(root: Path, embedder: str, workdir: Path) -> tuple[Path, Path]:
    """The evaluation set's store, self-calibrated, and its questions to time (warm-up first)."""
    db = workdir / "store.db"
    with recall.open(db, embedder=embedder) as mem:
        report = mem.index(root / "notes", calibrate=False)
        _, fit = mem.calibrate_self()
    if not fit.certified:
        raise SystemExit(
            f"the self-calibration is not certified ({fit.certified_reason}): strict search"
            " would refuse"
        )
    queries = questions(root)
    asked = workdir / "queries.json"
    asked.write_text(json.dumps(queries[:WARMUP] + queries))
    print(
        f"store: {report.chunks:,} chunks of {root / 'notes'}, {embedder}, self-calibrated,"
        f" certified; {len(queries)} questions"
    )
    return db, asked


class Child:
    """One build's persistent child: the store opened and warm, timing blocks on demand."""

    def __init__(
        self,
        python: str,
        db: Path,
        asked: Path,
        k: int,
        gap: float,
        mode: str,
        stderr: IO[str],
        sweep: int = 0,
        sweep_copy: int = 0,
    ) -> None:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        env.pop("PYTHONPATH", None)
        self.python = python
        self.stderr = stderr
        self.proc = subprocess.Popen(
            [python, "-c", CHILD, str(db), str(asked), str(WARMUP), ",".join(TIMED), str(k)]
            + [str(gap), mode, str(sweep), str(sweep_copy)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # A file, not a pipe: a child that writes much to stderr never blocks on it.
            stderr=stderr,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        self.where: str = self._answer()["where"]

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.stderr.seek(0)
            raise SystemExit(f"{self.python} failed (exit {code}):\n{self.stderr.read()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def time(self, block: list[int]) -> dict[str, Any]:
        """Per-query wall times (ms) of the block's queries, and each query's parts."""
        assert self.proc.stdin is not None
        # A child that died mid-run closes its stdin; its exit status and stderr are read below.
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(json.dumps(block) + "\n")
            self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def pct(xs: list[float], p: float) -> float:
    """The p-quantile of xs, nearest rank below."""
    ordered = sorted(xs)
    return ordered[int(p * (len(ordered) - 1))]


def interval(ratios: list[float]) -> tuple[float, float]:
    """95 % bootstrap interval of the median block ratio, resampling whole blocks."""
    rng = random.Random(SEED)
    medians = [statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(RESAMPLES)]
    return pct(medians, 0.025), pct(medians, 0.975)


def make_store(python: str, args: argparse.Namespace, workdir: Path) -> tuple[Path, Path]:
    """The store and its queries, made by the build `python` runs (this script's `--make-in`)."""
    made = [python, __file__, "--self-check", "--make-in", str(workdir)]
    made += ["--chunks", str(args.chunks), "--queries", str(args.queries)]
    made += ["--embedder", args.embedder, "--corpus", args.corpus, "--cache", str(args.cache)]
    if args.set is not None:
        made += ["--set", str(args.set)]
    subprocess.run(made, check=True, cwd=Path(__file__).parent)
    return workdir / "store.db", workdir / "queries.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", metavar="PYTHON", help="python with the other build installed")
    which.add_argument(
        "--self-check",
        action="store_true",
        help="time this build against a second copy of itself (A/A): the noise floor",
    )
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument(
        "--set",
        type=Path,
        metavar="PATH",
        help="an evaluation set (notes/, questions.jsonl) to index and time instead of Zipf notes",
    )
    ap.add_argument(
        "--embedder",
        default=EMBEDDER,
        help=f"the store's embedder ({DENSE}: a 384-d ONNX word embedder built here, dense rows)",
    )
    public_docs.add_arguments(ap)
    ap.add_argument("--k", type=int, default=SEARCH_K, help="hits each search asks for")
    ap.add_argument("--blocks", type=int, default=60, help="blocks, each timed on both builds")
    ap.add_argument("--block", type=int, default=25, help="queries per block")
    ap.add_argument(
        "--queries",
        type=int,
        help="distinct queries, cycled through (default 200; with --set, all its questions)",
    )
    ap.add_argument(
        "--gap",
        type=float,
        default=0.0,
        metavar="MS",
        help="an untimed pause before each search, as an agent's between two (default none)",
    )
    ap.add_argument(
        "--sweep",
        type=int,
        default=0,
        metavar="MB",
        help="read this many megabytes before each search, untimed, pushing the search's data "
        "out of the caches (default none)",
    )
    ap.add_argument(
        "--sweep-copy",
        type=int,
        default=0,
        metavar="MB",
        help="copy this many megabytes from one buffer into another before each search, "
        "untimed (every byte read and written; default none)",
    )
    ap.add_argument("--make-in", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.set is not None:
        args.set = args.set.resolve()  # the child that makes the store runs in benches/
        count = len(questions(args.set))
        if args.queries is not None and not 0 < args.queries <= count:
            ap.error(f"--queries: the set has {count} questions")
        args.queries = args.queries or count
    elif args.queries is None:
        args.queries = 200
    if args.corpus == "public-docs" and args.set is not None:
        ap.error("--corpus public-docs and --set each give the store: choose one")
    args.cache = args.cache.resolve()
    if args.make_in is not None:
        if args.set is not None:
            build_set(args.set, args.embedder, args.make_in)
        elif args.corpus == "public-docs":
            build_public(args.chunks, args.queries, args.make_in, args.cache)
        else:
            build(args.chunks, args.queries, args.make_in, args.embedder)
        return
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    baseline = sys.executable if args.self_check else args.baseline
    pythons = {"this build": sys.executable, "baseline": baseline}
    names = list(pythons)
    ms: dict[str, list[float]] = {name: [] for name in names}
    parts: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PARTS} for name in names}
    ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="recall-ab-") as scratch:
        made, asked = make_store(baseline, args, Path(scratch))
        children: dict[str, Child] = {}
        with contextlib.ExitStack() as stack:
            # Started one after the other, so neither's warm-up competes with the other's.
            for name in names:
                err = stack.enter_context(open(Path(scratch) / f"{name}.stderr", "w+"))
                db = Path(scratch) / f"{name.replace(' ', '-')}.db"
                shutil.copyfile(made, db)
                mode = "development" if args.corpus == "public-docs" else "strict"
                children[name] = Child(
                    pythons[name],
                    db,
                    asked,
                    args.k,
                    args.gap / 1e3,
                    mode,
                    err,
                    args.sweep,
                    args.sweep_copy,
                )
                stack.callback(children[name].close)
            for b in range(args.blocks):
                start = b * args.block
                block = [(start + i) % args.queries for i in range(args.block)]
                # Alternate who goes first: what the first of a pair pays (waking a sleeping
                # process, caches the other child left cold) falls on both builds alike.
                order = names if b % 2 == 0 else names[::-1]
                medians: dict[str, float] = {}
                for name in order:
                    got = children[name].time(block)
                    ms[name] += got["ms"]
                    for part in PARTS:
                        parts[name][part] += got["parts"][part]
                    medians[name] = statistics.median(got["ms"])
                ratios.append(medians["this build"] / medians["baseline"])
                print(
                    f"  block {b + 1:3} ({order[0]} first)  this build {medians['this build']:.3f}"
                    f" ms  baseline {medians['baseline']:.3f} ms  ratio {ratios[-1]:.3f}"
                )
    header = f"{'':12} {'median':>9} {'p95':>12}"
    between = [f"{args.gap:g} ms pause"] if args.gap else []
    between += [f"{args.sweep} MB read"] if args.sweep else []
    between += [f"{args.sweep_copy} MB copied"] if args.sweep_copy else []
    before = f"; {' and '.join(between)} before each search" if between else ""
    print(
        f"\n{header}  ({args.blocks} blocks x {args.block} queries per build, k={args.k}{before})"
    )
    for name in names:
        print(
            f"{name:12} {statistics.median(ms[name]):6.3f} ms {pct(ms[name], 0.95):9.3f} ms"
            f"  ({children[name].where})"
        )
    # Where the time goes (medians over every timed query; see PARTS).
    print(f"\n{'':12} " + " ".join(f"{name:>8}" for name in PARTS) + "  (ms)")
    for name in names:
        cells = (statistics.median(parts[name][part]) for part in PARTS)
        print(f"{name:12} " + " ".join(f"{c:8.3f}" for c in cells))
    low, high = interval(ratios)
    print(f"this build / baseline, median p50: {statistics.median(ratios):.3f}")
    print(f"95 % interval of the ratio: [{low:.3f}, {high:.3f}] over {len(ratios)} blocks")


if __name__ == "__main__":
    main()
