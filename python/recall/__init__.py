"""recall: memory for agents that knows what it no longer believes.

A folder of markdown notes is indexed into one SQLite file. `recall.open(path)` gives a `Memory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# SPEC §10 (cold search): `import recall` imports nothing else. Each exported name is imported
# from its module on first access, so a submodule (`recall.store`, `recall.errors`) brings only
# what it needs and `import recall` leaves out what a search does not use.
if TYPE_CHECKING:
    from recall.api import Memory, StoreStats, open
    from recall.calibration import Calibration, CalibrationEntry
    from recall.embedders import DEFAULT_EMBEDDER, Embedder, HashingEmbedder, get_embedder
    from recall.errors import (
        EmbedderError,
        EmbedderMismatchError,
        FrontmatterError,
        JudgeError,
        PruneRefusedError,
        RecallError,
        StoreDamagedError,
        StoreError,
        StoreLockedError,
        TrustRefusal,
        UsageError,
    )
    from recall.indexing import IndexReport, Skipped
    from recall.judge import Judge
    from recall.results import (
        Hit,
        Provenance,
        Result,
        Retired,
        Retrieval,
        Staleness,
        Unread,
        Validity,
    )

__version__ = "0.1.0"

_DEFERRED = {
    **dict.fromkeys(("Memory", "StoreStats", "open"), "recall.api"),
    **dict.fromkeys(("Calibration", "CalibrationEntry"), "recall.calibration"),
    **dict.fromkeys(
        ("DEFAULT_EMBEDDER", "Embedder", "HashingEmbedder", "get_embedder"), "recall.embedders"
    ),
    **dict.fromkeys(
        (
            "EmbedderError",
            "EmbedderMismatchError",
            "FrontmatterError",
            "JudgeError",
            "PruneRefusedError",
            "RecallError",
            "StoreDamagedError",
            "StoreError",
            "StoreLockedError",
            "TrustRefusal",
            "UsageError",
        ),
        "recall.errors",
    ),
    **dict.fromkeys(("IndexReport", "Skipped"), "recall.indexing"),
    "Judge": "recall.judge",
    **dict.fromkeys(
        (
            "Hit",
            "Provenance",
            "Result",
            "Retired",
            "Retrieval",
            "Staleness",
            "Unread",
            "Validity",
        ),
        "recall.results",
    ),
}
_SUBMODULES = frozenset(
    {
        "api",
        "calibration",
        "chunking",
        "demo",
        "embedders",
        "errors",
        "evaluation",
        "frontmatter",
        "indexing",
        "instants",
        "judge",
        "model_tools",
        "models",
        "results",
    }
)

__all__ = [
    "DEFAULT_EMBEDDER",
    "Calibration",
    "CalibrationEntry",
    "Hit",
    "Provenance",
    "Result",
    "Retired",
    "Unread",
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
    "StoreDamagedError",
    "StoreLockedError",
    "StoreStats",
    "UsageError",
    "get_embedder",
    "open",
]


def __getattr__(name: str) -> Any:
    import importlib

    if name in _DEFERRED:
        value = getattr(importlib.import_module(_DEFERRED[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        # As if `import recall.<name>` had run, which `import recall` once did for these.
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_DEFERRED, *_SUBMODULES})
