"""Ctrl-C and SIGTERM stop `recall index` at once, once, with one line, and leave the store as
it was; a second Ctrl-C never aborts the process (`recall.interrupts`)."""

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

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _notes(root: Path, n: int, start: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        (root / f"note-{i:05d}.md").write_text(
            f"# Note {i}\n\nReplica {i} of the billing service fails over to region {i % 7} "
            f"when the primary misses three heartbeats; the runbook names owner {i % 13}.\n",
            encoding="utf-8",
        )
    return root


def _default_sigint() -> None:
    # A background job starts with SIGINT ignored; these runs stand for a terminal's.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
        env={**os.environ, "RECALL_EMBEDDER": "hashing-512", **(env or {})},
    )


def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    """Until the run writes (its write-ahead log appears) or the process ends."""
    deadline = time.monotonic() + 60
    while not path.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert process.poll() is None, "the run ended before it could be interrupted"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small folder indexed first, and a large one whose run is interrupted."""
    root = tmp_path_factory.mktemp("interrupt")
    return _notes(root / "small", 20), _notes(root / "large", 6000, start=100)


def _indexed(db: Path, small: Path) -> tuple[int, int]:
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index(small)
        stats = mem.stats()
    return stats.documents, stats.generation


@pytest.mark.parametrize(
    ("signals", "code", "said"),
    [
        ([signal.SIGINT], 130, "stopped by Ctrl-C"),
        ([signal.SIGTERM], 143, "stopped by SIGTERM"),
        ([signal.SIGINT, signal.SIGINT, signal.SIGINT], 130, "stopped by Ctrl-C"),
        # Both may be pending when the handlers run (they then run in signal-number order).
        ([signal.SIGTERM, signal.SIGINT], None, None),
    ],
    ids=["sigint", "sigterm", "sigint-thrice", "sigterm-then-sigint"],
)
def test_an_interrupted_index_stops_with_one_line_and_leaves_the_store_as_it_was(
    tmp_path: Path,
    corpus: tuple[Path, Path],
    signals: list[int],
    code: int | None,
    said: str | None,
) -> None:
    small, large = corpus
    db = tmp_path / "m.db"
    before = _indexed(db, small)
    run = _start([sys.executable, "-m", "recall.cli", "index", str(large), "--db", str(db)])
    _wait_for(Path(f"{db}-wal"), run)
    for signum in signals:
        run.send_signal(signum)
        time.sleep(0.01)
    out, err = run.communicate(timeout=60)
    if code is None:  # either signal may win, and the message says which
        code = run.returncode
        said = {130: "stopped by Ctrl-C", 143: "stopped by SIGTERM"}.get(code, "?")
    assert run.returncode == code, (run.returncode, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert said is not None and len(lines) == 1, err
    assert said in lines[0] and str(db) in lines[0], err
    assert "Traceback" not in err and "terminate called" not in err
    assert out == ""
    with recall.open(db, read_only=True) as mem:
        stats = mem.stats()
    assert (stats.documents, stats.generation) == before
    # The same command again indexes everything.
    again = subprocess.run(
        [sys.executable, "-m", "recall.cli", "index", str(large), "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "RECALL_EMBEDDER": "hashing-512"},
        check=False,
    )
    assert again.returncode == 0, again.stderr
    with recall.open(db, read_only=True) as mem:
        assert mem.stats().documents == before[0] + 6000


_SLOW_EMBEDDER = textwrap.dedent(
    """
    import sys, time
    import recall
    from recall.embedders import HashingEmbedder
    from recall.interrupts import Interrupted, exit_stopped, stoppable

    class Slow(HashingEmbedder):
        # Every batch after the first takes a minute, as a large model on a busy machine
        # does; time.sleep releases the GIL as onnxruntime does.
        calls = 0

        def embed(self, texts):
            Slow.calls += 1
            if Slow.calls > 1:
                print("embedding", flush=True)
                time.sleep(60)
            return super().embed(texts)

    started = time.monotonic()
    try:
        with stoppable(), recall.open(sys.argv[1], embedder=Slow(512)) as mem:
            mem.index(sys.argv[2])
    except Interrupted as stop:
        exit_stopped(stop, f"stopped after {time.monotonic() - started:.1f} s")
    print("finished", flush=True)
    """
)


def test_the_run_does_not_wait_for_the_batch_being_embedded(
    tmp_path: Path, corpus: tuple[Path, Path]
) -> None:
    _, large = corpus
    script = tmp_path / "slow.py"
    script.write_text(_SLOW_EMBEDDER, encoding="utf-8")
    run = _start([sys.executable, str(script), str(tmp_path / "m.db"), str(large)])
    assert run.stdout is not None
    assert run.stdout.readline().strip() == "embedding"  # the worker is inside the embedder
    signalled = time.monotonic()
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=50)
    # Well under the minute the embedder still had to go: the batch was not waited for.
    assert run.returncode == 130, err
    assert time.monotonic() - signalled < 30
    assert err.startswith("stopped after"), err
    assert not (tmp_path / "m.db").exists()  # a store this run would have made is not left


class _SwallowsItsStop:
    """Runs the installed SIGTERM handler from `__del__`, where Python only reports (never
    propagates) an exception: the way a signal landing in an import's weakref callback goes."""

    def __del__(self) -> None:
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler)
        handler(signal.SIGTERM, None)


def test_a_stop_swallowed_by_a_callback_still_keeps_the_run_out_and_says_nothing(
    tmp_path: Path, corpus: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from recall.interrupts import Interrupted, stoppable

    small, _ = corpus
    db = tmp_path / "m.db"
    before = _indexed(db, small)
    more = _notes(tmp_path / "more", 5, start=9000)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with (
            pytest.raises(Interrupted) as stop,
            stoppable(),
            recall.open(db, embedder="hashing-512") as mem,
        ):
            _SwallowsItsStop()  # dropped at once: the handler's raise is swallowed
            mem.index([small, more])
        # Later ones are ignored: every signal the block took over keeps its quiet handler (a
        # SIGINT ignored from the start, as in a background job, is left alone).
        taken = {s: h for s, h in handlers.items() if h is not signal.SIG_IGN}
        assert taken and all(signal.getsignal(s) != h for s, h in taken.items())
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert stop.value.exit_code == 143
    assert capsys.readouterr().err == ""  # no "Exception ignored" traceback
    assert _indexed_again(db) == before  # the run did not commit


def test_a_swallowed_stop_is_raised_at_the_end_of_the_block_when_nothing_runs_after_it() -> None:
    from recall.interrupts import Interrupted, raise_if_stopped, stoppable

    hook = sys.unraisablehook
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(Interrupted), stoppable():
            _SwallowsItsStop()
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    raise_if_stopped()  # the block's stop ends with the block
    assert sys.unraisablehook is hook


def _indexed_again(db: Path) -> tuple[int, int]:
    with recall.open(db, embedder="hashing-512") as mem:
        stats = mem.stats()
    return stats.documents, stats.generation
