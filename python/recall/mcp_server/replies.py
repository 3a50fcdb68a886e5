"""What a tool call returns: a `Reply`, and every failure turned into one with a code.

Owns: `Reply` (the JSON-ready payload, whether it is an error, the text a client shows), the
error codes (a `TrustRefusal`'s own, else one per `RecallError` class, `INTERNAL_ERROR` for
anything else, printed with its traceback on stderr) and what an agent should do next per code
(SPEC §5.6), worded for a server with or without the index tool. A call never raises, so the
server keeps serving. Does not own: the refusals themselves (`recall.refusals`, the Rust core)
or how the codes are described to a model (`specs`).
"""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass
from typing import Any

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

__all__ = ["NEXT_STEP", "Reply", "failed"]

#: SPEC §5.6: what an agent should do next, per refusal code.
NEXT_STEP = {
    "INDEX_NOT_READY": "call the index tool, then search again",
    "LINEAGE_MISMATCH": (
        "the store was built with another embedder; its owner must re-index it. Do not act on "
        "remembered facts until then"
    ),
    "CALIBRATION_MISSING": (
        "call the index tool where it is offered (an index run calibrates the store from its "
        "notes once their titles and headings make 20 answerable questions; a smaller memory "
        "stays uncalibrated until it grows); otherwise the store's owner must run 'recall "
        "calibrate --auto' or label questions. Until then memory cannot be trusted: do not act "
        "on remembered facts"
    ),
    "CALIBRATION_UNCERTIFIED": (
        "the store's owner must certify a calibration ('recall calibrate QUERIES' with at "
        "least 20 answerable and 20 unanswerable questions). Do not act on remembered facts and "
        "do not retry"
    ),
    "CALIBRATION_STALE": (
        "much of the memory changed since calibration; call the index tool where it is offered "
        "(it refits a calibration made from the notes), otherwise its owner must calibrate "
        "again. Do not act on remembered facts until then"
    ),
    "DEPENDENCY_UNAVAILABLE": "search again without entail",
    "INVALID_ARGUMENT": "fix the arguments as the message says and call again",
    "PRUNE_REFUSED": (
        "many notes are missing on disk; ask the user to check the corpus (the owner can run "
        "'recall index --allow-prune')"
    ),
    "STORE_LOCKED": "another process is writing the store; call again shortly",
}


def _error_code(err: BaseException) -> str:
    if isinstance(err, TrustRefusal):
        return err.code
    # Subclasses before the classes they derive from.
    table: tuple[tuple[type[BaseException], str], ...] = (
        (UsageError, "INVALID_ARGUMENT"),
        (PruneRefusedError, "PRUNE_REFUSED"),
        (StoreLockedError, "STORE_LOCKED"),
        (StoreError, "STORE_ERROR"),
        (EmbedderMismatchError, "LINEAGE_MISMATCH"),
        (EmbedderError, "EMBEDDER_ERROR"),
        (JudgeError, "DEPENDENCY_UNAVAILABLE"),
        (FrontmatterError, "FRONTMATTER_ERROR"),
        (RecallError, "RECALL_ERROR"),
    )
    return next((code for cls, code in table if isinstance(err, cls)), "INTERNAL_ERROR")


@dataclass(frozen=True)
class Reply:
    """One tool call's outcome: the JSON-ready payload and whether it is an error."""

    data: dict[str, Any]
    is_error: bool = False

    @property
    def text(self) -> str:
        if self.is_error:
            error = self.data["error"]
            shown = (
                f"recall {error['tool']} refused ({error['code']}): {error['message']}"
                if error["refused"]
                else f"{error['code']}: {error['message']}"
            )
            return shown + (f"\nNext: {error['next']}" if error.get("next") else "")
        return json.dumps(self.data, ensure_ascii=False)


def failed(tool: str, err: Exception, *, indexes: bool) -> Reply:
    """`err`, raised by a call of `tool`, as an error `Reply` with its code and next step;
    `indexes` says whether this server offers the index tool (it was given a corpus)."""
    code = _error_code(err)
    if code == "INTERNAL_ERROR":
        traceback.print_exc(file=sys.stderr)
    message = err.message if isinstance(err, TrustRefusal) else str(err)
    if code == "INTERNAL_ERROR":
        message = f"unexpected {type(err).__name__}: {err}"
    error = {
        "tool": tool,
        "code": code,
        "refused": isinstance(err, TrustRefusal),
        "message": message,
        "next": _next_step(code, indexes),
    }
    return Reply({"error": error}, is_error=True)


def _next_step(code: str, indexes: bool) -> str | None:
    """What the agent should do next; without --corpus there is no index tool to call."""
    if code == "INDEX_NOT_READY" and not indexes:
        return (
            "this server indexes nothing (it was started without --corpus); the store's "
            "owner must run 'recall index PATH'. Do not act on remembered facts until then"
        )
    if code in ("CALIBRATION_MISSING", "CALIBRATION_STALE") and not indexes:
        return (
            "the store's owner must run 'recall index PATH' or 'recall calibrate --auto'. "
            "Do not act on remembered facts until then"
        )
    return NEXT_STEP.get(code)
