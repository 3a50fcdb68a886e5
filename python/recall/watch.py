"""A live index that follows the notes (SPEC §8.3): `recall watch` and `recall serve --watch`.

Owns: watching the corpus roots (the `watchfiles` library, the OS's own notifications through
Rust `notify`), gathering changes into debounced batches, and running one incremental index run
per batch on a store handle of its own. Searches made through any other handle keep being
answered from the last committed generation while a batch is written (SQLite WAL), and see the
batch once it commits. Does not own: what an index run does (indexing.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recall.errors import RecallError, UsageError

if TYPE_CHECKING:
    from recall.indexing import IndexReport

__all__ = ["Batch", "watch"]

INSTALL_HINT = (
    "recall watch: file watching needs the watchfiles package; install it with: "
    "pip install 'recall-memory[mcp]' (or pip install watchfiles)"
)
#: Milliseconds of quiet after a change before the batch is indexed, and the polling step.
DEBOUNCE_MS = 150
STEP_MS = 50
#: How long the watcher waits for a change before it reports a quiet spell.
QUIET_MS = 200


@dataclass(frozen=True)
class Batch:
    """One batch: the files the OS reported changed, and what the index run made of them (or
    the error that stopped it; the next batch tries again)."""

    changed: int
    report: IndexReport | None
    error: str | None = None


def watch(
    db: str,
    roots: Sequence[str | os.PathLike[str]],
    *,
    on_batch: Callable[[Batch], None] | None = None,
    stop: threading.Event | None = None,
    ready: threading.Event | None = None,
) -> None:
    """Index `roots` into `db` now, then again after every batch of changes until `stop` is set.

    Each batch is one index run: one transaction, the same crash safety as `recall index`.
    `ready` is set once the first run has committed and the watch is live. A batch whose run
    fails (a lock held past the timeout, a prune that would remove most of the store) is
    reported through `on_batch` and the watch goes on.
    """
    try:
        import watchfiles
    except ImportError as err:
        raise UsageError(INSTALL_HINT) from err
    import recall
    from recall.walk import NOTE_SUFFIXES, SIDECAR_SUFFIXES

    folders = [os.fspath(r) for r in roots]
    for folder in folders:
        if not os.path.isdir(folder):
            raise UsageError(f"recall watch: {folder} is not a folder")
    # A note's metadata file (`kep.yaml`) declares for it: a change to one is a change too.
    suffixes = tuple(NOTE_SUFFIXES) + SIDECAR_SUFFIXES
    stop = stop or threading.Event()

    def notes_only(change: watchfiles.Change, path: str) -> bool:
        # A deleted or renamed folder reports its files one by one; anything else is noise.
        name = os.path.basename(path)
        return not name.startswith(".") and name.lower().endswith(suffixes)

    with recall.open(db) as writer:

        def run(changed: int) -> None:
            report: IndexReport | None = None
            error: str | None = None
            try:
                report = writer.index(folders)
            except RecallError as err:
                error = str(err)
            if on_batch is not None:
                on_batch(Batch(changed, report, error))

        # Index only once the OS is watching, so that no change falls between the first run
        # and the watch: the watcher yields an empty batch when it has started and is quiet.
        started = False
        for changes in watchfiles.watch(
            *folders,
            watch_filter=notes_only,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=QUIET_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            if not started:
                started = True
                run(len(changes))
                if ready is not None:
                    ready.set()
            elif changes:
                run(len(changes))
