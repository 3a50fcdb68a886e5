"""The same memory on PostgreSQL + pgvector beside the single file, in one run.

On one Zipf corpus (benches/zipf_corpus.py) of about N chunks:

- embedding, once: every chunk is embedded by a first index run into a scratch file, and both
  stores below are then written from those vectors (an embedder that remembers them), so their
  index figures are the store's write path alone: SQLite + Tantivy against COPY + the lexicon,
  then the GIN and HNSW indexes built at the end of a namespace's first run;
- `Memory.search` end to end, warm, strict mode with the same certified calibration, p50/p95,
  the two backends interleaved query by query (the query embedded each time, as a user's is);
- the HNSW index's recall@10 against the exact scan of the same vectors (numpy), queried as the
  store queries it (its `hnsw.ef_search`, the index forced), ties with the exact 10th found;
- agreement: the share of queries whose hits (file, verdict) are the same on both backends.

The server is the one the test extras install (`pgserver`: PostgreSQL 16 + pgvector 0.6.2 on
Python 3.9-3.12), started in a temporary folder on this machine (so it shares the cores with the
benchmark); the run prints both versions.

Usage: python benches/postgres.py [--chunks 100000] [--queries 200] [--embedder hashing-512]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import pgserver  # type: ignore[import-untyped]  # noqa: E402
import psycopg  # noqa: E402
from machine import cpu_model, p95  # noqa: E402
from zipf_corpus import ZipfCorpus  # noqa: E402

import recall  # noqa: E402
from recall.embedders import Embedder, get_embedder  # noqa: E402
from recall.postgres.search import EF_SEARCH  # noqa: E402

WARMUP = 10
LABELLED = 40
TIE = 1e-6


class Remembered:
    """An embedder that embeds each text once and gives the same vector after (same name, dim
    and fingerprint, so both stores are bound to the same lineage)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seen: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if missing:
            self.seen.update(zip(missing, self.inner.embed(missing)))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.seen[t] for t in texts]).astype(np.float32)

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        query = getattr(self.inner, "embed_query", None) or self.inner.embed
        return np.asarray(query(texts), dtype=np.float32)


def negatives(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(
            "".join(rng.choice("qwxy") + rng.choice("aeiou") for _ in range(3)) for _ in range(6)
        )
        for _ in range(count)
    ]


def median(xs: list[float]) -> float:
    return float(np.median(np.asarray(xs)))


def shown(result: recall.Result) -> list[tuple[str, str]]:
    return [(h.provenance.file, h.verdict) for h in result.hits]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="hashing-512")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="recall-pg-", dir=args.workdir) as tmp:
        work = Path(tmp)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(work))
        server = pgserver.get_server(work / "pg", cleanup_mode="stop")
        try:
            run(server.get_uri(), work, args.chunks, args.queries, args.embedder)
        finally:
            server.cleanup()


