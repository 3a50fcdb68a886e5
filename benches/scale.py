"""How cost grows from 10k to 1M chunks (SPEC §10; outside CI: the 1M run takes minutes).

For each size, on notes of 80–160 Zipf words (benches/zipf_corpus.py) with `hashing-512`, or
with `--embedder dense-384` a 384-d ONNX word embedder built here over the corpus vocabulary
(loaded through `onnx:DIR`; every dimension of every vector set, the shape of the default
model's vectors, whose 3-bit codes reproduce no vector: a search holds their fine codes and
reads back the vectors of the few rows it rescores): a fresh index in a process of its own
(chunks/s of `Memory.index`, the run's peak resident memory), store bytes per chunk, and then,
in a fresh process so nothing is shared with the indexer: store open, cold first search (loads
the codes and the lexical index), peak resident memory over the process, resident memory right
after the first search and after the last, and warm `Memory.search` p50/p95 over the queries
in development mode (no calibration needed; the path is the same as strict). The warm queries
start `PAUSE_S` after the first search, once what it started in the background (slicing a
hashed store's codes for its sparse queries) is done.

With `--baseline PYTHON` (an interpreter with another build of recall installed, e.g. a wheel of
the previous commit), that build also indexes the same notes into a store of its own (a build
refuses a store of a newer schema, and an older store would not show what this build writes),
and each build reads its own store: `--rounds` fresh processes of each, in turns, and the
medians of both with their ratio (baseline / this build).

With `--corpus public-docs` the notes are Debian's documentation pages (`public_docs.py`, kept
in `--cache`; about 69k chunks in all, so larger sizes get every page) embedded by the default
model, `minilm-l6`, and asked their own section titles.

Usage: python benches/scale.py [--sizes 10000 100000 1000000] [--queries 200] [--workdir DIR]
       [--baseline PYTHON] [--rounds 3] [--embedder hashing-512|dense-384]
       [--corpus zipf|public-docs] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import public_docs
from machine import child_json, cpu_model
from zipf_corpus import ZipfCorpus, embedder_for

WARMUP = 10
PAUSE_S = 1.0

# Run in a child process: open, cold first search, peak resident memory, warm p50/p95. It
# imports only what a user's process does: numpy would start a BLAS thread pool whose threads
# spin beside the first search (10-30 ms of it on two cores).
CHILD = r"""
import json, statistics, sys, time
import recall
db, queries, PAUSE = sys.argv[1], json.loads(sys.stdin.read()), float(sys.argv[2])
def rss_mb(field="VmRSS:"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
before = rss_mb()
t0 = time.perf_counter()
mem = recall.open(db)
t1 = time.perf_counter()
mem.search(queries[0], mode="development")
t2 = time.perf_counter()
first = rss_mb()
# What the first search started in the background (slicing a hashed store's codes) is done
# before the warm queries: they measure the steady state.
time.sleep(PAUSE)
for q in queries[1:11]:
    mem.search(q, mode="development")
times = []
for q in queries[11:]:
    s = time.perf_counter()
    mem.search(q, mode="development")
    times.append((time.perf_counter() - s) * 1e3)
print(json.dumps({
    "open_ms": (t1 - t0) * 1e3, "cold_ms": (t2 - t1) * 1e3, "rss_mb": rss_mb("VmHWM:"),
    "rss_first_mb": first, "rss_end_mb": rss_mb(), "rss_before_mb": before,
    "p50": statistics.median(times),
    "p95": statistics.quantiles(times, n=20, method="inclusive")[18], "queries": len(times),
}))
"""


# Run in a child process: a fresh index of a folder by one build, with the run's peak resident
# memory.
INDEX_CHILD = r"""
import json, sys, time
import recall
t0 = time.perf_counter()
with recall.open(sys.argv[1], embedder=sys.argv[3]) as mem:
    report = mem.index(sys.argv[2], calibrate=False)
seconds = time.perf_counter() - t0
with open("/proc/self/status") as f:
    peak = next(int(l.split()[1]) / 1024 for l in f if l.startswith("VmHWM:"))
print(json.dumps({"chunks": report.chunks, "seconds": seconds, "peak_mb": peak}))
"""


def index_process(python: str, db: Path, root: Path, embedder: str) -> dict[str, Any]:
    """A fresh index of `root` into `db` in a new process of `python`: chunks, seconds, peak
    resident memory."""
    return child_json(python, INDEX_CHILD, str(db), str(root), embedder)


def fresh_process(python: str, db: Path, queries: list[str]) -> dict[str, Any]:
    """Open, first search, resident memory and warm searches in a new process of `python`."""
    return child_json(python, CHILD, str(db), str(PAUSE_S), stdin=json.dumps(queries))


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def bench(
    n: int,
    n_queries: int,
    workdir: Path,
    baseline: str | None,
    rounds: int,
    embedder: str,
    cache: Path | None,
) -> dict[str, float]:
    db = workdir / f"store-{n}.db"
    if cache is None:
        corpus = ZipfCorpus(ZipfCorpus(1000).notes_for(n))
        root = workdir / f"notes-{n}"
        print(f"\n== about {n:,} chunks ({corpus.n:,} notes) ==", flush=True)
        t0 = time.perf_counter()
        corpus.write(root)
        print(f"  wrote the notes in {time.perf_counter() - t0:.0f} s", flush=True)
        queries = [q for q, _ in corpus.queries(n_queries + WARMUP + 1)]
    else:
        root = public_docs.notes(cache, n)
        print(f"\n== about {n:,} chunks of public documentation pages ==", flush=True)
        queries = public_docs.titles(root, n_queries + WARMUP + 1, seed=n)
    mine = index_process(sys.executable, db, root, embedder)
    chunks, index_s = int(mine["chunks"]), mine["seconds"]
    size = db.stat().st_size
    print(
        f"  indexed {chunks:,} chunks in {index_s:.1f} s ({chunks / index_s:,.0f} chunks/s), "
        f"peak resident {mine['peak_mb']:,.0f} MB; {size / 1e6:,.0f} MB, "
        f"{size / chunks:,.0f} bytes per chunk",
        flush=True,
    )
    base_db = workdir / f"store-{n}-baseline.db"
    if baseline:
        theirs_index = index_process(baseline, base_db, root, embedder)
        base_size = base_db.stat().st_size
        print(
            f"  baseline indexed {theirs_index['chunks']:,} chunks in "
            f"{theirs_index['seconds']:.1f} s "
            f"({theirs_index['chunks'] / theirs_index['seconds']:,.0f} chunks/s), peak resident "
            f"{theirs_index['peak_mb']:,.0f} MB; {base_size / 1e6:,.0f} MB, "
            f"{base_size / theirs_index['chunks']:,.0f} bytes per chunk",
            flush=True,
        )
    # The index runs' writes reach the disk before any timed process starts, so their
    # writeback (gigabytes at 1M) does not run beside a first search.
    os.sync()
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for _ in range(rounds if baseline else 1):
        ours.append(fresh_process(sys.executable, db, queries))
        if baseline:
            theirs.append(fresh_process(baseline, base_db, queries))
    out = median_of(ours)
    if baseline:
        base = median_of(theirs)
        print(
            f"  baseline {baseline}, medians of {rounds} processes each, in turns: cold first "
            f"search {base['cold_ms']:,.0f} ms against {out['cold_ms']:,.0f} ms "
            f"({base['cold_ms'] / out['cold_ms']:.2f}x); peak resident {base['rss_mb']:,.0f} MB "
            f"against {out['rss_mb']:,.0f} MB; resident after the first search "
            f"{base['rss_first_mb']:,.0f} against {out['rss_first_mb']:,.0f} MB; p50 "
            f"{base['p50']:.2f} against {out['p50']:.2f} ms ({base['p50'] / out['p50']:.2f}x); "
            f"p95 {base['p95']:.2f} against {out['p95']:.2f} ms",
            flush=True,
        )
    print(
        f"  fresh process: open {out['open_ms']:.1f} ms, cold first search {out['cold_ms']:,.0f} "
        f"ms, peak resident {out['rss_mb']:,.0f} MB ({out['rss_before_mb']:,.0f} MB before "
        f"opening, {out['rss_first_mb']:,.0f} MB after the first search, "
        f"{out['rss_end_mb']:,.0f} MB after the last); Memory.search p50 {out['p50']:.2f} ms, "
        f"p95 {out['p95']:.2f} ms "
        f"({out['queries']:.0f} queries)",
        flush=True,
    )
    # Free the disk for the next size (public pages stay in their cache).
    if cache is None:
        for path in sorted(root.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
    return {
        "chunks": chunks,
        "chunks_per_s": chunks / index_s,
        "index_peak_mb": mine["peak_mb"],
        "bytes_per_chunk": size / chunks,
        **out,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--baseline", default=None, help="python with another build of recall")
    ap.add_argument("--rounds", type=int, default=3, help="processes per build with --baseline")
    ap.add_argument(
        "--embedder",
        default="hashing-512",
        help="hashing-D, or dense-384 (a 384-d ONNX word embedder built here: dense vectors)",
    )
    public_docs.add_arguments(ap)
    args = ap.parse_args()
    public = args.corpus == "public-docs"
    shown = "minilm-l6 on public-docs" if public else args.embedder
    print(
        f"machine: {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {shown}; load average {os.getloadavg()[0]:.2f}"
    )
    rows = []
    cache = args.cache.resolve() if public else None
    with tempfile.TemporaryDirectory(prefix="recall-scale-", dir=args.workdir) as tmp:
        embedder = "minilm-l6" if public else embedder_for(args.embedder, Path(tmp))
        for n in args.sizes:
            rows.append(
                bench(n, args.queries, Path(tmp), args.baseline, args.rounds, embedder, cache)
            )
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    print(
        f"{'chunks':>10} {'index/s':>8} {'index MB':>8} {'B/chunk':>8} {'cold ms':>8} "
        f"{'peak MB':>8} {'first MB':>8} {'p50 ms':>7} {'p95 ms':>7}"
    )
    for r in rows:
        print(
            f"{r['chunks']:>10,} {r['chunks_per_s']:>8,.0f} {r['index_peak_mb']:>8,.0f} "
            f"{r['bytes_per_chunk']:>8,.0f} "
            f"{r['cold_ms']:>8,.0f} {r['rss_mb']:>8,.0f} {r['rss_first_mb']:>8,.0f} "
            f"{r['p50']:>7.2f} {r['p95']:>7.2f}"
        )


if __name__ == "__main__":
    main()
