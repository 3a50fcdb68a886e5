"""The same memory on PostgreSQL + pgvector beside the single file, in one run.

On one Zipf corpus (benches/zipf_corpus.py) of about N chunks:

- embedding, once: every chunk is embedded by a first index run into a scratch file, and the
  stores below are then written from those vectors (an embedder that remembers them), so their
  index figures are the store's write path alone (each run timed after the runs before it
  are written out: `os.sync()` and a server checkpoint);
- the first search of a fresh handle (for PostgreSQL: reading the corpus, the vectors and the
  chunks' terms), and the resident memory of a new process after its first search of each
  store;
- `Memory.search` end to end, warm, strict mode with the same certified calibration, p50/p95,
  the stores interleaved query by query (the query embedded each time, as a user's is);
- the dense leg's recall@10 against numpy's exact scan of the vectors read back from the
  namespace (ties with the exact 10th counted as found);
- agreement: the share of queries whose hits (file, verdict) are the file store's.

`--baseline PYTHON`: another build (a virtual environment's interpreter with recall installed)
indexes the same notes into its own namespace of the same server and answers the same queries,
interleaved with this build's, in a process of its own; its figures print beside these. It is
written from the same vectors under this build's lineage, and embeds its queries with its own
model (a build whose model computes otherwise embeds them otherwise).

`--vectors FILE.npy` keeps the embedding pass: a later run on the same corpus and embedder
reads the vectors from it instead of embedding every chunk again.

The server is the one the test extras install (`pgserver`: PostgreSQL 16 + pgvector 0.6.2 on
Python 3.9-3.12), started in a temporary folder on this machine (so it shares the cores with the
benchmark); the run prints both versions.

Usage: python benches/postgres.py [--chunks 100000] [--queries 200] [--embedder hashing-512]
                                  [--baseline PYTHON] [--vectors FILE.npy]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

import recall  # noqa: E402
from recall import _core  # noqa: E402
from recall.embedders import Embedder, get_embedder  # noqa: E402

WARMUP = 10
LABELLED = 40
TIE = 1e-6
CANDIDATES = 40


class Remembered:
    """An embedder that embeds each text once and gives the same vector after (same name, dim
    and fingerprint, so every store is bound to the same lineage); `save`/`load` hand the
    vectors to another process."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seen: dict[str, npt.NDArray[np.float32]] = {}
        #: The lineage of loaded vectors: another build's model may fingerprint differently.
        self.lineage: str | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def fingerprint(self) -> str:
        return self.lineage or self.inner.fingerprint

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

    def save(self, path: Path) -> None:
        texts = list(self.seen)
        np.save(path, np.stack([self.seen[t] for t in texts]).astype(np.float32))
        saved = {"name": self.name, "fingerprint": self.fingerprint, "texts": texts}
        path.with_suffix(".json").write_text(json.dumps(saved))

    def load(self, path: Path) -> bool:
        """Take the vectors saved at `path`, if they are this embedder's; True if taken."""
        saved = json.loads(path.with_suffix(".json").read_text())
        if saved["name"] != self.name:
            return False
        self.seen.update(zip(saved["texts"], np.load(path)))
        self.lineage = saved["fingerprint"]
        return True


def negatives(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(
            "".join(rng.choice("qwxy") + rng.choice("aeiou") for _ in range(3)) for _ in range(6)
        )
        for _ in range(count)
    ]


def median(xs: list[float]) -> float:
    return float(np.median(np.asarray(xs))) if xs else float("nan")


def shown(result: Any) -> list[list[str]]:
    return [[h.provenance.file, h.verdict] for h in result.hits]


def dense_top(mem: Any, vector: npt.NDArray[np.float32], text: str) -> list[int]:
    """The store's own dense leg for one query: its best 10 chunk ids."""
    policy = _core.Policy(
        now_us=0, threshold=0.5, scale=0.05, lexical_weight=0.15, identifier_weight=0.3
    )
    out = mem._store.search(
        vector.astype("<f4").tobytes(), text=text, k=10, candidates=CANDIDATES, policy=policy
    )
    return [int(c) for c, _ in out["dense"][:10]]


