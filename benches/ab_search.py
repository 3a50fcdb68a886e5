"""`Memory.search` of this build against another build of recall, on one store, interleaved.

A change that should not move search speed (a refactor) is checked here: both builds time the
same queries on the same store, in alternating child processes (this build, the baseline, this
build, …), so a noisy machine's drift falls on both alike. Each child opens the store, warms up,
then times `Memory.search(query)` in strict mode, end to end. The store is made by this build:
about N chunks of 80–160 Zipf words (`benches/zipf_corpus.py`), `hashing-512`, calibrated on
40 + 40 labelled questions (certified, so strict search answers). Both builds must read it.

Prints every round's p50 / p95 and, per build, the median over its rounds, where the time goes
(the dense and lexical legs and trust as the core times them, and the Python around the core),
and the ratio of this build's median p50 to the baseline's.

Usage: python benches/ab_search.py --baseline PYTHON [--chunks 100000] [--rounds 8]
       [--queries 200]   (PYTHON: an interpreter with the other build installed)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import cpu_model
from search_latency import EMBEDDER, LABELLED, WARMUP, negatives
from zipf_corpus import ZipfCorpus

import recall

#: The parts of a search each child reports, beside its wall time.
PARTS = ("dense", "lexical", "trust", "python")

#: What each child runs: open, warm up, time every query; one JSON line out.
CHILD = """
import json, statistics, sys, time
import recall
db, queries, warmup = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
with recall.open(db) as mem:
    for q in queries[:warmup]:
        mem.search(q)
    times, parts = [], {}
    for q in queries[warmup:]:
        t0 = time.perf_counter()
        result = mem.search(q)
        times.append((time.perf_counter() - t0) * 1e3)
        parts.setdefault("python", []).append(times[-1] - result.timings_ms["total"])
        for name in ("dense", "lexical", "trust"):
            parts.setdefault(name, []).append(result.timings_ms[name])
times.sort()
print(json.dumps({
    "p50": statistics.median(times),
    "p95": times[int(0.95 * (len(times) - 1))],
    "parts": {name: statistics.median(v) for name, v in parts.items()},
    "where": recall.__file__,
}))
"""


def build(chunks: int, queries: int, workdir: Path) -> tuple[Path, Path]:
    """The store and a file of timed queries (warm-up ones first)."""
    corpus = ZipfCorpus(ZipfCorpus(1000).notes_for(chunks))
    root, db = workdir / "notes", workdir / "store.db"
    corpus.write(root)
    with recall.open(db, embedder=EMBEDDER) as mem:
        report = mem.index(root, calibrate=False)
        pairs = corpus.queries(LABELLED + queries + WARMUP, seed=chunks)
        labelled = [(q, True) for q, _ in pairs[:LABELLED]]
        labelled += [(q, False) for q in negatives(LABELLED, seed=chunks)]
        _, fit = mem.calibrate(labelled)
    if not fit.certified:
        raise SystemExit("the calibration is not certified: strict search would refuse")
    asked = workdir / "queries.json"
    asked.write_text(json.dumps([q for q, _ in pairs[LABELLED:]]))
    print(f"store: {report.chunks:,} chunks of {corpus.n:,} notes, {EMBEDDER}, certified")
    return db, asked


def run(python: str, db: Path, asked: Path) -> dict[str, float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [python, "-c", CHILD, str(db), str(asked), str(WARMUP)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{python} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="python with the other build installed")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    builds = {"this build": sys.executable, "baseline": args.baseline}
    with tempfile.TemporaryDirectory(prefix="recall-ab-") as scratch:
        db, asked = build(args.chunks, args.queries, Path(scratch))
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in builds}
        for n in range(args.rounds):
            order = list(builds) if n % 2 == 0 else list(builds)[::-1]
            for name in order:
                got = run(builds[name], db, asked)
                rounds[name].append(got)
                print(f"  round {n + 1} {name:10} p50 {got['p50']:.3f} ms  p95 {got['p95']:.3f} ms")
    header = f"{'':12} {'median p50':>11} {'median p95':>11}"
    print(f"\n{header}  ({args.queries} queries x {args.rounds} rounds)")
    medians = {}
    for name, got in rounds.items():
        medians[name] = statistics.median(r["p50"] for r in got)
        p95 = statistics.median(r["p95"] for r in got)
        print(f"{name:12} {medians[name]:9.3f} ms {p95:9.3f} ms  ({got[0]['where']})")
    # Where the time goes (medians over rounds of each round's median): the core's legs and
    # trust, and `python`, Memory.search's wall time outside the core's own total.
    print(f"\n{'':12} " + " ".join(f"{name:>8}" for name in PARTS) + "  (ms)")
    for name, got in rounds.items():
        cells = (statistics.median(r["parts"][part] for r in got) for part in PARTS)
        print(f"{name:12} " + " ".join(f"{c:8.3f}" for c in cells))
    ratio = medians["this build"] / medians["baseline"]
    print(f"this build / baseline, median p50: {ratio:.3f}")


if __name__ == "__main__":
    main()
