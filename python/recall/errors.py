"""The exception hierarchy of recall.

Owns: every exception class a user can catch. The classes raised by the Rust core are created
there and re-exported here so there is one hierarchy rooted at `RecallError`. Does not own:
messages (they are written where the error is raised and say what to do next).
"""

from __future__ import annotations

from recall._core import EmbedderMismatchError, RecallError, StoreError, StoreLockedError

__all__ = [
    "EmbedderError",
    "EmbedderMismatchError",
    "FrontmatterError",
    "PruneRefusedError",
    "RecallError",
    "StoreError",
    "StoreLockedError",
    "UsageError",
]


class UsageError(RecallError):
    """A caller passed something recall cannot work with (a missing path, a bad option)."""


class FrontmatterError(RecallError):
    """A document's frontmatter cannot be accepted (SPEC §2.5)."""


class EmbedderError(RecallError):
    """An embedder is unknown, misconfigured or its model is missing."""


class PruneRefusedError(RecallError):
    """An index run would remove more than half of the known documents (SPEC §3)."""