def run(url: str, work: Path, chunks: int, n_queries: int, embedder_name: str) -> None:
    with psycopg.connect(url) as con:
        con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        con.commit()
        versions = con.execute(
            "SELECT current_setting('server_version'), extversion FROM pg_extension"
            " WHERE extname = 'vector'"
        ).fetchone()
    print(f"server: PostgreSQL {versions[0]}, pgvector {versions[1]}" if versions else "server: ?")
    corpus = ZipfCorpus(ZipfCorpus(1000).notes_for(chunks))
    root = work / "notes"
    corpus.write(root)
    print(f"\n== about {chunks:,} chunks ({corpus.n:,} notes), {embedder_name} ==")
    embedder = Remembered(get_embedder(embedder_name))
    with recall.open(work / "scratch.db", embedder=embedder) as mem:
        t0 = time.perf_counter()
        report = mem.index(root, calibrate=False)
        embed_s = time.perf_counter() - t0
    print(
        f"  embedding pass (a first index run into a scratch file): {report.chunks:,} chunks in "
        f"{embed_s:.1f} s ({report.chunks / embed_s:,.0f} chunks/s)"
    )
    targets = {"sqlite": str(work / "store.db"), "postgres": f"{url}&namespace=bench"}
    index_s: dict[str, float] = {}
    for name, target in targets.items():
        with recall.open(target, embedder=embedder) as mem:
            t0 = time.perf_counter()
            report = mem.index(root, calibrate=False)
            index_s[name] = time.perf_counter() - t0
        print(
            f"  index into {name:8} from the remembered vectors: {report.chunks:,} chunks in "
            f"{index_s[name]:.1f} s ({report.chunks / index_s[name]:,.0f} chunks/s)"
        )
    pairs = corpus.queries(LABELLED + n_queries + WARMUP, seed=chunks)
    labelled = [(q, True) for q, _ in pairs[:LABELLED]]
    labelled += [(q, False) for q in negatives(LABELLED, seed=chunks)]
    with recall.open(targets["sqlite"], embedder=embedder) as mem:
        calibration, fit = mem.calibrate(labelled)
        record = mem.export_calibration()
    if not fit.certified:
        raise SystemExit(f"the calibration is not certified ({fit.certified_reason})")
    with recall.open(targets["postgres"], embedder=embedder) as mem:
        mem.import_calibration(record)
    queries = [q for q, _ in pairs[LABELLED:]]

    mems = {name: recall.open(target, embedder=embedder) for name, target in targets.items()}
    times: dict[str, list[float]] = {name: [] for name in mems}
    parts: dict[str, list[float]] = {p: [] for p in ("embed", "dense", "lexical", "trust")}
    same = 0
    try:
        for q in queries[:WARMUP]:
            for m in mems.values():
                m.search(q)
        for q in queries[WARMUP:]:
            results = {}
            for name, m in mems.items():
                t0 = time.perf_counter()
                results[name] = m.search(q)
                times[name].append((time.perf_counter() - t0) * 1e3)
            same += shown(results["sqlite"]) == shown(results["postgres"])
            for p in parts:
                parts[p].append(results["postgres"].timings_ms[p])
    finally:
        for m in mems.values():
            m.close()
    vectors = embedder.embed_query(queries[WARMUP:])
    timed = len(queries) - WARMUP
    print(f"  {timed} queries after {WARMUP} warm-up, interleaved, strict mode")
    print(f"  {'Memory.search':28} {'p50 ms':>8} {'p95 ms':>8}")
    for name, xs in times.items():
        print(f"  {'  on ' + name:28} {median(xs):8.3f} {p95(xs):8.3f}")
    print(
        "    on postgres, p50 of each part: "
        + ", ".join(f"{p} {median(xs):.2f}" for p, xs in parts.items())
        + " (trust: reading the candidates' rows, then judging)"
    )
    ratio = median(times["postgres"]) / median(times["sqlite"])
    print(f"  PostgreSQL / file at p50: {ratio:.1f}x; same hits and verdicts on {same}/{timed}")

    with psycopg.connect(url) as con:
        rows = con.execute("SELECT id, vector_send(embedding) FROM bench.chunks").fetchall()
        ids = np.asarray([r[0] for r in rows])
        matrix = np.stack([np.frombuffer(bytes(r[1]), dtype=">f4", offset=4) for r in rows])
        matrix = matrix.astype(np.float32)
        row = {int(c): i for i, c in enumerate(ids)}
        # As the store asks (its search sets both per query).
        con.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        con.execute("SET enable_seqscan = off")
        found = []
        for v in vectors:
            text = "[" + ",".join(map(repr, v.astype(np.float32).tolist())) + "]"
            got = [
                r[0]
                for r in con.execute(
                    "SELECT id FROM bench.chunks ORDER BY embedding <=> %s::vector LIMIT 10",
                    (text,),
                ).fetchall()
            ]
            scores = matrix @ v.astype(np.float32)
            tenth = np.sort(scores)[-10]
            found.append(sum(scores[row[c]] >= tenth - TIE for c in got) / 10)
    nonzero = float(np.mean(np.count_nonzero(vectors, axis=1)))
    print(
        f"  HNSW recall@10 vs the exact scan (ef_search {EF_SEARCH}, ties counted): "
        f"{np.mean(found):.3f} over {len(found)} queries (query vectors: {nonzero:.0f} of "
        f"{vectors.shape[1]} components non-zero)"
    )
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    print(
        f"summary: {chunks:,} chunks, {embedder_name}; index {index_s['sqlite']:.1f} s file, "
        f"{index_s['postgres']:.1f} s PostgreSQL; search p50 {median(times['sqlite']):.2f} / "
        f"{median(times['postgres']):.2f} ms, p95 {p95(times['sqlite']):.2f} / "
        f"{p95(times['postgres']):.2f} ms; HNSW recall@10 {np.mean(found):.3f}; same hits "
        f"{same}/{timed}"
    )


if __name__ == "__main__":
    main()