def worker(url: str, root: str, vectors: str, embedder_name: str) -> None:
    """The baseline's side: commands as JSON lines on stdin, answers on stdout."""
    embedder = Remembered(get_embedder(embedder_name))
    embedder.load(Path(vectors))
    mem: Any = None
    for line in sys.stdin:
        ask = json.loads(line)
        answer: dict[str, Any] = {}
        if "index" in ask:
            with recall.open(url, embedder=embedder) as m:
                t0 = time.perf_counter()
                report = m.index(root, calibrate=False)
                answer = {"seconds": time.perf_counter() - t0, "chunks": report.chunks}
        elif "calibration" in ask:
            with recall.open(url, embedder=embedder) as m:
                m.import_calibration(ask["calibration"])
        elif "open" in ask:
            mem = recall.open(url, embedder=embedder)
            t0 = time.perf_counter()
            mem.search(ask["open"])
            answer = {"ms": (time.perf_counter() - t0) * 1e3}
        elif "search" in ask:
            t0 = time.perf_counter()
            result = mem.search(ask["search"])
            answer = {"ms": (time.perf_counter() - t0) * 1e3, "shown": shown(result)}
        elif "dense" in ask:
            vector = np.asarray(ask["vector"], dtype=np.float32)
            answer = {"top": dense_top(mem, vector, ask["dense"])}
        print(json.dumps(answer), flush=True)


