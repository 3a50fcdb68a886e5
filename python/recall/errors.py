"""The exception hierarchy of recall.

Owns: every exception class a user can catch. The classes raised by the Rust core are created
there and re-exported here so there is one hierarchy rooted at `RecallError`. Does not own:
messages (they are written where the error is raised and say what to do next).
"""

from __future__ import annotations

from recall._core import (
    EmbedderMismatchError,
    RecallError,
    StoreDamagedError,
    StoreError,
    StoreLockedError,
)

__all__ = [
    "EmbedderError",
    "EmbedderMismatchError",
    "FrontmatterError",
    "JudgeError",
    "PruneRefusedError",
    "RecallError",
    "StoreError",
    "StoreDamagedError",
    "StoreLockedError",
    "TrustRefusal",
    "UsageError",
]


class UsageError(RecallError):
    """A caller passed something recall cannot work with (a missing path, a bad option).

    The one rule of the Python API: a wrong type or value passed to `recall.open` or a `Memory`
    method raises this at the call, before anything is read or written, and the message names
    the parameter, what it accepts and what it got. (A missing or unknown argument is still
    Python's own `TypeError`.) The CLI exits 2 on it.
    """


class FrontmatterError(RecallError):
    """A document's frontmatter cannot be accepted (SPEC §2.5)."""


class EmbedderError(RecallError):
    """An embedder is unknown, misconfigured or its model is missing."""


class JudgeError(RecallError):
    """The entailment judge is not configured, its model is missing or will not run."""


class PruneRefusedError(RecallError):
    """An index run would remove more than half of the known documents (SPEC §3)."""


class TrustRefusal(RecallError):
    """Strict mode could not establish trust, so it answers nothing (SPEC §5.6).

    `code` is one of INDEX_NOT_READY, LINEAGE_MISMATCH, CALIBRATION_MISSING,
    CALIBRATION_UNCERTIFIED, CALIBRATION_STALE, DEPENDENCY_UNAVAILABLE.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
