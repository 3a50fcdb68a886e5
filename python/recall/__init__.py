"""recall: memory for agents that knows what it no longer believes.

A folder of markdown notes is indexed into one SQLite file. `recall.open(path)` gives a `Memory`.
"""

from __future__ import annotations

from recall.api import IndexReport, Memory, Skipped, StoreStats, open
from recall.calibration import Calibration
from recall.embedders import DEFAULT_EMBEDDER, Embedder, HashingEmbedder, get_embedder
from recall.errors import (
    EmbedderError,
    EmbedderMismatchError,
    FrontmatterError,
    JudgeError,
    PruneRefusedError,
    RecallError,
    StoreError,
    StoreLockedError,
    TrustRefusal,
    UsageError,
)
from recall.judge import Judge
from recall.results import Hit, Provenance, Result, Retrieval, Staleness, Validity

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_EMBEDDER",
    "Calibration",
    "Hit",
    "Provenance",
    "Result",
    "Retrieval",
    "Staleness",
    "TrustRefusal",
    "Validity",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "FrontmatterError",
    "HashingEmbedder",
    "IndexReport",
    "Judge",
    "JudgeError",
    "Memory",
    "PruneRefusedError",
    "RecallError",
    "Skipped",
    "StoreError",
    "StoreLockedError",
    "StoreStats",
    "UsageError",
    "get_embedder",
    "open",
]
