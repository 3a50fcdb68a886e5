"""What an incremental index run costs when m of N notes changed (SPEC §3, §10).

A store of N notes of 80–160 Zipf words (benches/zipf_corpus.py, `hashing-512`) is indexed
fresh; then, for each share (1 %, 2 %, 5 % by default), that many notes are rewritten with new
words and indexed (update), then that many other notes are deleted and indexed (removal).
Each run is `Memory.index` on the whole folder, as a user runs it. Reported: seconds, ms per
changed note, and the ratio to the fresh full index measured in the same run.

Target: ≤ 2 ms per changed note, and never slower than a fresh full index of the same corpus.

Usage: python benches/update_cost.py [--notes 50000] [--shares 0.01 0.02 0.05]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path

from machine import cpu_model
from zipf_corpus import ZipfCorpus

import recall

EMBEDDER = "hashing-512"
TARGET_MS = 2.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=50_000)
    ap.add_argument("--shares", type=float, nargs="+", default=[0.01, 0.02, 0.05])
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {EMBEDDER}; load average {os.getloadavg()[0]:.2f}"
    )
    corpus = ZipfCorpus(args.notes)
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="recall-update-", dir=args.workdir) as tmp:
        root, db = Path(tmp) / "notes", Path(tmp) / "m.db"
        corpus.write(root)
        with recall.open(db, embedder=EMBEDDER) as mem:
            t0 = time.perf_counter()
            report = mem.index(root, calibrate=False)
            full_s = time.perf_counter() - t0
            print(
                f"fresh index: {args.notes:,} notes, {report.chunks:,} chunks in {full_s:.1f} s "
                f"({report.chunks / full_s:,.0f} chunks/s)"
            )
            alive = list(range(args.notes))
            rows = []
            for step, share in enumerate(args.shares):
                m = max(1, round(share * args.notes))
                other = ZipfCorpus(args.notes, seed=100 + step)  # a rewritten note's words
                for kind in ("update", "removal"):
                    picked = rng.sample(alive, m)
                    for i in picked:
                        path = root / corpus.relpath(i)
                        if kind == "update":
                            path.write_text(other.text(i), encoding="utf-8")
                        else:
                            path.unlink()
                    if kind == "removal":
                        gone = set(picked)
                        alive = [i for i in alive if i not in gone]
                    t0 = time.perf_counter()
                    report = mem.index(root, allow_prune=True, calibrate=False)
                    seconds = time.perf_counter() - t0
                    changed = len(report.updated) if kind == "update" else len(report.removed)
                    if changed != m:
                        raise SystemExit(f"{kind}: expected {m} changed notes, got {changed}")
                    rows.append((share, kind, m, seconds))
                    per = seconds / m * 1e3
                    print(
                        f"{kind:>8} of {m:>5,} notes ({share:.0%}): {seconds:6.2f} s, "
                        f"{per:6.2f} ms per note, {seconds / full_s:.2f}x the fresh index",
                        flush=True,
                    )
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    worst = max(s / m * 1e3 for _, _, m, s in rows)
    slowest = max(s for *_, s in rows)
    met = "MET" if worst <= TARGET_MS else "NOT MET"
    print(
        f"target: <= {TARGET_MS:g} ms per changed note: {met}"
        f" (worst {worst:.2f} ms); never slower than the fresh index: "
        f"{'MET' if slowest <= full_s else 'NOT MET'} (slowest {slowest:.2f} s vs {full_s:.2f} s)"
    )


if __name__ == "__main__":
    main()
