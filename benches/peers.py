"""recall beside the vector stores a user would pick instead, on the same vectors (SPEC §10).

One store's vectors, as recall keeps them, are searched by:
- recall itself: `Memory.search` end to end (development mode), with its dense leg's share;
- numpy's exact scan (`M @ q`, the top 10), which every recall@10 here is counted against;
- sqlite-vec's `vec0` KNN over the same stored vectors in the same file;
- the peers, in an interpreter of their own (`--peers-python`, a virtual environment with
  `lancedb` and `chromadb` installed from the package index; neither is a dependency of
  recall): LanceDB's IVF-PQ index (partitions √rows, 48 sub-vectors, 20 partitions probed, the
  default refinement) and Chroma's HNSW collection (cosine space, its default build and search
  settings). Each peer's build time is printed with its searches.

The store is `search_latency.py`'s: with `--corpus public-docs` Debian's documentation pages
embedded by the default model, `minilm-l6`, asked their own section titles; otherwise Zipf
notes with `--embedder` (`dense-384`: a 384-d ONNX word embedder built here). Every search is
timed per query, each system's queries after the other's (the peers' in their own process),
back to back, and the table gives p50 / p95 with recall@10 (set overlap with numpy's top 10)
and the ratio of each p50 to that of recall's dense leg (the peers, like the leg, are handed
the query's vector; `Memory.search` also embeds the query, runs the lexical leg and judges).
Outside CI: a peer's index over 100k rows takes a minute.

Usage: python benches/peers.py --peers-python PYTHON [--corpus zipf|public-docs] [--cache DIR]
       [--embedder hashing-512|dense-384] [--chunks 100000] [--queries 200] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import public_docs
import sqlite_vec
from machine import cpu_model
from search_latency import (
    DEFAULT,
    WARMUP,
    dense_top,
    index_public,
    index_zipf,
    numpy_top,
    read_matrix,
)
from zipf_corpus import DENSE

import recall

K = 10

#: Run by the peers' interpreter: build each peer's index over the rows, then time its searches.
#: Reads the rows and queries from .npy files; answers one JSON line per peer.
PEERS = r"""
import json, math, shutil, sys, tempfile, time
import numpy as np
rows, queries = np.load(sys.argv[1]), np.load(sys.argv[2])
k, warmup = int(sys.argv[3]), int(sys.argv[4])
ids = np.arange(len(rows))
work = tempfile.mkdtemp(prefix="recall-peers-")

def timed(search):
    for q in queries[:warmup]:
        search(q)
    got, ms = [], []
    for q in queries[warmup:]:
        t = time.perf_counter()
        got.append(search(q))
        ms.append((time.perf_counter() - t) * 1e3)
    return got, ms

def lance():
    import lancedb, pyarrow as pa
    from lancedb.index import IvfPq
    t = time.perf_counter()
    db = lancedb.connect(f"{work}/lance")
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(rows.ravel(), pa.float32()), rows.shape[1])
    table = db.create_table("rows", pa.table({"id": ids, "vector": vectors}))
    partitions = max(1, int(math.sqrt(len(rows))))
    config = IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=48)
    table.create_index("vector", config=config)
    build = time.perf_counter() - t
    def search(q):
        hits = table.search(q).distance_type("cosine").nprobes(20).limit(k).to_arrow()
        return hits.column("id").to_pylist()
    got, ms = timed(search)
    return {"name": f"LanceDB IVF-PQ ({partitions} partitions, 48 sub-vectors, 20 probed)",
            "build_s": build, "ids": got, "ms": ms}

def chroma():
    import chromadb
    t = time.perf_counter()
    client = chromadb.PersistentClient(path=f"{work}/chroma")
    col = client.create_collection("rows", metadata={"hnsw:space": "cosine"})
    batch = client.get_max_batch_size()
    for lo in range(0, len(rows), batch):
        hi = min(lo + batch, len(rows))
        col.add(ids=[str(i) for i in range(lo, hi)], embeddings=rows[lo:hi])
    build = time.perf_counter() - t
    def search(q):
        return [int(i) for i in col.query(query_embeddings=[q], n_results=k)["ids"][0]]
    got, ms = timed(search)
    name = "Chroma HNSW (cosine, default settings)"
    return {"name": name, "build_s": build, "ids": got, "ms": ms}

