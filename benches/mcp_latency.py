"""The MCP `search` tool's round trip over stdio and over streamable HTTP, warm, on a ~10k-chunk
store (SPEC §10, §8.3).

`recall serve --db DB` (strict mode, on a calibrated store) runs as a subprocess driven by the
MCP SDK's own stdio client; each figure is one `call_tool("search", {"query": Q, "k": 5})`
timed in the client, from the request written to the result parsed (JSON-RPC framing, both
processes' event loops, the server's worker thread, `Memory.search`, `Result.to_dict` and the
JSON text). Beside it, on the same store, `recall serve --http --port 0 --db DB` runs as a
second subprocess driven by the SDK's streamable HTTP client (one keep-alive connection, the
bearer token checked on each request); the same queries go to both servers in turns, and the
HTTP round trip is printed beside the stdio one with their ratio at p50 and p95. The baseline,
in the same run and interleaved query by query on the same store and queries:
`Memory.search(Q, k=5, mode="strict")` in this process. Also printed: the overhead (round trip
minus in-process, at p50), what encoding the result costs in process (`to_dict` +
`json.dumps`), and the servers' start-up: spawn to `initialize` answered (stdio), to the first
search answered, and spawn to listening (HTTP).

The store: `ZipfCorpus` notes sized to about N chunks (1.6 chunks per note), `hashing-512`,
calibrated from labelled queries (answerable: 6 of one note's rarer words; unanswerable: words
the vocabulary never holds) so that strict mode answers. Each response is checked: not an
error, strict mode, and at least one hit.

The server runs with `--corpus NOTES --watch`, so it also follows the notes: after the search
timings, notes are written one by one into the corpus, each with a word no other note holds,
and the client searches for that word until the note is among the hits: the watch latency,
from the file written to the first search that finds it.

Targets: warm search round trip p50 <= 5 ms; watch latency <= 1 s.

Usage: python benches/mcp_latency.py [--chunks 10000] [--queries 300]
"""

from __future__ import annotations

import os

# One BLAS thread, as in search_latency.py: a second one spinning slows everything on 2 cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncIterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
import anyio.to_thread  # noqa: E402
from machine import cpu_model  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from search_latency import negatives  # noqa: E402
from zipf_corpus import ZipfCorpus  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import recall  # noqa: E402
from tests.mcp_http_session import bearer_session  # noqa: E402

EMBEDDER = "hashing-512"
K = 5
WARMUP = 20
LABELLED = 40  # calibration queries per class
TARGET_P50_MS = 5.0
TARGET_WATCH_MS = 1000.0
WATCH_NOTES = 20  # notes written one by one for the watch latency
WATCH_GIVE_UP_S = 10.0


