"""`Memory.search` end to end, warm, on N chunks of 80–160 Zipf words (SPEC §10).

The headline times what a user calls: `Memory.search(query)` on a calibrated store (query
embedding, both legs, fusion, trust, the `Result`) in strict mode, or in development mode, the
same path without the calibration's check, where the labelled fit does not certify (the output
says which). Beside it, from the result's own timings: query embedding, dense leg, lexical
leg, fusion, trust, and the rest (Python, the calibration lookup, building the `Result`).
Baselines in the same run, interleaved query
by query, on the same vectors read from the same file:

- a stock sqlite-vec `vec0` KNN (`WHERE embedding MATCH ? AND k = 20`, apsw + the sqlite-vec
  wheel);
- numpy exact (`M @ q`, then argpartition top-20, one BLAS thread).

Also: recall@10 of the dense leg against the exact scan, store open, cold first search (loads
the vectors and the lexical index) and the store's bytes per chunk.

Targets: p50 <= 3 ms and p95 <= 5 ms at 100k; p50 <= 1 ms at 10k; >= 20x faster than the vec0
KNN at p50.

With `--embedder dense-384` the notes are embedded by a 384-d ONNX word embedder built here
(`zipf_corpus.embedder_for`): every dimension of every vector set, the shape of the default
model's vectors (`minilm-l6`), whose rows no code reproduces; the bench then also states the
bytes the dense leg reads a query (`dense_pass_bytes`) and the time numpy takes to sum as many
bytes at the same place in the interleaving: the floor those bytes set on this machine.

With `--corpus public-docs` the notes are real text instead: Debian's documentation pages
(`public_docs.py`: Python, the Linux kernel, Node.js, Git, CMake, PostgreSQL, Django,
SQLAlchemy, Perl; 112,093 chunks in all), embedded by the default model (`minilm-l6`), so the
rows are the default model's own; the queries are section titles of those pages, in
development mode (no labelled questions).

Usage: python benches/search_latency.py [--sizes 10000 100000] [--queries 300]
       [--embedder hashing-512|dense-384] [--corpus zipf|public-docs] [--cache DIR]
"""

from __future__ import annotations

import os

# One BLAS thread for the numpy baseline: a matrix-vector product is memory bound, and an
# OpenBLAS thread spinning on the second core slows everything else on a 2-core machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import apsw  # noqa: E402
import numpy as np  # noqa: E402
import public_docs  # noqa: E402
import sqlite_vec  # noqa: E402
from machine import cpu_model  # noqa: E402
from zipf_corpus import DENSE, ZipfCorpus, embedder_for  # noqa: E402

import recall  # noqa: E402
from recall import _core  # noqa: E402

EMBEDDER = "hashing-512"
#: The default model, for the public documentation pages (`--corpus public-docs`).
DEFAULT = "minilm-l6"
CANDIDATES = 20  # dense candidates per query, as `Memory.search` asks for
WARMUP = 10
LABELLED = 40  # calibration queries per class
TARGETS = {10_000: (1.0, None), 100_000: (3.0, 5.0)}  # p50, p95 in ms
TARGET_SPEEDUP = 20.0  # at 100k
TIE = 1e-6  # cosines this close to the exact 10th count as tied with it
KNN_SQL = f"SELECT chunk_id FROM vec_chunks WHERE embedding MATCH ? AND k = {CANDIDATES}"
PARTS = ("embed", "dense", "lexical", "fuse", "trust")


def machine() -> str:
    return (
        f"{platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"sqlite-vec {getattr(sqlite_vec, '__version__', '?')}, SQLite {apsw.sqlite_lib_version()}"
    )


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def negatives(count: int, seed: int) -> list[str]:
    """Questions in words no note holds (consonant clusters the corpus never makes)."""
    rng = random.Random(seed)
    return [
        " ".join(
            "".join(rng.choice("qwxy") + rng.choice("aeiou") for _ in range(3)) for _ in range(6)
        )
        for _ in range(count)
    ]


