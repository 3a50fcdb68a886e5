"""Crash safety (SPEC §1, §11): a process killed with SIGKILL in the middle of an index run
leaves the last committed state readable, and the next run completes normally.

File store only: SQLite's journal. A PostgreSQL run is one server transaction, which the
server rolls back when its client dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import recall

from .conftest import write_corpus

INDEXER = textwrap.dedent(
    """
    import sys, recall
    def tick(done, total, chunks):
        print(done, total, flush=True)
    with recall.open(sys.argv[1]) as mem:
        mem.index(sys.argv[2], progress=tick)
    print("committed", flush=True)
    """
)


def _lexical_files(mem: recall.Memory, query: str) -> set[str]:
    """Files the lexical leg retrieved for `query` (development mode: no calibration needed)."""
    res = mem.search(query, k=10, mode="development")
    return {h.provenance.file for h in res.hits if h.retrieval and h.retrieval.lexical_rank}


def _big_corpus(root: Path, n: int) -> None:
    body = "\n\n".join(f"Paragraph {j} about topic {{i}} and its details." * 8 for j in range(6))
    write_corpus(
        root, {f"bulk/n{i:05d}.md": f"# Note {i}\n\n" + body.format(i=i) for i in range(n)}
    )


@pytest.mark.slow
def test_sigkill_mid_run_keeps_last_committed_state(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    corpus = tmp_path / "notes"
    write_corpus(corpus, {f"seed{i}.md": f"# Seed {i}\n\nseed text {i}\n" for i in range(5)})
    with recall.open(db) as mem:
        mem.index(corpus)
        committed = mem.stats()
    assert committed.documents == 5

    n = 3000
    _big_corpus(corpus, n)
    proc = subprocess.Popen(
        [sys.executable, "-c", INDEXER, str(db), str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    killed_at = 0
    for line in proc.stdout:
        done, _total = map(int, line.split())
        if done >= n // 3:  # well past the first embedding batches written into the open tx
            os.kill(proc.pid, signal.SIGKILL)
            killed_at = done
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    assert killed_at >= n // 3

    # The killed run's writes are gone; the previous commit is intact and readable, in both
    # legs: the lexical index knows the seed notes and nothing of the killed run.
    with recall.open(db) as mem:
        after = mem.stats()
        assert _lexical_files(mem, "seed") == {f"seed{i}.md" for i in range(5)}
        assert _lexical_files(mem, "paragraph topic details") == set()
    assert after.documents == committed.documents
    assert after.chunks == committed.chunks == after.vectors
    assert after.generation == committed.generation

    # And the store is fully usable: the next run commits everything.
    with recall.open(db) as mem:
        report = mem.index(corpus)
        final = mem.stats()
        assert _lexical_files(mem, "paragraph topic details"), "the lexical leg has the new notes"
    assert len(report.added) == n and report.unchanged == 5
    assert final.documents == n + 5 and final.chunks == final.vectors


def test_what_a_killed_run_left_beside_the_store_is_removed_by_the_next_run(
    tmp_path: Path,
) -> None:
    # A run killed outright leaves the large lexical files it was writing in `<store>-lexical`;
    # the next write removes them before it writes, and nothing of them reaches the store.
    db = tmp_path / "m.db"
    corpus = tmp_path / "notes"
    write_corpus(corpus, {"a.md": "# Alpha\n\nalpha text\n"})
    with recall.open(db) as mem:
        mem.index(corpus)
    left = tmp_path / "m.db-lexical"
    left.mkdir()
    (left / "0123456789abcdef0123456789abcdef.idx").write_bytes(b"\0" * 4096)
    write_corpus(corpus, {"b.md": "# Beta\n\nbeta words here\n"})
    with recall.open(db) as mem:
        report = mem.index(corpus)
        assert report.added == ["b.md"]
        assert _lexical_files(mem, "beta words") == {"b.md"}
        assert _lexical_files(mem, "alpha") == {"a.md"}
    assert not left.exists()


KILLED_WHILE_SPILLED = textwrap.dedent(
    """
    import sys, recall
    with recall.open(sys.argv[1], embedder="hashing-512") as mem:
        mem.index(sys.argv[2], calibrate=False)
    """
)


@pytest.mark.slow
def test_a_run_killed_while_its_lexical_files_wait_beside_the_store_loses_nothing(
    tmp_path: Path,
) -> None:
    # A large write keeps its lexical files beside the store until its commit holds them
    # (`<store>-lexical`); killed while they wait there, the store is as committed before, and
    # the next run removes them and commits everything.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
    from zipf_corpus import ZipfCorpus

    db = tmp_path / "m.db"
    seed, bulk = tmp_path / "seed", tmp_path / "bulk"
    write_corpus(seed, {f"seed{i}.md": f"# Seed {i}\n\nseed text {i}\n" for i in range(5)})
    notes = ZipfCorpus(20_000)
    notes.write(bulk)
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index(seed)
        committed = mem.stats()
    spill = tmp_path / "m.db-lexical"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WHILE_SPILLED, str(db), str(bulk)])
    waiting: list[Path] = []
    while proc.poll() is None and not waiting:
        waiting = list(spill.glob("*")) if spill.is_dir() else []
        time.sleep(0.005)
    if waiting:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=120)
    assert waiting, "the run ended before any of its lexical files waited beside the store"
    assert proc.returncode == -signal.SIGKILL

    with recall.open(db, embedder="hashing-512") as mem:
        after = mem.stats()
        assert _lexical_files(mem, "seed") == {f"seed{i}.md" for i in range(5)}
    assert (after.documents, after.chunks, after.generation) == (
        committed.documents,
        committed.chunks,
        committed.generation,
    )

    with recall.open(db, embedder="hashing-512") as mem:
        report = mem.index(bulk, calibrate=False)
        final = mem.stats()
        query, target = notes.queries(1)[0]
        assert notes.relpath(target) in _lexical_files(mem, query)
    assert not spill.exists()
    assert len(report.added) == 20_000
    assert final.documents == 20_005 and final.chunks == final.vectors