def pct(xs: list[float], p: float) -> float:
    """The p-th percentile, nearest rank."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def build(workdir: Path, chunks: int, n_queries: int) -> tuple[Path, Path, list[str], str]:
    """A calibrated store of about `chunks` chunks; (db, queries, a line describing it)."""
    corpus = ZipfCorpus(ZipfCorpus(1000).notes_for(chunks))
    root, db = workdir / "notes", workdir / "store.db"
    corpus.write(root)
    t0 = time.perf_counter()
    with recall.open(db, embedder=EMBEDDER) as mem:
        report = mem.index(root, calibrate=False)
        index_s = time.perf_counter() - t0
        if not report.ok:
            raise SystemExit(f"indexing refused files: {report.refused[:3]}")
        pairs = corpus.queries(LABELLED + WARMUP + n_queries, seed=chunks)
        labelled = [(q, True) for q, _ in pairs[:LABELLED]]
        labelled += [(q, False) for q in negatives(LABELLED, seed=chunks)]
        calibration, fit = mem.calibrate(labelled)
        stored = mem.stats().chunks
    if not fit.certified:
        raise SystemExit(f"the calibration is not certified ({fit.certified_reason})")
    line = (
        f"store: {corpus.n:,} notes, {stored:,} chunks, {EMBEDDER}, indexed in {index_s:.1f} s; "
        f"calibration {calibration.id} certified"
    )
    return db, root, [q for q, _ in pairs[LABELLED:]], line


def checked(result: Any) -> dict[str, Any]:
    """The search payload of a tool result; exits unless it is a strict answer with hits."""
    if result.is_error:
        text = result.content[0].text if result.content else "(no text)"
        raise SystemExit(f"the search tool answered an error: {text}")
    payload: dict[str, Any] | None = result.structured_content
    if payload is None or payload.get("mode") != "strict" or not payload.get("hits"):
        raise SystemExit(f"the search tool answered no strict hits: {str(payload)[:300]}")
    return payload


@contextlib.asynccontextmanager
async def http_session(
    db: Path, env: dict[str, str], errlog: Any, out: dict[str, Any]
) -> AsyncIterator[ClientSession]:
    """`recall serve --http --port 0` on `db` (its token in a file beside the store), and an
    initialised SDK session on it; `out["http_listen_ms"]`: spawn to listening."""
    token_file = db.parent / "serve-token"
    t0 = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "recall.cli", "serve", "--http", "--port", "0", "--db", str(db)]
        + ["--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=errlog,
        text=True,
        env=env,
        cwd=str(db.parent),
    )
    try:
        assert server.stdout is not None
        url = None
        while url is None:
            line = await anyio.to_thread.run_sync(server.stdout.readline)
            if not line:
                raise SystemExit("recall serve --http exited before listening; see its log")
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].split()[0]
        out["http_listen_ms"] = (time.perf_counter() - t0) * 1e3
        token = token_file.read_text(encoding="ascii").strip()
        async with bearer_session(url, token) as session:
            yield session
    finally:
        server.terminate()
        if server.wait(timeout=30) != 0:
            raise SystemExit(f"recall serve --http exited with {server.returncode}")


async def measure(db: Path, root: Path, queries: list[str], log: Path) -> dict[str, Any]:
    """Start the servers, time the round trips (stdio, HTTP) and the in-process searches in
    turns, then the watch latency of notes written into the corpus."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALL_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "recall.cli", "serve", "--db", str(db), "--corpus", str(root), "--watch"],
        env=env,
        cwd=str(db.parent),
    )
    out: dict[str, Any] = {
        "rt": [],
        "http": [],
        "local": [],
        "encode": [],
        "ok_hits": 0,
        "watch": [],
    }
    mem = recall.open(db)
    try:
        with open(log, "w") as errlog:
            t0 = time.perf_counter()
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                t1 = time.perf_counter()
                checked(await session.call_tool("search", {"query": queries[0], "k": K}))
                t2 = time.perf_counter()
                out["init_ms"], out["first_ms"] = (t1 - t0) * 1e3, (t2 - t0) * 1e3
                async with http_session(db, env, errlog, out) as over_http:
                    for q in queries[:WARMUP]:
                        checked(await session.call_tool("search", {"query": q, "k": K}))
                        checked(await over_http.call_tool("search", {"query": q, "k": K}))
                        mem.search(q, k=K, mode="strict")
                    # Interleaved, so drift on a noisy machine falls on all three alike.
                    for q in queries[WARMUP:]:
                        t0 = time.perf_counter()
                        res = await session.call_tool("search", {"query": q, "k": K})
                        t1 = time.perf_counter()
                        local = mem.search(q, k=K, mode="strict")
                        t2 = time.perf_counter()
                        json.dumps(local.to_dict(), ensure_ascii=False)
                        t3 = time.perf_counter()
                        res_http = await over_http.call_tool("search", {"query": q, "k": K})
                        t4 = time.perf_counter()
                        payload, payload_http = checked(res), checked(res_http)
                        if not len(payload["hits"]) == len(payload_http["hits"]) == len(local.hits):
                            raise SystemExit(f"the servers and the store disagree on {q!r}")
                        out["rt"].append((t1 - t0) * 1e3)
                        out["local"].append((t2 - t1) * 1e3)
                        out["encode"].append((t3 - t2) * 1e3)
                        out["http"].append((t4 - t3) * 1e3)
                        out["ok_hits"] += any(h["verdict"] == "ok" for h in payload["hits"])
                for j in range(WATCH_NOTES):
                    word = f"qxwatch{j}zq"
                    name = f"watch-{j}.md"
                    t0 = time.perf_counter()
                    (root / name).write_text(f"# Watched {j}\n\n{word} arrives.\n", "utf-8")
                    while time.perf_counter() - t0 < WATCH_GIVE_UP_S:
                        res = await session.call_tool("search", {"query": word, "k": K})
                        hits = (res.structured_content or {}).get("hits", [])
                        if any(h["provenance"]["file"] == name for h in hits):
                            out["watch"].append((time.perf_counter() - t0) * 1e3)
                            break
                    else:
                        raise SystemExit(f"{name} was not searchable after {WATCH_GIVE_UP_S} s")
    finally:
        mem.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--workdir", type=Path, default=None, help="where the temp files go")
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="recall-mcp-", dir=args.workdir) as tmp:
        db, root, queries, line = build(Path(tmp), args.chunks, args.queries)
        print(line)
        print(
            "command: python -m recall.cli serve --db DB --corpus NOTES --watch (strict mode), "
            "MCP SDK stdio client; beside it python -m recall.cli serve --http --port 0 --db DB, "
            "MCP SDK streamable HTTP client"
        )
        res = anyio.run(measure, db, root, queries, Path(tmp) / "server.log")
    rt, local, encode, http = res["rt"], res["local"], res["encode"], res["http"]
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(
        f"server start-up: spawn to initialize answered {res['init_ms']:.0f} ms; "
        f"to the first search answered {res['first_ms']:.0f} ms; "
        f"--http spawn to listening {res['http_listen_ms']:.0f} ms"
    )
    print(
        f"{len(rt)} searches (k = {K}) after {WARMUP} warm-up, in turns; "
        f"{res['ok_hits']} with an ok hit; every response strict with hits"
    )
    print(f"  {'':44} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"  {'search tool round trip over stdio':44} {pct(rt, 50):8.3f} {pct(rt, 95):8.3f}")
    print(
        f"  {'search tool round trip over HTTP (--http)':44} "
        f"{pct(http, 50):8.3f} {pct(http, 95):8.3f}"
    )
    print(
        f"  {'baseline: Memory.search in process':44} {pct(local, 50):8.3f} {pct(local, 95):8.3f}"
    )
    print(
        f"  {'  encoding the Result (to_dict + json.dumps)':44} "
        f"{pct(encode, 50):8.3f} {pct(encode, 95):8.3f}"
    )
    overhead = pct(rt, 50) - pct(local, 50)
    print(
        f"  overhead of the MCP round trip at p50: {overhead:.3f} ms "
        f"({pct(rt, 50) / pct(local, 50):.1f}x the in-process search; "
        f"mean {statistics.fmean(rt) - statistics.fmean(local):.3f} ms)"
    )
    print(
        f"  HTTP / stdio: {pct(http, 50) / pct(rt, 50):.2f}x at p50, "
        f"{pct(http, 95) / pct(rt, 95):.2f}x at p95 "
        f"(+{pct(http, 50) - pct(rt, 50):.3f} ms at p50)"
    )
    watch = res["watch"]
    print(
        f"watch latency, note written to found by search ({len(watch)} notes): median "
        f"{statistics.median(watch):.0f} ms, max {max(watch):.0f} ms"
    )
    verdict = "MET" if pct(rt, 50) <= TARGET_P50_MS else "NOT MET"
    print(f"target: warm search round trip p50 <= {TARGET_P50_MS:g} ms: {verdict}")
    verdict = "MET" if max(watch) <= TARGET_WATCH_MS else "NOT MET"
    print(f"target: watch latency <= {TARGET_WATCH_MS:g} ms for every note: {verdict}")


if __name__ == "__main__":
    main()
