"""A first index as `recall index` runs it, by resident memory (SPEC §3, §10; outside CI).

For each size, N notes of 80–160 Zipf words (benches/zipf_corpus.py) are indexed into a new store
in a process of their own, the way `recall index` does it: `Memory.index` (no calibration), then
`Memory.calibrate_if_due()`, the self-made calibration a first run ends with. The process's
resident memory is sampled every 0.2 s, and the report gives, for the index run and for the
whole run with its calibration: seconds and peak resident memory (VmHWM), and the resident
memory between the two. Then a fresh process opens the store and searches once (an agent
starting on it): its resident memory after that first search.

The embedder is `dense-384` by default: a 384-d ONNX word embedder built here over the corpus
vocabulary and loaded through `onnx:DIR` (every dimension of every vector set, the shape of the
default model's vectors, at a speed that lets a million notes be indexed in minutes);
`--embedder hashing-512` for the hashed one.

With `--baseline PYTHON` (an interpreter with another build of recall installed, e.g. a wheel of
the previous commit), that build indexes the same notes into a store of its own, after this
build, and both rows are shown. The notes are written once into `--workdir` (kept there, with a
marker, for the next run).

Usage: python benches/first_index_memory.py [--notes 100000 300000 1000000]
       [--embedder dense-384|hashing-512] [--workdir DIR] [--baseline PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import child_json, cpu_model
from zipf_corpus import ZipfCorpus, embedder_for

# Run in a child process: a first index and its calibration, with resident memory sampled.
CHILD = r"""
import json, sys, threading, time
import recall

def status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) / 1024 for l in f if l.startswith(field))

done = threading.Event()
samples = []
def sample():
    while not done.wait(0.2):
        samples.append(status("VmRSS:"))
threading.Thread(target=sample, daemon=True).start()
t0 = time.perf_counter()
with recall.open(sys.argv[1], embedder=sys.argv[3]) as mem:
    report = mem.index(sys.argv[2], calibrate=False)
    t1 = time.perf_counter()
    index_peak, after_index = status("VmHWM:"), status("VmRSS:")
    calibrated = mem.calibrate_if_due()
    t2 = time.perf_counter()
done.set()
print(json.dumps({
    "notes": len(report.added), "chunks": report.chunks, "index_s": t1 - t0,
    "index_peak_mb": index_peak, "after_index_mb": after_index, "calibration_s": t2 - t1,
    "peak_mb": status("VmHWM:"), "sampled_peak_mb": max(samples, default=0.0),
    "certified": bool(calibrated and calibrated.get("certified")),
}))
"""


# Then a fresh process that opens the store and searches once, as an agent starting on it.
SEARCHER = r"""
import json, sys, time
import recall

def status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) / 1024 for l in f if l.startswith(field))

t0 = time.perf_counter()
with recall.open(sys.argv[1], embedder=sys.argv[2]) as mem:
    mem.search("what did we decide about the river crossing", mode="development")
    print(json.dumps({
        "first_search_s": time.perf_counter() - t0, "searcher_mb": status("VmRSS:"),
    }))
"""


def first_index(python: str, db: Path, root: Path, embedder: str) -> dict[str, Any]:
    for stale in db.parent.glob(db.name + "*"):
        # A run killed before its commit may leave its lexical files' folder beside the store.
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    out = child_json(python, CHILD, str(db), str(root), embedder)
    out.update(child_json(python, SEARCHER, str(db), embedder))
    return out


def notes(workdir: Path, n: int) -> Path:
    """N notes written once into `workdir` (a marker says the folder is whole)."""
    root = workdir / f"notes-{n}"
    marker = workdir / f"notes-{n}.done"
    if not marker.exists():
        t0 = time.perf_counter()
        ZipfCorpus(n).write(root)
        marker.write_text("whole\n", encoding="utf-8")
        print(f"  wrote {n:,} notes in {time.perf_counter() - t0:.0f} s", flush=True)
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    ap.add_argument("--embedder", default="dense-384", help="dense-384 or hashing-D")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--baseline", default=None, help="python with another build of recall")
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {args.embedder}; load average {os.getloadavg()[0]:.2f}"
    )
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="recall-first-index-"))
    workdir.mkdir(parents=True, exist_ok=True)
    embedder = embedder_for(args.embedder, workdir)
    builds = [("this build", sys.executable)]
    if args.baseline:
        builds.append(("baseline", args.baseline))
    rows = []
    for n in args.notes:
        print(f"\n== {n:,} notes ==", flush=True)
        root = notes(workdir, n)
        for name, python in builds:
            r = first_index(python, workdir / f"store-{n}-{len(rows)}.db", root, embedder)
            print(f"  {name}: {json.dumps(r)}", flush=True)
            rows.append((name, r))
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    print(
        f"{'build':>10} {'notes':>10} {'chunks':>10} {'index s':>8} {'index MB':>9} "
        f"{'after MB':>9} {'calib s':>8} {'peak MB':>8} {'searcher MB':>12}"
    )
    for name, r in rows:
        print(
            f"{name:>10} {r['notes']:>10,} {r['chunks']:>10,} {r['index_s']:>8.0f} "
            f"{r['index_peak_mb']:>9,.0f} {r['after_index_mb']:>9,.0f} "
            f"{r['calibration_s']:>8.0f} {r['peak_mb']:>8,.0f} {r['searcher_mb']:>12,.0f}"
        )


if __name__ == "__main__":
    main()
