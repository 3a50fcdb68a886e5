"""Indexing throughput, by default with the hashing embedder (SPEC §10, issue targets):

- fresh index of N generated notes: chunks/s (target >= 2,000);
- unchanged re-index of the same N files: seconds (target <= 2 s at 10k files);
- baselines measured in the same run: reading + hashing every file (the floor of an unchanged
  re-index) and parse + chunk + embed without the store (the floor of a fresh index).

With `--embedder minilm-l6` (and a few hundred notes) it measures the model's index path: the
fresh index embeds on a worker thread while files are read and batches written, so its chunks/s
against the sequential parse+chunk+embed baseline shows what the pipeline overlaps.

Usage: python benches/index_throughput.py [--notes 10000] [--runs 3] [--reindex-runs 5]
       [--embedder hashing-512]
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

# benches/ is on sys.path when this runs as a script.
from machine import p95

import recall
from recall.chunking import chunk
from recall.frontmatter import parse
from recall.indexing import _embed_text, _title

WORDS = [
    "api",
    "gateway",
    "latency",
    "budget",
    "request",
    "limit",
    "retry",
    "backoff",
    "shard",
    "replica",
    "index",
    "query",
    "cache",
    "deploy",
    "freeze",
    "rollback",
    "incident",
    "review",
    "owner",
    "decision",
    "memo",
    "postgres",
    "migration",
    "backup",
    "restore",
    "quota",
    "tenant",
    "region",
    "failover",
    "alert",
    "threshold",
    "runbook",
    "escalation",
    "release",
    "train",
]


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(8, 18))
    return " ".join(words).capitalize() + f" {rng.randint(1, 9999)}."


def note(i: int, rng: random.Random) -> str:
    parts = []
    if i % 3 == 0:
        fm = [f"valid_from: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"]
        if i > 0 and i % 9 == 0:
            fm.append(f"supersedes: note-{i - 3:05d}.md")
        parts.append("---\n" + "\n".join(fm) + "\n---\n")
    parts.append(f"# Decision {i}\n\n")
    for s in range(rng.randint(1, 3)):
        parts.append(f"## Section {s}\n\n")
        for _ in range(rng.randint(1, 3)):
            parts.append(" ".join(sentence(rng) for _ in range(rng.randint(2, 6))) + "\n\n")
        if rng.random() < 0.2:
            parts.append("```\nretry --max 5 --backoff exp\n```\n\n")
    return "".join(parts)


def generate(root: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(n):
        sub = root / f"team-{i % 20:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i:05d}.md").write_text(note(i, rng), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reindex-runs", type=int, default=5)
    ap.add_argument("--embedder", default="hashing-512")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "notes"
        generate(root, args.notes)
        files = sorted(root.rglob("*.md"))

        # Baseline 1: read + hash every file (what an unchanged re-index cannot avoid).
        hash_times = []
        for _ in range(args.reindex_runs):
            t = time.perf_counter()
            for f in files:
                hashlib.blake2b(f.read_bytes(), digest_size=16).hexdigest()
            hash_times.append(time.perf_counter() - t)

        # Baseline 2: parse + chunk + embed, no store.
        embedder = recall.get_embedder(args.embedder)
        t = time.perf_counter()
        n_chunks = 0
        for f in files:
            fm = parse(f.read_text(encoding="utf-8"))
            chunks = chunk(fm.body, base_byte=fm.body_offset, base_line=fm.body_line)
            title = _title(fm, chunks, f.name)
            embedder.embed([_embed_text(title, c) for c in chunks])
            n_chunks += len(chunks)
        pipeline_s = time.perf_counter() - t

        fresh, reindex = [], []
        for run in range(args.runs):
            db = Path(tmp) / f"fresh-{run}.db"
            with recall.open(db, embedder=args.embedder) as mem:
                t = time.perf_counter()
                report = mem.index(root)
                fresh.append(time.perf_counter() - t)
                # Check the result before trusting the timing.
                assert report.ok and len(report.added) == args.notes, report.refused[:3]
                assert report.chunks == n_chunks, (report.chunks, n_chunks)
                size = mem.stats().file_size_bytes
        with recall.open(Path(tmp) / "fresh-0.db") as mem:
            for _ in range(args.reindex_runs):
                t = time.perf_counter()
                report = mem.index(root)
                reindex.append(time.perf_counter() - t)
                assert report.unchanged == args.notes and report.embedded == 0

    fresh_med = statistics.median(fresh)
    machine = f"{platform.machine()} {platform.processor()}".strip()
    print(f"machine: {machine}, python {platform.python_version()}")
    print(f"corpus: {args.notes} notes, {n_chunks} chunks, {embedder.name}")
    print(
        f"fresh index:        median {fresh_med:.2f} s, p95 {p95(fresh):.2f} s "
        f"-> {n_chunks / fresh_med:,.0f} chunks/s"
        + (" (target >= 2,000)" if embedder.name.startswith("hashing") else "")
    )
    print(
        f"  baseline parse+chunk+embed (no store): {pipeline_s:.2f} s "
        f"({n_chunks / pipeline_s:,.0f} chunks/s); store share "
        f"{max(fresh_med - pipeline_s, 0) / fresh_med:.0%}"
    )
    print(
        f"unchanged re-index: median {statistics.median(reindex):.3f} s, p95 {p95(reindex):.3f} s "
        "(target <= 2 s at 10k files)"
    )
    print(
        f"  baseline read+hash only: median {statistics.median(hash_times):.3f} s; ratio "
        f"{statistics.median(reindex) / statistics.median(hash_times):.2f}x"
    )
    print(f"store size: {size / n_chunks:,.0f} bytes per chunk ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
