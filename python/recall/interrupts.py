"""Stopping a long command on Ctrl-C or SIGTERM: at once, once, with one line.

Owns: the handlers a long command (`recall index`) holds while it runs. The first SIGINT or
SIGTERM raises `Interrupted` in the main thread (the index run rolls back without waiting for
the batch being embedded) and every later one is ignored, so a second Ctrl-C never cuts the
clean-up short; `exit_stopped` then prints the one line and ends the process without waiting
for a worker thread still inside the embedder (its work belonged to the rolled-back run). Does
not own: what an interrupted run keeps (`recall.indexing`). A SIGINT the process was started
ignoring (a background job) stays ignored.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

__all__ = ["Interrupted", "exit_stopped", "raise_if_stopped", "stoppable"]

#: The stop a `stoppable` block received, kept until the block ends.
_stop: Interrupted | None = None


class Interrupted(KeyboardInterrupt):
    """The first SIGINT or SIGTERM while a `stoppable` block ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The shell's code for death by this signal: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum

    @property
    def name(self) -> str:
        return "Ctrl-C" if self.signum == signal.SIGINT else signal.Signals(self.signum).name


@contextmanager
def stoppable() -> Iterator[None]:
    """Within the block, the first SIGINT or SIGTERM raises `Interrupted`; later ones do
    nothing until the process ends. Outside the main thread it changes nothing."""
    global _stop
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signums = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signums.append(signal.SIGINT)
    before = {s: signal.getsignal(s) for s in signums}
    stopped = False

    def handler(signum: int, _frame: object) -> None:
        global _stop
        nonlocal stopped
        stopped = True
        _stop = Interrupted(signum)
        # Later signals run a handler that does nothing (not SIG_IGN: one already pending when
        # this runs would be reported as "ignored due to race condition").
        for s in signums:
            signal.signal(s, _ignore)
        raise Interrupted(signum)

    hook = sys.unraisablehook

    def unraisable(seen: Any) -> None:
        # A swallowed stop is raised again later: its traceback would only break the one line.
        if not isinstance(seen.exc_value, Interrupted):
            hook(seen)

    for s in signums:
        signal.signal(s, handler)
    sys.unraisablehook = unraisable
    try:
        yield
        raise_if_stopped()  # the block ended as if no signal had come: its stop was swallowed
    finally:
        _stop = None
        sys.unraisablehook = hook
        if not stopped:
            for s, previous in before.items():
                signal.signal(s, previous)


def raise_if_stopped() -> None:
    """Raise again the stop a `stoppable` block received, in case its first raise was
    swallowed; nothing when no stop came."""
    if _stop is not None:
        raise Interrupted(_stop.signum)


def _ignore(_signum: int, _frame: object) -> None:
    """A signal after the first: the stop is under way."""


def exit_stopped(stop: Interrupted, message: str) -> NoReturn:
    """Print `message` on stderr and end the process now with the signal's exit code."""
    sys.stdout.flush()
    print(message, file=sys.stderr)
    sys.stderr.flush()
    os._exit(stop.exit_code)