class Baseline:
    """The other build, in its own process (`worker`), asked one command at a time."""

    def __init__(self, python: str, url: str, root: Path, vectors: Path, name: str) -> None:
        self.proc = subprocess.Popen(
            [python, __file__, "--worker", url, str(root), str(vectors), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the baseline process ended; its error is above")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:6])
        return
    import pgserver  # type: ignore[import-untyped]
    from machine import cpu_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="hashing-512")
    ap.add_argument("--baseline", default=None, help="another build's Python, run beside this")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument(
        "--vectors",
        type=Path,
        default=None,
        help="a .npy file keeping the embedding pass: read when it holds this corpus's "
        "vectors for this embedder, written otherwise",
    )
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
            run(server.get_uri(), work, args)
        finally:
            server.cleanup()


def run(url: str, work: Path, args: argparse.Namespace) -> None:
    import psycopg
    from machine import p95
    from zipf_corpus import ZipfCorpus

    chunks, embedder_name = args.chunks, args.embedder
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
    kept = args.vectors
    if kept is not None and kept.exists() and embedder.load(kept):
        read = len(embedder.seen)
        with recall.open(work / "scratch.db", embedder=embedder) as mem:
            report = mem.index(root, calibrate=False)
        print(
            f"  embedding pass: {read:,} vectors read from {kept}, "
            f"{len(embedder.seen) - read:,} of {report.chunks:,} chunks' texts embedded now"
        )
    else:
        with recall.open(work / "scratch.db", embedder=embedder) as mem:
            t0 = time.perf_counter()
            report = mem.index(root, calibrate=False)
            embed_s = time.perf_counter() - t0
        print(
            f"  embedding pass (a first index run into a scratch file): {report.chunks:,} chunks "
            f"in {embed_s:.1f} s ({report.chunks / embed_s:,.0f} chunks/s)"
        )
        if kept is not None:
            embedder.save(kept)
    remembered = work / "vectors.npy"
    embedder.save(remembered)
    targets = {"sqlite": str(work / "store.db"), "postgres": f"{url}&namespace=bench"}
    base = None
    if args.baseline:
        base = Baseline(args.baseline, f"{url}&namespace=base", root, remembered, embedder_name)
    try:
        measure(corpus, embedder, targets, base, args, p95)
    finally:
        if base is not None:
            base.close()


# A fresh process that opens a store and searches it once: its resident memory after.
READER = r"""
import json, sys
import recall

with recall.open(sys.argv[1], embedder=sys.argv[2]) as mem:
    mem.search(sys.argv[3], mode="development")
    with open("/proc/self/status") as f:
        mb = next(int(l.split()[1]) / 1024 for l in f if l.startswith("VmRSS:"))
    print(json.dumps({"mb": mb}))
"""


def fresh_reader(target: str, embedder: str, query: str, python: str = sys.executable) -> float:
    """The resident MB of a new process of `python` after its first search of `target` (what a
    reader of a store holds: for PostgreSQL, the corpus and the chunks' codes and terms)."""
    from machine import child_json

    return float(child_json(python, READER, target, embedder, query)["mb"])


def settle(server: str) -> None:
    """Before an index run is timed: the runs before it written out, by the kernel and by the
    server (a checkpoint), so their writeback does not land on it."""
    import psycopg

    os.sync()
    with psycopg.connect(server, autocommit=True) as con:
        con.execute("CHECKPOINT")
    os.sync()


def measure(
    corpus: Any,
    embedder: Remembered,
    targets: dict[str, str],
    base: Baseline | None,
    args: argparse.Namespace,
    p95: Any,
) -> None:
    chunks, root = args.chunks, Path(targets["sqlite"]).parent / "notes"
    index_s: dict[str, float] = {}
    counted: dict[str, int] = {}
    server = targets["postgres"].partition("&namespace=")[0]
    for name, target in targets.items():
        settle(server)
        with recall.open(target, embedder=embedder) as mem:
            t0 = time.perf_counter()
            counted[name] = mem.index(root, calibrate=False).chunks
            index_s[name] = time.perf_counter() - t0
    if base is not None:
        settle(server)
        done = base.ask(index=True)
        index_s["baseline"], counted["baseline"] = done["seconds"], done["chunks"]
    for name, seconds in index_s.items():
        print(
            f"  index into {name:8} from the remembered vectors: {counted[name]:,} chunks in "
            f"{seconds:.1f} s ({counted[name] / seconds:,.0f} chunks/s)"
        )
    pairs = corpus.queries(LABELLED + args.queries + WARMUP, seed=chunks)
    labelled = [(q, True) for q, _ in pairs[:LABELLED]]
    labelled += [(q, False) for q in negatives(LABELLED, seed=chunks)]
    with recall.open(targets["sqlite"], embedder=embedder) as mem:
        _, fit = mem.calibrate(labelled)
        record = mem.export_calibration()
    if not fit.certified:
        raise SystemExit(f"the calibration is not certified ({fit.certified_reason})")
    with recall.open(targets["postgres"], embedder=embedder) as mem:
        mem.import_calibration(record)
    if base is not None:
        base.ask(calibration=record)
    queries = [q for q, _ in pairs[LABELLED:]]
    resident = {
        name: fresh_reader(target, args.embedder, queries[0]) for name, target in targets.items()
    }
    if base is not None:
        resident["postgres (baseline build)"] = fresh_reader(
            f"{server}&namespace=base", args.embedder, queries[0], args.baseline
        )
    for name, mb in resident.items():
        print(f"  a fresh process searching the {name} store once: {mb:,.0f} MB resident after")

    first: dict[str, float] = {}
    mems: dict[str, Any] = {}
    for name, target in targets.items():
        mems[name] = recall.open(target, embedder=embedder)
        t0 = time.perf_counter()
        mems[name].search(queries[0])
        first[name] = (time.perf_counter() - t0) * 1e3
    if base is not None:
        first["baseline"] = base.ask(open=queries[0])["ms"]
    names = [*mems, *(["baseline"] if base is not None else [])]
    times: dict[str, list[float]] = {name: [] for name in names}
    parts: dict[str, list[float]] = {p: [] for p in ("embed", "load", "dense", "lexical", "trust")}
    same = dict.fromkeys(names, 0)
    try:
        for q in queries[1:WARMUP]:
            for m in mems.values():
                m.search(q)
            if base is not None:
                base.ask(search=q)
        for q in queries[WARMUP:]:
            results: dict[str, list[list[str]]] = {}
            for name, m in mems.items():
                t0 = time.perf_counter()
                result = m.search(q)
                times[name].append((time.perf_counter() - t0) * 1e3)
                results[name] = shown(result)
                if name == "postgres":
                    for p in parts:
                        parts[p].append(result.timings_ms.get(p, 0.0))
            if base is not None:
                answer = base.ask(search=q)
                times["baseline"].append(answer["ms"])
                results["baseline"] = answer["shown"]
            for name in names:
                same[name] += results[name] == results["sqlite"]
        vectors = embedder.embed_query(queries[WARMUP:])
        tops = {
            "postgres": [
                dense_top(mems["postgres"], v, q) for v, q in zip(vectors, queries[WARMUP:])
            ]
        }
        if base is not None:
            tops["baseline"] = [
                base.ask(dense=q, vector=v.tolist())["top"]
                for v, q in zip(vectors, queries[WARMUP:])
            ]
    finally:
        for m in mems.values():
            m.close()
    found = recall_at_10(targets["postgres"], tops, vectors)
    timed = len(queries) - WARMUP
    label = {"sqlite": "file", "postgres": "PostgreSQL", "baseline": "PostgreSQL, baseline build"}
    print(f"  {timed} queries after {WARMUP} warm-up, interleaved, strict mode")
    print(
        f"  {'Memory.search':34} {'first ms':>9} {'p50 ms':>8} {'p95 ms':>8} {'same as file':>13}"
    )
    for name in names:
        print(
            f"    {label[name]:32} {first[name]:9.1f} {median(times[name]):8.3f} "
            f"{p95(times[name]):8.3f} {same[name]:>9}/{timed}"
        )
    print(
        "    PostgreSQL, p50 of each part: "
        + ", ".join(f"{p} {median(xs):.2f}" for p, xs in parts.items())
        + " (lexical: the BM25 order, and the lexicon's counts when they were not read with the"
        " state before the query was embedded; load: what a commit changed; trust: the rows,"
        " then judging)"
    )
    nonzero = float(np.mean(np.count_nonzero(vectors, axis=1)))
    for name, share in found.items():
        print(
            f"  dense leg recall@10 vs numpy's exact scan, {label[name]}: {share:.3f} over "
            f"{timed} queries (query vectors: {nonzero:.0f} of {vectors.shape[1]} components "
            "non-zero)"
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    pg, ms = "postgres", median
    print(
        f"summary: {chunks:,} chunks, {args.embedder}; index {index_s['sqlite']:.1f} s file, "
        f"{index_s[pg]:.1f} s PostgreSQL"
        + (f" ({index_s['baseline']:.1f} s baseline)" if base is not None else "")
        + f"; search p50 {ms(times['sqlite']):.2f} / {ms(times[pg]):.2f} ms"
        + (f" ({ms(times['baseline']):.2f} ms baseline)" if base is not None else "")
        + f"; recall@10 {found[pg]:.3f}"
        + (f" ({found['baseline']:.3f} baseline)" if base is not None else "")
        + f"; same hits {same[pg]}/{timed}"
    )


def recall_at_10(
    url: str, tops: dict[str, list[list[int]]], vectors: npt.NDArray[np.float32]
) -> dict[str, float]:
    """Each build's share of numpy's exact top 10 its dense leg found (ties with the exact
    10th counted), over the vectors read back from this build's namespace (both namespaces
    hold the same notes, so the same chunk has the same vector; ids are matched by text)."""
    import psycopg

    conninfo, _, _ = url.partition("&namespace=")
    with psycopg.connect(conninfo) as con:
        rows = con.execute(
            "SELECT c.id, d.path, c.ordinal, vector_send(c.embedding) FROM bench.chunks c"
            " JOIN bench.documents d ON d.id = c.doc_id"
        ).fetchall()
        key = {int(r[0]): (r[1], r[2]) for r in rows}
        if "baseline" in tops:
            for i, path, ordinal in con.execute(
                "SELECT c.id, d.path, c.ordinal FROM base.chunks c"
                " JOIN base.documents d ON d.id = c.doc_id"
            ).fetchall():
                key[-int(i)] = (path, ordinal)
    matrix = np.stack([np.frombuffer(bytes(r[3]), dtype=">f4", offset=4) for r in rows])
    matrix = matrix.astype(np.float32)
    row = {key[int(r[0])]: i for i, r in enumerate(rows)}
    found: dict[str, float] = {}
    for name, per_query in tops.items():
        sign = -1 if name == "baseline" else 1
        shares = []
        for v, got in zip(vectors, per_query):
            scores = matrix @ v.astype(np.float32)
            tenth = np.sort(scores)[-10]
            hit = [scores[row[key[sign * c]]] >= tenth - TIE for c in got if sign * c in key]
            shares.append(sum(hit) / 10)
        found[name] = float(np.mean(shares))
    return found


if __name__ == "__main__":
    main()