def read_matrix(db: Path) -> tuple[apsw.Connection, np.ndarray, np.ndarray]:
    """A read-only sqlite-vec connection and the chunk ids + (N, D) matrix from its vec0 table."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    ids, blobs = [], []
    for chunk_id, blob in con.execute("SELECT chunk_id, embedding FROM vec_chunks"):
        ids.append(chunk_id)
        blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), -1)
    return con, np.asarray(ids), np.ascontiguousarray(matrix)


def numpy_top(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ q
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def dense_pass_bytes(rows: int, dim: int) -> int:
    """The bytes the dense leg reads for a model's query over `rows` rows of `dim` dimensions
    (rust/dense.rs, rust/signs.rs, rust/lists.rs): the sign words (8 bytes per 64 dimensions)
    of every row from 32,768 rows on, and from 262,144 rows (where the store keeps lists) of
    the lists nearest the query, about three tenths of the rows; below 32,768 every row's code
    (three such masks). Then the codes of the rows the sign cut keeps (one in twenty of the
    rows cut, at least 4 shortlists a part and at most 12 over all parts: a part a core this
    process may use, one per 262,144 rows cut, or per 65,536 of the lists' rows;
    `dense::sign_keep`); then the fine code of each shortlisted row (one row in 100, at least
    256 and at most 2,048: a byte per dimension, its scale and its vector's checksum). Not
    counted: the centroids (256 of `dim` floats), and the float32 vectors of the rows whose
    estimate may place (the k best and those within their bound of the k-th: a few dozen),
    each read back from the file's page."""
    mask = 8 * -(-dim // 64)
    shortlist = max(256, min(rows // 100, 2048))
    if rows >= 32_768:
        read, per_part = (-(-rows * 3 // 10), 65_536) if rows >= 262_144 else (rows, 262_144)
        parts = max(1, min(len(os.sched_getaffinity(0)), read // per_part))
        part = -(-read // parts)
        kept = parts * max(min(part // 20, 12 * shortlist // parts), 4 * shortlist)
        first = read * mask + kept * 3 * mask
    else:
        first = rows * 3 * mask
    return first + shortlist * (dim + 8)


def index_public(n: int, n_queries: int, workdir: Path, cache: Path) -> tuple[Path, list[str]]:
    """A `minilm-l6` store of public documentation pages making about `n` chunks
    (`public_docs.py`), and `n_queries` + warm-up section titles of those pages as queries.
    No labelled questions: searches run in development mode."""
    root = public_docs.notes(cache, n)
    pages = sum(1 for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    print(f"\n== about {n:,} chunks ({pages:,} public documentation pages), {DEFAULT} ==")
    db = workdir / f"store-public-{n}.db"
    t0 = time.perf_counter()
    with recall.open(db, embedder=DEFAULT) as mem:
        report = mem.index(root, calibrate=False)
        took = time.perf_counter() - t0
        stats = mem.stats()
    print(
        f"  indexed {report.chunks:,} chunks in {took:.1f} s ({report.chunks / took:,.0f} "
        f"chunks/s); {stats.file_size_bytes / stats.chunks:,.0f} bytes per chunk; no labelled "
        "questions: development mode"
    )
    return db, public_docs.titles(root, n_queries + WARMUP, seed=n)


def bench_size(
    n: int, n_queries: int, workdir: Path, name: str = EMBEDDER, cache: Path | None = None
) -> dict[str, float]:
    """`n` is the number of chunks asked for; the corpus has as many notes as make about n.
    With `cache`, the notes are public documentation pages embedded by the default model."""
    if cache is not None:
        db, queries = index_public(n, n_queries, workdir, cache)
        return time_store(n, db, queries, "development", DEFAULT)
    db, queries, mode = index_zipf(n, n_queries, workdir, name)
    return time_store(n, db, queries, mode, name)


def index_zipf(n: int, n_queries: int, workdir: Path, name: str) -> tuple[Path, list[str], str]:
    """A store of Zipf notes making about `n` chunks embedded by `name`, calibrated on labelled
    questions, its `n_queries` + warm-up queries, and the mode they are searched in."""
    corpus = ZipfCorpus(ZipfCorpus(1000).notes_for(n))
    print(f"\n== about {n:,} chunks ({corpus.n:,} notes), {name} ==")
    root, db = workdir / f"notes-{n}", workdir / f"store-{n}.db"
    t0 = time.perf_counter()
    corpus.write(root)
    t1 = time.perf_counter()
    with recall.open(db, embedder=embedder_for(name, workdir)) as mem:
        report = mem.index(root, calibrate=False)
        t2 = time.perf_counter()
        pairs = corpus.queries(LABELLED + n_queries + WARMUP, seed=n)
        labelled = [(q, True) for q, _ in pairs[:LABELLED]]
        labelled += [(q, False) for q in negatives(LABELLED, seed=n)]
        calibration, fit = mem.calibrate(labelled)
        stats = mem.stats()
    print(
        f"  wrote the notes in {t1 - t0:.1f} s; indexed {report.chunks:,} chunks in "
        f"{t2 - t1:.1f} s ({report.chunks / (t2 - t1):,.0f} chunks/s); "
        f"{stats.file_size_bytes / stats.chunks:,.0f} bytes per chunk; calibration "
        f"{calibration.id} certified: {fit.certified} "
        f"({fit.certified_reason or 'ok'})"
    )
    # Strict mode where the labelled fit certifies; else development mode, the same path without
    # the calibration's check (the word embedder's rows of a small corpus may not separate the
    # bench's made-up questions well enough to certify).
    mode = "strict" if fit.certified else "development"
    return db, [q for q, _ in pairs[LABELLED:]], mode


def dense_top(mem: recall.Memory, query: str, vector: np.ndarray, k: int) -> list[int]:
    """The chunk ids of the dense leg's own `k` best for `query`, through the store's search."""
    raw = mem._store.search(
        vector.astype("<f4").tobytes(),
        text=query,
        k=k,
        candidates=CANDIDATES,
        policy=_core.Policy(now_us=0, threshold=0.5, scale=0.05),
    )
    return [chunk for chunk, _ in raw["dense"][:k]]


def time_store(n: int, db: Path, queries: list[str], mode: str, name: str) -> dict[str, float]:
    """Time `Memory.search` on the store `db` against the baselines, as the module says."""

    t0 = time.perf_counter()
    mem = recall.open(db)
    t1 = time.perf_counter()
    mem.search(queries[0], mode=mode)
    t2 = time.perf_counter()
    open_ms, cold_ms = (t1 - t0) * 1e3, (t2 - t1) * 1e3
    con, ids, matrix = read_matrix(db)
    row_of = {int(c): i for i, c in enumerate(ids)}
    embedder = mem.embedder
    vectors = embedder.embed(queries)

    # recall@10 of the dense leg against the exact scan, through the store's own search. Hashed
    # vectors tie often (same shared words, same length), and two float summation orders break
    # a tie differently, so a hit whose exact cosine ties the exact 10th counts as found; the
    # plain set overlap is printed beside it.
    recalls, set_overlap = [], []
    for q, v in zip(queries, vectors):
        got = dense_top(mem, q, v, 10)
        top = numpy_top(matrix, v, 10)
        scores = matrix @ v
        tenth = scores[top[-1]]
        recalls.append(sum(scores[row_of[c]] >= tenth - TIE for c in got) / 10)
        set_overlap.append(len(set(got) & set(ids[top].tolist())) / 10)

    for q, v in zip(queries[:WARMUP], vectors[:WARMUP]):
        mem.search(q, mode=mode)
        list(con.execute(KNN_SQL, (v.astype("<f4").tobytes(),)))
        numpy_top(matrix, v, CANDIDATES)
    t_recall: list[float] = []
    t_vec: list[float] = []
    t_np: list[float] = []
    # The floor the dense leg's bytes set: numpy reading as many bytes once (a sum over them),
    # at the same place in the interleaving, so out of the caches as the search's data is.
    dense = name in (DENSE, DEFAULT)
    read = dense_pass_bytes(len(ids), 384) if dense else 0
    stream = np.ones(read // 8, dtype=np.uint64)
    t_floor: list[float] = []
    parts: dict[str, list[float]] = {p: [] for p in (*PARTS, "rest")}
    ok_hits = 0
    # Interleaved, so drift on a noisy machine hits all three alike.
    for q, v in zip(queries[WARMUP:], vectors[WARMUP:]):
        t0 = time.perf_counter()
        result = mem.search(q, mode=mode)
        t1 = time.perf_counter()
        knn = list(con.execute(KNN_SQL, (v.astype("<f4").tobytes(),)))
        t2 = time.perf_counter()
        numpy_top(matrix, v, CANDIDATES)
        t3 = time.perf_counter()
        if dense:
            stream.sum()
            t_floor.append((time.perf_counter() - t3) * 1e3)
        if len(knn) != CANDIDATES:
            raise SystemExit("the vec0 KNN returned fewer rows than asked for")
        t_recall.append((t1 - t0) * 1e3)
        t_vec.append((t2 - t1) * 1e3)
        t_np.append((t3 - t2) * 1e3)
        inside = 0.0
        for p in PARTS:
            parts[p].append(result.timings_ms[p])
            inside += result.timings_ms[p]
        parts["rest"].append(t_recall[-1] - inside)
        ok_hits += bool(result.ok_hits)
    mem.close()
    con.close()

    res = {
        "n": n,
        "chunks": len(ids),
        "p50": pct(t_recall, 50),
        "p95": pct(t_recall, 95),
        "vec_p50": pct(t_vec, 50),
        "vec_p95": pct(t_vec, 95),
        "np_p50": pct(t_np, 50),
        "recall10": float(np.mean(recalls)),
        "read_mb": read / 1e6,
        "floor_p50": pct(t_floor, 50) if t_floor else 0.0,
        "overlap10": float(np.mean(set_overlap)),
        "open_ms": open_ms,
        "cold_ms": cold_ms,
        **{f"{p}_p50": pct(xs, 50) for p, xs in parts.items()},
    }
    timed = len(t_recall)
    print(f"  {timed} queries after {WARMUP} warm-up; {ok_hits} answered ok ({mode} mode)")
    print(f"  {'':34} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"  {'Memory.search (end to end)':34} {res['p50']:8.3f} {res['p95']:8.3f}")
    print(
        "    inside, p50 of each: "
        + ", ".join(f"{p} {res[f'{p}_p50']:.3f}" for p in (*PARTS, "rest"))
    )
    print(f"  {'sqlite-vec vec0 KNN, k = 20':34} {res['vec_p50']:8.3f} {res['vec_p95']:8.3f}")
    print(f"  {'numpy exact M @ q + top-20':34} {res['np_p50']:8.3f} {pct(t_np, 95):8.3f}")
    print(
        f"  Memory.search is {res['vec_p50'] / res['p50']:.1f}x faster than the vec0 KNN and "
        f"{res['np_p50'] / res['p50']:.2f}x numpy's exact scan (p50)"
    )
    if dense:
        print(
            f"  the dense leg reads {res['read_mb']:.1f} MB a query; numpy sums as many bytes "
            f"in {res['floor_p50']:.3f} ms (p50), the floor they set here"
        )
    print(
        f"  recall@10 of the dense leg vs the exact scan: {res['recall10']:.3f} counting ties "
        f"(set overlap {res['overlap10']:.3f}; {len(recalls)} queries); store open "
        f"{open_ms:.1f} ms; cold first search {cold_ms:.0f} ms"
    )
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--workdir", type=Path, default=None, help="where the temp files go")
    ap.add_argument(
        "--embedder",
        default=EMBEDDER,
        help=f"hashing-D, or {DENSE} (a 384-d ONNX word embedder built here: dense rows)",
    )
    public_docs.add_arguments(ap)
    args = ap.parse_args()
    shown = DEFAULT + " on public-docs" if args.corpus == "public-docs" else args.embedder
    print(f"machine: {machine()}; {shown}; load average {os.getloadavg()[0]:.2f}")
    cache = args.cache if args.corpus == "public-docs" else None
    results = []
    with tempfile.TemporaryDirectory(prefix="recall-search-", dir=args.workdir) as tmp:
        for n in args.sizes:
            results.append(bench_size(n, args.queries, Path(tmp), args.embedder, cache))
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    print(
        f"{'chunks':>9} {'p50 ms':>7} {'p95 ms':>7} {'vec0 p50':>9} {'speed-up':>9} "
        f"{'recall@10':>9}  targets"
    )
    for r in results:
        speedup = r["vec_p50"] / r["p50"]
        p50_target, p95_target = TARGETS.get(int(r["n"]), (None, None))
        verdicts = []
        if r["n"] == 100_000:
            met = "MET" if speedup >= TARGET_SPEEDUP else "NOT MET"
            verdicts.append(f"speed-up >= {TARGET_SPEEDUP:g}x {met}")
        if p50_target is not None:
            verdicts.append(
                f"p50 <= {p50_target:g} {'MET' if r['p50'] <= p50_target else 'NOT MET'}"
            )
        if p95_target is not None:
            verdicts.append(
                f"p95 <= {p95_target:g} {'MET' if r['p95'] <= p95_target else 'NOT MET'}"
            )
        print(
            f"{int(r['chunks']):>9,} {r['p50']:>7.3f} {r['p95']:>7.3f} {r['vec_p50']:>9.2f} "
            f"{speedup:>8.1f}x {r['recall10']:>9.3f}  " + "; ".join(verdicts)
        )


if __name__ == "__main__":
    main()