for peer in (lance, chroma):
    try:
        print(json.dumps(peer()), flush=True)
    except Exception as e:  # a peer that fails is reported, not fatal
        print(json.dumps({"name": peer.__name__, "error": f"{type(e).__name__}: {e}"}), flush=True)
shutil.rmtree(work, ignore_errors=True)
"""


def pct(xs: list[float], p: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def overlap(got: list[list[int]], exact: list[np.ndarray]) -> float:
    return statistics.mean(len(set(g) & set(e.tolist())) / K for g, e in zip(got, exact))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peers-python", required=True, help="python with lancedb and chromadb")
    public_docs.add_arguments(ap)
    ap.add_argument("--embedder", default=DENSE, help=f"with zipf: hashing-D or {DENSE}")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    public = args.corpus == "public-docs"
    shown = f"{DEFAULT} on public-docs" if public else args.embedder
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; {shown}")
    with tempfile.TemporaryDirectory(prefix="recall-peers-", dir=args.workdir) as scratch:
        work = Path(scratch)
        if public:
            db, queries = index_public(args.chunks, args.queries, work, args.cache.resolve())
            mode = "development"
        else:
            db, queries, mode = index_zipf(args.chunks, args.queries, work, args.embedder)
        con, ids, matrix = read_matrix(db)
        row_of = {int(c): r for r, c in enumerate(ids)}
        timed = range(WARMUP, len(queries))
        rows: list[tuple[str, str, list[float], float]] = []
        with recall.open(db) as mem:
            vectors = np.ascontiguousarray(mem.embedder.embed(queries), dtype=np.float32)
            exact = [numpy_top(matrix, vectors[i], K) for i in timed]
            got = [[row_of[c] for c in dense_top(mem, queries[i], vectors[i], K)] for i in timed]
            for q in queries[:WARMUP]:
                mem.search(q, K, mode=mode)
            ms, dense = [], []
            for i in timed:
                t = time.perf_counter()
                result = mem.search(queries[i], K, mode=mode)
                ms.append((time.perf_counter() - t) * 1e3)
                dense.append(result.timings_ms["dense"])
        rows.append(("recall Memory.search (end to end)", "", ms, overlap(got, exact)))
        rows.append(("  of it: its dense leg", "", dense, overlap(got, exact)))

        ms = []
        for i in timed:
            t = time.perf_counter()
            numpy_top(matrix, vectors[i], K)
            ms.append((time.perf_counter() - t) * 1e3)
        rows.append(("numpy exact scan", "", ms, 1.0))

        ms, got = [], []
        knn = "SELECT chunk_id FROM vec_chunks WHERE embedding MATCH ? AND k = ?"
        for i in timed:
            blob = vectors[i].astype("<f4").tobytes()
            t = time.perf_counter()
            found = [r[0] for r in con.execute(knn, (blob, K))]
            ms.append((time.perf_counter() - t) * 1e3)
            got.append([row_of[c] for c in found])
        rows.append((f"sqlite-vec {sqlite_vec.__version__} vec0 KNN", "", ms, overlap(got, exact)))

        np.save(work / "rows.npy", matrix)
        np.save(work / "queries.npy", vectors)
        peers = subprocess.run(
            [args.peers_python, "-c", PEERS, str(work / "rows.npy"), str(work / "queries.npy")]
            + [str(K), str(WARMUP)],
            capture_output=True,
            text=True,
            check=True,
        )
        for line in peers.stdout.splitlines():
            peer = json.loads(line)
            if "error" in peer:
                print(f"  {peer['name']}: failed: {peer['error']}")
                continue
            built = f"built in {peer['build_s']:.1f} s"
            rows.append((peer["name"], built, peer["ms"], overlap(peer["ids"], exact)))

    # The peers search given vectors, as recall's dense leg does: the ratio is against it.
    base = statistics.median(rows[1][2])
    print(f"\n{len(matrix):,} rows of {matrix.shape[1]} dimensions; {len(timed)} queries, k = {K}")
    print(f"{'':58} {'p50 ms':>9} {'p95 ms':>9} {'recall@10':>9} {'p50 / dense leg':>15}")
    for name, note, ms, rec in rows:
        p50 = statistics.median(ms)
        print(
            f"{name:58} {p50:9.3f} {pct(ms, 0.95):9.3f} {rec:9.3f} {p50 / base:14.2f}x"
            + (f"  {note}" if note else "")
        )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
