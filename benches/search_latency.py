"""Search latency, warm, excluding query embedding, N chunks x 384 dims (SPEC §10).

Measures the dense leg + trust layer of a recall store (the Rust store's search called with a
precomputed query vector, i.e. `Memory.search` minus the query embedding) at p50 / p95, and in
the same run, on the same vectors in the same file:

- a plain sqlite-vec `vec0` KNN (`WHERE embedding MATCH ? AND k = 20`, through apsw);
- numpy brute force (`M @ q`, then argpartition top-20).

Targets at 100k chunks: recall p50 <= 10 ms, and >= 10x faster than the sqlite-vec KNN.
Also reported: store open time and cold load time (the first search after open, which loads the
vectors into memory), and a correctness check against the exact numpy scan.

Usage: python benches/search_latency.py [--sizes 10000 100000] [--queries 200]
"""

from __future__ import annotations

import os

# One BLAS thread for the numpy baseline: a matrix-vector product is memory bound, and a second
# OpenBLAS thread on a busy 2-core machine made it 50x slower at 2k rows (7.6 ms vs 0.15 ms).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import apsw  # noqa: E402
import numpy as np  # noqa: E402
import sqlite_vec  # noqa: E402

import recall  # noqa: E402

DIM = 384
CANDIDATES = 20  # dense candidates per query, as `Memory.search` asks for
K = 5  # hits returned, as `Memory.search` defaults to
FILES_PER_FOLDER = 1000
WARMUP = 5
CHECK_QUERIES = 20
TARGET_P50_MS = 10.0
TARGET_SPEEDUP = 10.0
KNN_SQL = f"SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = {CANDIDATES}"

# The same vocabulary as the indexing benchmark (benches/ is on sys.path when run as a script).
from index_throughput import WORDS  # noqa: E402
from machine import cpu_model  # noqa: E402


class RandomEmbedder:
    """Satisfies `recall.Embedder`: seeded random unit vectors, whatever the text."""

    name = "bench-random-384"
    dim = DIM
    fingerprint = "bench-random-384-v1"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def embed(self, texts: list[str]) -> np.ndarray:
        v = self.rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def machine() -> str:
    model = cpu_model()
    return (
        f"{platform.machine()}, {model}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"sqlite-vec {getattr(sqlite_vec, '__version__', '?')}, SQLite {apsw.sqlite_lib_version()}"
    )


def extension_build() -> str:
    """Which cargo profile the loaded extension came from, when it matches one under target/."""
    ext = Path(recall._core.__file__)
    digest = hashlib.blake2b(ext.read_bytes()).digest()
    target = Path(__file__).resolve().parents[1] / "target"
    for profile in ("release", "debug"):
        lib = target / profile / "lib_core.so"
        if lib.is_file() and hashlib.blake2b(lib.read_bytes()).digest() == digest:
            if profile == "debug":
                return f"{ext} (DEBUG build, same bytes as {lib}: figures not representative)"
            return f"{ext} (release build, same bytes as {lib})"
    return f"{ext} (build profile unknown)"


def write_corpus(root: Path, n: int, seed: int) -> None:
    """N one-paragraph notes (one chunk each), in folders of FILES_PER_FOLDER files."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        folder = root / f"f{i // FILES_PER_FOLDER:04d}"
        if i % FILES_PER_FOLDER == 0:
            folder.mkdir(parents=True)
        words = " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 8))
        (folder / f"note-{i:06d}.md").write_text(f"Note {i}: {words}.\n", encoding="utf-8")


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def unit_queries(n: int, seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def vec_connection(db: Path) -> apsw.Connection:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    return con


def load_matrix(con: apsw.Connection) -> tuple[np.ndarray, np.ndarray]:
    """Chunk ids and the (N, DIM) float32 matrix, read from the store's own vec0 table."""
    ids: list[int] = []
    blobs: list[bytes] = []
    for chunk_id, blob in con.execute("SELECT chunk_id, embedding FROM vec_chunks"):
        ids.append(chunk_id)
        blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), DIM)
    return np.asarray(ids, dtype=np.int64), np.ascontiguousarray(matrix, dtype=np.float32)


