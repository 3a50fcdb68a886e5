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
