"""Would an index over the rows let a model's query read fewer of them? (SPEC §10)

Measured before any is built: a store's rows, as recall keeps them (read back from its `vec0`
table), and its bench queries' vectors, by the store's embedder; each query's exact top 10 by
numpy; then, for each structure, recall@10 (set overlap with the exact top 10) against the share
of the rows a query reads:

- **lists** (IVF): spherical k-means, `--lists` centroids trained for twelve rounds on a seeded
  sample of 40 rows a list (a list left empty is given a sampled row again), every row in the
  list of its nearest centroid; a query reads the lists of its nearest centroids, and every row
  of them is scored exactly, so that the figure is the lists' own (no code pass loses more);
- **graph** (HNSW), when `--graph-python` names an interpreter with `hnswlib` installed (a
  virtual environment of the bench's own; not a dependency of recall): M 16, ef_construction
  100, inner product, one thread, recall@10 at each `ef`, and the graph's build time.

The rows: `--corpus zipf`, Zipf notes of 80–160 words (`zipf_corpus.py`) embedded by the 384-d
ONNX word embedder built here (every dimension set, Gaussian word vectors averaged: no cluster
structure for a structure to lean on), asked the bench's six rare words of a note; or `--corpus
public-docs`, Debian's documentation pages (`public_docs.py`) embedded by the default model,
`minilm-l6` (the index run takes minutes), asked their own section titles.

Usage: python benches/index_choice.py [--corpus zipf|public-docs] [--cache DIR] [--chunks 100000]
       [--queries 200] [--lists 256] [--graph-python PYTHON] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import public_docs
from machine import cpu_model
from search_latency import index_public, numpy_top, read_matrix
from zipf_corpus import DENSE, ZipfCorpus, embedder_for

import recall
from recall.embedders import embed_queries

PROBES = (4, 8, 16, 32, 64, 128)
ROUNDS = 12
SAMPLE_PER_LIST = 40

# Run in `--graph-python`: an HNSW graph over the rows, recall@10 at each ef.
GRAPH = r"""
import json, sys, time
import hnswlib, numpy as np
rows, queries, exact = (np.load(p) for p in sys.argv[1:4])
t0 = time.perf_counter()
graph = hnswlib.Index(space="ip", dim=rows.shape[1])
graph.init_index(max_elements=len(rows), ef_construction=100, M=16)
graph.set_num_threads(1)
graph.add_items(rows)
built = time.perf_counter() - t0
out = {"built_s": built, "ef": {}}
for ef in (32, 64, 128, 256):
    graph.set_ef(ef)
    t0 = time.perf_counter()
    found, _ = graph.knn_query(queries, k=10)
    ms = (time.perf_counter() - t0) / len(queries) * 1e3
    overlap = np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, exact)])
    out["ef"][ef] = {"recall": float(overlap), "ms": ms}
print(json.dumps(out))
"""


def store_of(args: argparse.Namespace, work: Path) -> tuple[Path, list[str]]:
    """The store the rows are read from, and its queries."""
    if args.corpus == "public-docs":
        return index_public(args.chunks, args.queries, work, args.cache)
    corpus = ZipfCorpus(ZipfCorpus(1000).notes_for(args.chunks))
    root, db = work / "notes", work / "store.db"
    corpus.write(root)
    t0 = time.perf_counter()
    with recall.open(db, embedder=embedder_for(DENSE, work)) as mem:
        report = mem.index(root, calibrate=False)
    print(f"  indexed {report.chunks:,} chunks in {time.perf_counter() - t0:.1f} s")
    return db, [q for q, _ in corpus.queries(args.queries, seed=args.chunks)]


def lists(rows: np.ndarray, n_lists: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Centroids (spherical k-means on a sample) and each row's list."""
    rng = np.random.default_rng(seed)
    sample = rows[rng.choice(len(rows), min(len(rows), SAMPLE_PER_LIST * n_lists), replace=False)]
    centroids = sample[rng.choice(len(sample), n_lists, replace=False)].copy()
    for _ in range(ROUNDS):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        empty = np.flatnonzero(np.bincount(nearest, minlength=n_lists) == 0)
        sums[empty] = sample[rng.choice(len(sample), len(empty), replace=False)]
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    step = 65_536
    member = np.concatenate(
        [np.argmax(rows[i : i + step] @ centroids.T, axis=1) for i in range(0, len(rows), step)]
    )
    return centroids, member


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    public_docs.add_arguments(ap)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--lists", type=int, default=256)
    ap.add_argument("--graph-python", help="an interpreter with hnswlib installed")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; corpus {args.corpus}")
    with tempfile.TemporaryDirectory(prefix="recall-index-choice-", dir=args.workdir) as tmp:
        work = Path(tmp)
        db, queries = store_of(args, work)
        with recall.open(db) as mem:
            vectors = embed_queries(mem.embedder, queries).astype(np.float32)
        _, _, rows = read_matrix(db)
        exact = np.stack([numpy_top(rows, v, 10) for v in vectors])
        print(f"  {len(rows):,} rows of {rows.shape[1]} dimensions, {len(queries)} queries")

        t0 = time.perf_counter()
        centroids, member = lists(rows, args.lists)
        sizes = np.bincount(member, minlength=args.lists)
        print(
            f"\n### Lists: {args.lists} (trained and assigned in {time.perf_counter() - t0:.1f} s; "
            f"rows a list: median {np.median(sizes):.0f}, fewest {sizes.min()}, most "
            f"{sizes.max()})\n"
        )
        print("| lists read | recall@10 | rows read |")
        print("| --- | --- | --- |")
        nearest = np.argsort(-(vectors @ centroids.T), axis=1)
        for probes in (p for p in PROBES if p <= args.lists):
            found, read = [], 0
            for v, order, want in zip(vectors, nearest, exact):
                held = np.flatnonzero(np.isin(member, order[:probes]))
                read += len(held)
                top = held[np.argsort(-(rows[held] @ v), kind="stable")[:10]]
                found.append(len(set(top) & set(want)) / 10)
            print(f"| {probes} | {np.mean(found):.3f} | {read / len(vectors) / len(rows):.3f} |")

        if args.graph_python:
            np.save(work / "rows.npy", rows)
            np.save(work / "queries.npy", vectors)
            np.save(work / "exact.npy", exact)
            paths = [str(work / f"{name}.npy") for name in ("rows", "queries", "exact")]
            done = subprocess.run(
                [args.graph_python, "-c", GRAPH, *paths], capture_output=True, text=True
            )
            if done.returncode != 0:
                sys.exit(f"the graph's interpreter failed:\n{done.stderr}")
            graph = json.loads(done.stdout)
            print(f"\n### Graph: HNSW, M 16 (built in {graph['built_s']:.1f} s, one thread)\n")
            print("| ef | recall@10 | ms a query, one thread |")
            print("| --- | --- | --- |")
            for ef, got in graph["ef"].items():
                print(f"| {ef} | {got['recall']:.3f} | {got['ms']:.2f} |")


if __name__ == "__main__":
    main()