def numpy_top(matrix: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    scores = matrix @ q
    top = np.argpartition(-scores, k)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return top, scores[top]


def recall_search(store: Any, q: np.ndarray, k: int = K, text: str = "") -> dict[str, Any]:
    """The search + trust path of `Memory.search`, minus the query embedding. An empty `text`
    gives the dense leg alone; a query text adds the lexical leg and fusion (hybrid)."""
    return store.search(
        q.astype("<f4").tobytes(),
        text=text,
        k=k,
        candidates=CANDIDATES,
        now_us=0,
        known_as_of_us=None,
        threshold=0.5,
        scale=0.05,
        unverified=False,
    )


def dense_candidates(raw: dict[str, Any]) -> tuple[list[int] | None, np.ndarray]:
    """The dense candidates' chunk ids (None when the core does not report them) and cosines,
    best first: `dense` = [(chunk id, cosine)], or `dense_scores` = [cosine] in older cores."""
    if "dense" in raw:
        pairs = raw["dense"]
        return [c for c, _ in pairs], np.asarray([s for _, s in pairs], dtype=np.float64)
    return None, np.asarray(raw["dense_scores"], dtype=np.float64)


def check(
    store: Any,
    con: apsw.Connection,
    ids: np.ndarray,
    matrix: np.ndarray,
    path_ids: dict[str, int],
    queries: np.ndarray,
) -> bool:
    """recall's dense scores and sqlite-vec's ids against the exact numpy scan."""
    worst_score = 0.0
    worst_vec_dist = 0.0
    vec_sets_equal = 0
    recall_at_10: list[float] = []
    for q in queries:
        rows, exact = numpy_top(matrix, q, CANDIDATES)
        exact_ids = set(ids[rows[:10]].tolist())
        raw = recall_search(store, q, k=10)
        dense_ids, dense = dense_candidates(raw)
        if dense.shape != exact.shape:
            print(f"  recall returned {dense.size} dense scores, expected {exact.size}")
            return False
        worst_score = max(worst_score, float(np.max(np.abs(dense - exact))))
        if dense_ids is None:  # older core: identify the candidates through the hits' paths
            dense_ids = [path_ids[h["path"]] for h in raw["hits"]]
        got = set(dense_ids[:10])
        recall_at_10.append(len(got & exact_ids) / 10)
        knn = list(con.execute(KNN_SQL, (q.astype("<f4").tobytes(),)))
        vec_sets_equal += {cid for cid, _ in knn[:10]} == exact_ids
        cos = np.asarray([1.0 - d for _, d in knn])
        worst_vec_dist = max(worst_vec_dist, float(np.max(np.abs(cos - exact))))
    n = len(queries)
    ok = worst_score <= 1e-5 and vec_sets_equal == n
    print(
        f"  check ({n} queries): recall top-{CANDIDATES} dense cosines vs numpy max |diff| "
        f"{worst_score:.2e} (tol 1e-5); sqlite-vec top-10 set == numpy: {vec_sets_equal}/{n} "
        f"(1 - distance vs cosine max |diff| {worst_vec_dist:.2e}); recall@10 of recall vs "
        f"exact: {statistics.fmean(recall_at_10):.3f} -> {'OK' if ok else 'FAILED'}"
    )
    return ok


def speed(baseline_ms: float, recall_ms: float) -> str:
    ratio = baseline_ms / recall_ms
    return f"recall {ratio:.1f}x faster" if ratio >= 1 else f"recall {1 / ratio:.1f}x slower"


def bench_size(n: int, n_queries: int, workdir: Path, cold_runs: int) -> dict[str, float]:
    print(f"\n== N = {n:,} chunks x {DIM} dims ==")
    corpus = workdir / f"corpus-{n}"
    db = workdir / f"store-{n}.db"
    t0 = time.perf_counter()
    write_corpus(corpus, n, seed=n)
    print(f"  wrote {n:,} notes in {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    with recall.open(db, embedder=RandomEmbedder(7)) as mem:
        report = mem.index(corpus)
        stats = mem.stats()
    build_s = time.perf_counter() - t0
    print(
        f"  indexed in {build_s:.1f} s ({report.chunks / build_s:,.0f} chunks/s); "
        f"{stats.documents:,} documents, {stats.chunks:,} chunks, "
        f"{stats.file_size_bytes / 1e6:.1f} MB"
    )
    if stats.chunks != n or stats.vectors != n:
        raise SystemExit(
            f"expected {n} chunks and vectors, store has {stats.chunks}/{stats.vectors}"
        )
    shutil.rmtree(corpus)

    queries = unit_queries(n_queries + WARMUP, seed=1000 + n)
    # Store open + cold load (first search after open), on a file in the OS page cache.
    opens: list[float] = []
    colds: list[float] = []
    loads: list[float] = []
    for _ in range(cold_runs):
        t0 = time.perf_counter()
        mem = recall.open(db)
        t1 = time.perf_counter()
        raw = recall_search(mem._store, queries[0])
        t2 = time.perf_counter()
        mem.close()
        opens.append((t1 - t0) * 1e3)
        colds.append((t2 - t1) * 1e3)
        loads.append(raw["load_ms"])
    print(
        f"  store open: median {statistics.median(opens):.1f} ms; cold first search: median "
        f"{statistics.median(colds):.0f} ms (of which load {statistics.median(loads):.0f} ms), "
        f"{cold_runs} runs"
    )
    # The lexical leg's cost when its saved files are missing: rebuilt from the chunks on the
    # first search (on a copy, so the timed store is untouched).
    rebuild_db = workdir / f"rebuild-{n}.db"
    shutil.copy(db, rebuild_db)
    con = sqlite3.connect(rebuild_db)
    con.execute("DELETE FROM lexical_files")
    con.execute("DELETE FROM meta WHERE key = 'lexical_generation'")
    con.commit()
    con.close()
    with recall.open(rebuild_db) as mem:
        t0 = time.perf_counter()
        recall_search(mem._store, queries[0], text="deploy freeze")
        rebuild_ms = (time.perf_counter() - t0) * 1e3
    rebuild_db.unlink()
    print(f"  lexical index rebuilt from the chunks (first search): {rebuild_ms:.0f} ms")

    con = vec_connection(db)
    t0 = time.perf_counter()
    ids, matrix = load_matrix(con)
    print(f"  numpy matrix read through apsw from vec0: {(time.perf_counter() - t0) * 1e3:.0f} ms")
    path_ids = {
        path: cid
        for cid, path in con.execute(
            "SELECT c.id, d.path FROM chunks c JOIN documents d ON d.id = c.doc_id"
        )
    }
    mem = recall.open(db)
    try:
        store = mem._store
        if not check(store, con, ids, matrix, path_ids, unit_queries(CHECK_QUERIES, seed=n + 1)):
            raise SystemExit("correctness check failed; not timing")

        for q in queries[:WARMUP]:
            recall_search(store, q)
            list(con.execute(KNN_SQL, (q.tobytes(),)))
            numpy_top(matrix, q, CANDIDATES)
        t_recall: list[float] = []
        t_hybrid: list[float] = []
        lexical_ms: list[float] = []
        words = np.random.default_rng(n + 3)
        t_vec: list[float] = []
        t_np: list[float] = []
        dense_ms: list[float] = []
        trust_ms: list[float] = []
        # Interleaved, so drift on a noisy machine hits all three alike.
        for q in queries[WARMUP:]:
            qb = q.astype("<f4").tobytes()
            t0 = time.perf_counter()
            raw = recall_search(store, q)
            t1 = time.perf_counter()
            knn = list(con.execute(KNN_SQL, (qb,)))
            t2 = time.perf_counter()
            numpy_top(matrix, q, CANDIDATES)
            t3 = time.perf_counter()
            if len(dense_candidates(raw)[1]) != CANDIDATES or len(knn) != CANDIDATES:
                raise SystemExit("a search returned fewer candidates than asked for")
            text = " ".join(WORDS[j] for j in words.integers(0, len(WORDS), 3))
            t4 = time.perf_counter()
            hybrid = recall_search(store, q, text=text)
            t_hybrid.append((time.perf_counter() - t4) * 1e3)
            lexical_ms.append(hybrid["lexical_ms"])
            t_recall.append((t1 - t0) * 1e3)
            t_vec.append((t2 - t1) * 1e3)
            t_np.append((t3 - t2) * 1e3)
            dense_ms.append(raw["dense_ms"])
            trust_ms.append(raw["trust_ms"])
    finally:
        mem.close()
        con.close()

    res = {
        "n": n,
        "build_s": build_s,
        "open_ms": statistics.median(opens),
        "cold_ms": statistics.median(colds),
        "load_ms": statistics.median(loads),
        "recall_p50": pct(t_recall, 50),
        "recall_p95": pct(t_recall, 95),
        "dense_p50": pct(dense_ms, 50),
        "trust_p50": pct(trust_ms, 50),
        "hybrid_p50": pct(t_hybrid, 50),
        "hybrid_p95": pct(t_hybrid, 95),
        "lexical_p50": pct(lexical_ms, 50),
        "vec_p50": pct(t_vec, 50),
        "vec_p95": pct(t_vec, 95),
        "np_p50": pct(t_np, 50),
        "np_p95": pct(t_np, 95),
        "bytes": stats.file_size_bytes,
        "rebuild_ms": rebuild_ms,
    }
    print(f"  {n_queries} queries, k = {CANDIDATES} candidates, {K} hits, warm:")
    print(f"  {'':28} {'p50 ms':>8} {'p95 ms':>8}")
    print(
        f"  {'recall (dense + trust)':28} {res['recall_p50']:8.2f} {res['recall_p95']:8.2f}"
        f"   (inside: dense {res['dense_p50']:.2f}, trust {res['trust_p50']:.2f} at p50)"
    )
    print(
        f"  {'recall hybrid (+ BM25, RRF)':28} {res['hybrid_p50']:8.2f} {res['hybrid_p95']:8.2f}"
        f"   (inside: lexical {res['lexical_p50']:.2f} at p50; 3-word OR query)"
    )
    print(f"  {'sqlite-vec vec0 KNN':28} {res['vec_p50']:8.2f} {res['vec_p95']:8.2f}")
    print(f"  {'numpy M @ q + argpartition':28} {res['np_p50']:8.2f} {res['np_p95']:8.2f}")
    print(
        f"  ratio recall/sqlite-vec: p50 {res['recall_p50'] / res['vec_p50']:.3f} "
        f"({speed(res['vec_p50'], res['recall_p50'])}); recall/numpy: p50 "
        f"{res['recall_p50'] / res['np_p50']:.3f} ({speed(res['np_p50'], res['recall_p50'])})"
    )
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cold-runs", type=int, default=3, help="reopen + first search, repeated")
    ap.add_argument("--workdir", type=Path, default=None, help="where the temp files go")
    args = ap.parse_args()

    print(f"machine: {machine()}")
    print(f"recall extension: {extension_build()}")
    print(
        f"numpy BLAS threads: OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"targets (SPEC §10): p50 <= {TARGET_P50_MS:g} ms at 100k, and >= {TARGET_SPEEDUP:g}x "
        "faster than sqlite-vec vec0 KNN"
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="recall-bench-", dir=args.workdir) as tmp:
        for n in args.sizes:
            results.append(bench_size(n, args.queries, Path(tmp), args.cold_runs))

    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    print("== summary (ms; ratio = recall p50 / other p50) ==")
    print(
        f"{'N':>8} {'recall p50':>10} {'p95':>7} {'sqlite-vec p50':>14} {'p95':>7} "
        f"{'numpy p50':>9} {'p95':>7} {'r/vec':>6} {'r/np':>6} {'open':>6} {'cold':>7}"
    )
    for r in results:
        print(
            f"{r['n']:>8,} {r['recall_p50']:>10.2f} {r['recall_p95']:>7.2f} "
            f"{r['vec_p50']:>14.2f} {r['vec_p95']:>7.2f} {r['np_p50']:>9.2f} "
            f"{r['np_p95']:>7.2f} {r['recall_p50'] / r['vec_p50']:>6.3f} "
            f"{r['recall_p50'] / r['np_p50']:>6.3f} {r['open_ms']:>6.1f} {r['cold_ms']:>7.0f}"
        )
    for r in results:
        if r["n"] != 100_000:
            continue
        speedup = r["vec_p50"] / r["recall_p50"]
        p50_ok = r["recall_p50"] <= TARGET_P50_MS
        speed_ok = speedup >= TARGET_SPEEDUP
        print(
            f"hybrid at 100k: p50 {r['hybrid_p50']:.2f} ms <= {TARGET_P50_MS:g} ms: "
            f"{'MET' if r['hybrid_p50'] <= TARGET_P50_MS else 'NOT MET'}"
        )
        print(
            f"targets at 100k: p50 {r['recall_p50']:.2f} ms <= {TARGET_P50_MS:g} ms: "
            f"{'MET' if p50_ok else 'NOT MET'}; speed-up over sqlite-vec {speedup:.2f}x >= "
            f"{TARGET_SPEEDUP:g}x: {'MET' if speed_ok else 'NOT MET'}"
        )


if __name__ == "__main__":
    main()
